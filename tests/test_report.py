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


def test_report_html_is_self_contained(tmp_path):
    """`seedr report` writes report.html beside report.md: the same tables, every plot embedded as a
    data URI, no reference to any other file — it opens alone, e.g. mailed or moved."""
    from html.parser import HTMLParser

    a = _run_folder(tmp_path, "mlm", [3.0, 2.5, 2.0], 0.61)
    b = _run_folder(tmp_path, "seed", [3.1, 2.4, 1.9], 0.64)
    result = CliRunner().invoke(app, ["report", str(a), str(b), "--out", str(tmp_path / "report"),
                                      "--title", "MLM <vs> SEED"])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "report" / "report.html").read_text()

    class References(HTMLParser):
        def __init__(self):
            super().__init__()
            self.references, self.cells, self.images = [], [], 0

        def handle_starttag(self, tag, attrs):
            for name, value in attrs:
                if name in ("src", "href", "srcset", "data") and not value.startswith(("data:", "#")):
                    self.references.append(value)
            self.images += tag == "img"

        def handle_data(self, data):
            self.cells.append(data.strip())

    parser = References()
    parser.feed(page)
    assert parser.references == [] and "<link" not in page and "@import" not in page and "url(" not in page
    assert parser.images == 3  # loss, lr, mlm curves
    assert page.count('src="data:image/png;base64,') == 3
    assert "0.6100" in parser.cells and "<table>" in page
    assert "<title>MLM &lt;vs&gt; SEED</title>" in page  # the title is escaped

    (tmp_path / "report" / "plots" / "loss.png").unlink()  # the HTML does not depend on the files
    assert (tmp_path / "report" / "report.html").read_text() == page
