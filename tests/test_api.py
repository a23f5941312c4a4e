"""seedr's Python API (``seedr.api``, re-exported by ``import seedr``): one call per stage with the command's
options as keyword arguments, settings as a plain mapping, corpora and queries as paths or rows in memory,
and results that lead to the next step. The command line runs the same functions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import seedr

TINY = {"train.max_steps": 2, "train.batch_size": 4, "train.global_batch_size": 4, "data.max_seq_length": 64,
        "train.log_every": 1, "train.save_every": 2}


@pytest.fixture(scope="module")
def abstracts(shared_data) -> list[dict]:
    """SciFact's first 60 abstracts as rows, the way a notebook user holds them."""
    with open(shared_data / "scifact" / "corpus.jsonl", encoding="utf-8") as stream:
        return [json.loads(line) for _, line in zip(range(60), stream)]


def test_import_seedr_is_light_and_documents_every_stage():
    import subprocess
    import sys

    probe = subprocess.run([sys.executable, "-c", "import sys, seedr; print('torch' in sys.modules)"],
                           capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == "False"  # torch is imported by the call that needs it, not by `import seedr`
    for name in ("pretrain", "finetune", "adapt", "encode", "index", "search", "evaluate", "resolve_settings"):
        function = getattr(seedr, name)
        assert function.__doc__ and "Example:" in function.__doc__, name


def test_settings_are_a_plain_mapping_over_the_recipe():
    resolved = seedr.resolve_settings("pretrain", config="seed", settings={"train.batch_size": 8},
                                      model="seedr-base")
    assert resolved.train.batch_size == 8 and resolved.train.global_batch_size == 256  # the recipe's
    assert resolved.model.init == "seedr-base" and resolved.objective_name == "seed"
    assert resolved.objective["attention_span"] == 2 and "decoder_layers" in resolved.objective
    nested = seedr.resolve_settings("pretrain", config="seed", settings={"train": {"batch_size": 8}},
                                    model="seedr-base")
    assert nested == resolved
    with pytest.raises(ValueError, match="unknown option"):
        seedr.resolve_settings("pretrain", settings={"train.no_such_key": 1})
    with pytest.raises(TypeError, match="unknown option"):
        seedr.resolve_settings("finetune", corpus="x")  # finetune takes train=, not corpus=


def test_pretrain_on_rows_held_in_memory(abstracts, tmp_path):
    run = seedr.pretrain(tmp_path / "run", objective="mlm", model="seedr-base", corpus=abstracts, settings=TINY)
    assert isinstance(run, seedr.TrainingRun) and (run.encoder / "model.safetensors").is_file()
    written = (tmp_path / "run" / "inputs" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in written] == [row["_id"] for row in abstracts]
    recorded = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert recorded["data"]["corpus"] == [str(tmp_path / "run" / "inputs" / "corpus.jsonl")]
    assert recorded["model"]["init"] == "seedr-base" and recorded["train"]["max_steps"] == 2


def test_encode_index_search_gives_hits_with_texts(abstracts, tmp_path):
    embeddings = seedr.encode("seedr-base", abstracts, tmp_path / "emb", show_progress=False)
    assert embeddings.complete and embeddings.corpus is abstracts
    index = seedr.index(embeddings, tmp_path / "index", show_progress=False)
    hits = index.search(abstracts[7]["title"], k=5)
    assert len(hits) == 5 and [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    by_id = {row["_id"]: row for row in abstracts}
    assert all(hit.text == by_id[hit.id]["text"] and hit.title == by_id[hit.id]["title"] for hit in hits)
    several = index.search([abstracts[0]["title"], abstracts[1]["title"]], k=2)
    assert len(several) == 2 and all(len(hits) == 2 for hits in several)
    keyed = index.search({"q1": abstracts[0]["title"]}, k=1)
    assert set(keyed) == {"q1"}
    reopened = seedr.Index(tmp_path / "index")  # no corpus given: ids and scores only
    assert [(hit.id, hit.text) for hit in reopened.search(abstracts[7]["title"], k=5)] == \
        [(hit.id, None) for hit in hits]


def test_search_and_evaluate_in_memory_and_on_files(shared_data, abstracts, tmp_path):
    scifact = shared_data / "scifact"
    queries = {"q": abstracts[3]["title"], "r": abstracts[11]["title"]}
    held = seedr.search(bm25=True, corpus=abstracts, queries=queries, k=10, show_progress=False)
    assert held.path is None and set(held.run) == {"q", "r"}
    assert max(held.run["q"], key=held.run["q"].get) == abstracts[3]["_id"]  # its own title finds it
    written = seedr.search(tmp_path / "bm25.trec", bm25=True, corpus=scifact / "corpus.jsonl",
                           queries=scifact / "queries.jsonl", k=100, show_progress=False)
    assert (tmp_path / "bm25.trec").is_file() and (tmp_path / "bm25.trec.json").is_file()
    evaluation = seedr.evaluate([written], qrels=scifact / "qrels" / "test.tsv", show_progress=False)
    assert 0.5 < evaluation.metrics["bm25"]["nDCG@10"] < 0.8  # BM25 on SciFact (BEIR: 0.665)
    assert "nDCG@10" in evaluation.to_markdown() and evaluation.to_dict()["mode"] == "qrels"
    assert any("unjudged queries ignored" in note for note in evaluation.notes)  # train queries were searched


def test_print_of_an_evaluation_shows_differences_and_p_values_as_the_command_does(shared_data, tmp_path):
    """``print(seedr.evaluate(...))`` (the README's last line) is what ``seedr evaluate`` prints: each value
    with its difference to the baseline and the p-value, not only the marks."""
    from typer.testing import CliRunner

    from seedr.cli import app

    scifact = shared_data / "scifact"
    with open(scifact / "corpus.jsonl", encoding="utf-8") as stream:
        untitled = [{"_id": row["_id"], "text": row["text"]} for row in map(json.loads, stream)]
    queries = scifact / "queries.jsonl"
    bm25 = seedr.search(tmp_path / "bm25.trec", bm25=True, corpus=scifact / "corpus.jsonl", queries=queries,
                        show_progress=False)
    seedr.search(tmp_path / "text.trec", bm25=True, corpus=untitled, queries=queries, show_progress=False)
    evaluation = seedr.evaluate([tmp_path / "text.trec", bm25], qrels=scifact / "qrels" / "test.tsv", baseline=bm25,
                                resamples=1000, show_progress=False)
    effect = evaluation.table.effect("text", "nDCG@10")  # e.g. "-0.0123 p=0.04"
    assert " p=" in effect and effect in str(evaluation) and repr(evaluation) == str(evaluation)
    assert "difference to bm25 and the p-value" in " ".join(str(evaluation).split())
    result = CliRunner().invoke(app, ["evaluate", str(tmp_path / "text.trec"), str(tmp_path / "bm25.trec"),
                                      "--qrels", str(scifact / "qrels" / "test.tsv"), "--baseline",
                                      str(tmp_path / "bm25.trec"), "--resamples", "1000"])
    assert result.exit_code == 0 and effect in result.output


def test_the_command_line_runs_the_api(monkeypatch, shared_data, tmp_path):
    """One implementation: ``seedr search`` is ``seedr.api.search`` with the options as keywords."""
    from typer.testing import CliRunner

    import seedr.api
    import seedr.stages.search
    from seedr.cli import app

    assert seedr.stages.search.search is seedr.api.search
    calls = []
    real = seedr.api.search
    monkeypatch.setattr(seedr.stages.search, "search",
                        lambda *args, **kwargs: calls.append(kwargs) or real(*args, **kwargs))
    scifact = shared_data / "scifact"
    result = CliRunner().invoke(app, ["search", "--bm25", "--corpus", str(scifact / "corpus.jsonl"), "--queries",
                                      str(scifact / "queries.jsonl"), "--k", "5", "--out", str(tmp_path / "r.trec")])
    assert result.exit_code == 0, result.output
    assert len(calls) == 1 and calls[0]["bm25"] and calls[0]["k"] == 5
    assert Path(tmp_path / "r.trec").read_text().count("\n") == 5 * len(
        (scifact / "queries.jsonl").read_text().splitlines())
