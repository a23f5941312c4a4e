"""`seedr report` renders tables and plots from run folders alone."""

import json

import pytest
from typer.testing import CliRunner

from seedr.cli import app
from seedr.reporting.report import load_run, render_report


def _run_folder(root, name, losses, ndcg):
    folder = root / name
    folder.mkdir()
    (folder / "config.yaml").write_text("train:\n  seed: 7\n")
    (folder / "run.json").write_text(json.dumps({"seed": 7, "versions": {"seedr": "0.1.0"}, "started": "now"}))
    with open(folder / "metrics.jsonl", "w") as stream:
        for step, loss in enumerate(losses, start=1):
            stream.write(json.dumps({"step": step, "loss": loss, "mlm": loss * 0.6, "lr": 1e-4}) + "\n")
    (folder / "eval-scifact.json").write_text(json.dumps({"nDCG@10": ndcg, "R@100": 0.9}))
    return folder


def test_report_tables_and_plots(tmp_path):
    a = _run_folder(tmp_path, "mlm", [3.0, 2.5, 2.0], 0.61)
    b = _run_folder(tmp_path, "seed", [3.1, 2.4, 1.9], 0.64)
    target = render_report([a, b], tmp_path / "report")
    text = target.read_text()
    assert "| mlm | 0.9000 | 0.6100 |" in text and "| seed | 0.9000 | 0.6400 |" in text
    plots = sorted(p.name for p in (tmp_path / "report" / "plots").iterdir())
    assert plots == ["loss.png", "lr.png", "mlm.png"]
    assert load_run(a).history[-1]["loss"] == pytest.approx(2.0)


def test_report_cli_bad_folder(tmp_path):
    result = CliRunner().invoke(app, ["report", str(tmp_path / "missing"), "--out", str(tmp_path / "r")])
    assert result.exit_code == 1
    assert "not a run folder" in result.output
    assert not (tmp_path / "r" / "report.md").exists()
