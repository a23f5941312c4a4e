"""The main job (`seedr demo`) end to end on the embedded default data, at a tiny size."""

import json
from pathlib import Path

import pytest
from helpers import scifact_cut
from typer.testing import CliRunner

from seedr.cli import app


def test_demo_help_has_example():
    result = CliRunner().invoke(app, ["demo", "--help"])
    assert result.exit_code == 0
    assert "Example: seedr demo" in result.output


def test_demo_rejects_unknown_size(tmp_path):
    result = CliRunner().invoke(app, ["demo", "--out", str(tmp_path / "d"), "--set", "pretrain_stepz=3"])
    assert result.exit_code == 1
    assert "pretrain_stepz" in result.output


@pytest.mark.slow
def test_demo_end_to_end_tiny(tmp_path):
    out = tmp_path / "demo"
    sizes = ["documents=300", "test_queries=30", "train_queries=60", "pretrain_steps=2", "finetune_steps=2",
             "pretrain_batch_size=4", "finetune_batch_size=4", "tokenizer_vocab=2000", "minilm_epochs=0.1"]
    result = CliRunner().invoke(app, ["demo", "--out", str(out), *sum((["--set", s] for s in sizes), [])])
    assert result.exit_code == 0, result.output
    results = json.loads((out / "reports" / "demo" / "results.json").read_text())
    comparison = results["tasks"]["heldout"]
    assert comparison["baseline"] == "MiniLM" and comparison["queries"]["MRR@10"] == 30
    assert set(comparison["systems"]) == {"BM25", "MiniLM", "MiniLM→FT", "BM25+MiniLM→FT", "base→MLM→FT",
                                          "base→SEED→FT"}
    assert all(0.0 <= values["MRR@10"]["mean"] <= 1.0 for values in comparison["systems"].values())
    report = (out / "reports" / "demo" / "report.md").read_text()
    assert "## Comparison" in report and "weak_decoder" in report
    assert (out / "reports" / "demo" / "report.html").exists()
    # SEED and MLM continue the seedr base, then fine-tune
    pretrained, finetuned = results["steps"]["base→SEED→FT"]
    assert "seedr-base" in (Path(pretrained) / "config.yaml").read_text()
    for folder in (pretrained, finetuned):
        assert (Path(folder) / "encoder" / "model.safetensors").exists()
    assert len(list((out / "retrieval").glob("heldout-*/run.trec"))) == 6


def test_demo_data_must_be_a_beir_folder(shared_data, tmp_path):
    result = CliRunner().invoke(app, ["demo", "--out", str(tmp_path / "d"), "--data", str(shared_data / "squad")])
    assert result.exit_code == 1
    assert "corpus.jsonl" in result.output and "BEIR folder" in result.output


@pytest.mark.slow
def test_demo_on_scifact(shared_data, tmp_path):
    """``--data`` a real BEIR folder: SciFact with every training query, 60 of its test queries, their judged
    abstracts and its first 500 others (its whole corpus, encoded by four models, took most of the time)."""
    out = tmp_path / "demo"
    data = scifact_cut(shared_data / "scifact", tmp_path / "scifact", test=60, train=1000, others=500)
    sizes = ["test_queries=40", "pretrain_steps=2", "finetune_steps=2", "pretrain_batch_size=4",
             "finetune_batch_size=4", "minilm_epochs=0.02"]
    result = CliRunner().invoke(app, ["demo", "--out", str(out), "--data", str(data),
                                      *sum((["--set", s] for s in sizes), [])])
    assert result.exit_code == 0, result.output
    comparison = json.loads((out / "reports" / "demo" / "results.json").read_text())["tasks"]["heldout"]
    assert comparison["queries"]["nDCG@10"] == 40
    assert comparison["systems"]["BM25"]["nDCG@10"]["mean"] > 0.5  # BM25 is strong on SciFact
