"""seedr's Python API (``seedr.api``, re-exported by ``import seedr``): one call per stage with the command's
options as keyword arguments, settings as a plain mapping, corpora and queries as paths or rows in memory,
and results that lead to the next step. The command line runs the same functions."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

import seedr
from seedr.io import DataError

TINY = {"train.max_steps": 2, "train.batch_size": 4, "train.global_batch_size": 4, "data.max_seq_length": 64,
        "train.log_every": 1, "train.save_every": 2}


@pytest.fixture(scope="module")
def abstracts(shared_data) -> list[dict]:
    """SciFact's first 60 abstracts as rows, the way a notebook user holds them."""
    with open(shared_data / "scifact" / "corpus.jsonl", encoding="utf-8") as stream:
        return [json.loads(line) for _, line in zip(range(60), stream)]


#: Each stage and the function of ``seedr.api`` it calls.
STAGE_FUNCTIONS = {"prepare": "prepare", "pretrain": "pretrain", "finetune": "finetune", "adapt": "adapt",
                   "average": "average", "encode": "encode", "index": "index", "search": "search", "fuse": "fuse",
                   "evaluate": "evaluate", "diagnose": "diagnose", "report": "report", "experiment": "experiment",
                   "demo": "demo", "config": "resolve_settings"}


def test_every_stage_is_a_function_of_the_api():
    from seedr.stages import STAGES

    assert set(STAGE_FUNCTIONS) == set(STAGES)


def test_import_seedr_is_light_and_documents_every_stage():
    import subprocess
    import sys

    probe = subprocess.run([sys.executable, "-c", "import sys, seedr; print('torch' in sys.modules)"],
                           capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == "False"  # torch is imported by the call that needs it, not by `import seedr`
    for name in (*STAGE_FUNCTIONS.values(), "ance_refresh"):
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
    assert recorded["data"]["corpus"] == ["inputs/corpus.jsonl"]  # in the run: relative to it, as it may move
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
    """One implementation: ``seedr search`` runs the pipeline's search (``seedr.pipeline.search.run``), as
    ``seedr.api.search`` does, with the options as its config."""
    from typer.testing import CliRunner

    import seedr.pipeline.search
    from seedr.cli import app

    calls = []
    real = seedr.pipeline.search.run
    monkeypatch.setattr(seedr.pipeline.search, "run", lambda config: calls.append(config) or real(config))
    scifact = shared_data / "scifact"
    result = CliRunner().invoke(app, ["search", "--bm25", "--corpus", str(scifact / "corpus.jsonl"), "--queries",
                                      str(scifact / "queries.jsonl"), "--k", "5", "--out", str(tmp_path / "r.trec")])
    assert result.exit_code == 0, result.output
    assert len(calls) == 1 and calls[0].bm25 and calls[0].k == 5
    assert Path(tmp_path / "r.trec").read_text().count("\n") == 5 * len(
        (scifact / "queries.jsonl").read_text().splitlines())
    calls.clear()
    seedr.search(tmp_path / "api.trec", bm25=True, corpus=scifact / "corpus.jsonl", queries=scifact / "queries.jsonl",
                 k=5, show_progress=False)
    assert len(calls) == 1 and calls[0].bm25 and calls[0].k == 5
    assert (tmp_path / "api.trec").read_text().split() == (tmp_path / "r.trec").read_text().split()


class _Reached(Exception):
    """Raised by a spy in place of an API function: the command got there."""


#: A command line of each stage, the API function it reaches, and keywords it must pass on.
COMMANDS = [
    (["prepare", "--out", "p", "--passage-words", "100", "--max-articles", "5"], "prepare",
     {"passage_words": 100, "max_articles": 5}),
    (["pretrain", "--config", "mlm", "--model", "seedr-base", "--corpus", "c.jsonl", "--out", "r"], "pretrain",
     {"config": "mlm", "model": "seedr-base"}),
    (["finetune", "--model", "minilm", "--train", "data", "--out", "r", "--rounds", "2"], "finetune",
     {"model": "minilm", "rounds": 2}),
    (["finetune", "--ance-refresh-only", "--model", "r/checkpoints/step-2", "--train", "data"], "ance_refresh",
     {"model": "r/checkpoints/step-2", "train": "data"}),
    (["adapt", "--corpus", "c.jsonl", "--out", "r", "--patience", "2"], "adapt", {"patience": 2}),
    (["average", "a", "b", "--out", "soup", "--weight", "0.3", "--weight", "0.7"], "average", {"weight": [0.3, 0.7]}),
    (["encode", "--model", "minilm", "--corpus", "c.jsonl", "--out", "e", "--batch-size", "4"], "encode",
     {"batch_size": 4}),
    (["index", "--embeddings", "e", "--out", "i"], "index", {}),
    (["search", "--bm25", "--corpus", "c.jsonl", "--queries", "q.jsonl", "--k", "5", "--out", "r.trec"], "search",
     {"bm25": True, "k": 5}),
    (["fuse", "a.trec", "b.trec", "--out", "f.trec", "--rrf-k", "30"], "fuse", {"rrf_k": [30]}),
    (["evaluate", "a.trec", "--qrels", "q.tsv"], "evaluate", {"qrels": "q.tsv"}),
    (["diagnose", "minilm", "--out", "d", "--lengths", "32,64", "--pairs", "8"], "diagnose",
     {"lengths": [32, 64], "pairs": 8}),
    (["report", "run", "--out", "rep", "--title", "mine"], "report", {"title": "mine"}),
    (["experiment", "domain_adaptation", "--scale", "paper", "--set", "data=x"], "experiment",
     {"scale": "paper", "settings": ["data=x"]}),
    (["demo", "--out", "d", "--set", "pretrain_steps=3"], "demo", {"settings": ["pretrain_steps=3"]}),
    (["config", "pretrain", "--config", "seed"], "resolve_settings", {}),
]


@pytest.mark.parametrize(("arguments", "function", "passed"), COMMANDS,
                         ids=[" ".join(arguments[:2]) for arguments, _, _ in COMMANDS])
def test_every_command_is_its_api_function(monkeypatch, tmp_path, arguments, function, passed):
    """One implementation: each stage's command runs the pipeline's stage (``seedr.pipeline.<stage>.run``)
    with the config its options make, as the API function does; a stage not yet in the pipeline calls the
    very function of ``seedr.api``, with its options as keywords. A spy in its place stops the command
    there, before anything is read."""
    import importlib

    from typer.testing import CliRunner

    import seedr.api
    from seedr.cli import app
    from tests.test_options_declared_once import OTHER_RUNS, STAGE_CONFIGS

    calls = []

    def spy(*args, **kwargs):
        calls.append((args, kwargs))
        raise _Reached

    config_class = OTHER_RUNS[function][0] if function in OTHER_RUNS else STAGE_CONFIGS.get(function)
    if function in OTHER_RUNS:
        module, run = OTHER_RUNS[function][1].split(":")
        monkeypatch.setattr(importlib.import_module(module), run, spy)
    elif function in STAGE_CONFIGS:
        monkeypatch.setattr(importlib.import_module(f"seedr.pipeline.{function}"), "run", spy)
    else:
        module = importlib.import_module(f"seedr.stages.{arguments[0]}")
        name = next(attribute for attribute, value in vars(module).items() if value is getattr(seedr.api, function))
        monkeypatch.setattr(module, name, spy)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 1 and "_Reached" in result.output, result.output
    assert len(calls) == 1
    if config_class is not None:
        [config], _ = calls[0]
        assert isinstance(config, config_class)
        keywords = vars(config)
    else:
        keywords = calls[0][1]
    for key, value in passed.items():  # a path option passes a Path
        assert (str(keywords[key]) if isinstance(keywords[key], Path) else keywords[key]) == value, key


def test_fuse_two_runs_in_python_and_evaluate_the_fused_run(scifact_slice, tmp_path):
    """``seedr.fuse`` takes the runs ``search`` wrote and returns a run ``evaluate`` takes, which it tests
    against each component (the fused run's record names them)."""
    corpus, queries = scifact_slice / "corpus.jsonl", scifact_slice / "queries.jsonl"
    bm25 = seedr.search(tmp_path / "bm25.trec", bm25=True, corpus=corpus, queries=queries, k=10, show_progress=False)
    flat = seedr.search(tmp_path / "flat.trec", bm25=True, corpus=corpus, queries=queries, k=10, b=0.0, k1=2.0,
                        show_progress=False)
    fused = seedr.fuse([bm25, flat], tmp_path / "fused.trec", method="minmax", weight=[0.7, 0.3], tag="hybrid")
    assert isinstance(fused, seedr.FusedRun) and fused.path.is_file() and fused.record.is_file()
    assert set(fused.run) == set(bm25.run) and fused.fusion.method == "minmax" and fused.selection is None
    assert fused.fusion.weights == pytest.approx((0.7, 0.3))
    assert fused.lines == sum(len(ranking) for ranking in fused.run.values())
    evaluation = seedr.evaluate([fused], qrels=scifact_slice / "qrels" / "test.tsv", resamples=100,
                                show_progress=False)
    assert set(evaluation.components["fused"]) == {"bm25", "flat"}
    with pytest.raises(ValueError, match="at least two runs"):
        seedr.fuse([bm25], tmp_path / "one.trec")
    with pytest.raises(ValueError, match="rrf_k must be a non-empty list of integers at least 1"):
        seedr.fuse([bm25, flat], tmp_path / "bad.trec", rrf_k=[0])
    with pytest.raises(DataError, match="--overwrite"):  # seedr's own run: replaced only when asked
        seedr.fuse([bm25, flat], fused)


def test_average_two_models_into_one_that_the_next_stage_takes(tmp_path):
    from seedr.modeling.folders import resolve_model_path

    soup = seedr.average(["minilm", "minilm"], tmp_path / "soup", weight=[1, 3])
    assert isinstance(soup, seedr.AveragedEncoder) and soup.members == ["minilm", "minilm"]
    assert [member["weight"] for member in soup.record["members"]] == pytest.approx([0.25, 0.75])
    assert soup.record["weights_averaged"] > 0 and resolve_model_path(os.fspath(soup)) == tmp_path / "soup"
    with pytest.raises(ValueError, match="weight must be a non-empty list of numbers at least 0, got -1"):
        seedr.average(["minilm", "minilm"], tmp_path / "bad", weight=[-1, 1])
    with pytest.raises(ValueError, match="not a seedr run folder"):
        seedr.average(["minilm", "minilm"], tmp_path / "lawa", checkpoints=2)
    assert not (tmp_path / "bad").exists() and not (tmp_path / "lawa").exists()


def test_prepare_a_tiny_corpus_then_search_it(scifact_slice, tmp_path):
    prepared = seedr.prepare(tmp_path / "prepared", corpus=scifact_slice / "corpus.jsonl", show_progress=False)
    assert isinstance(prepared, seedr.PreparedData) and prepared.kind == "corpus"
    assert prepared.summary.documents == 40 and (tmp_path / "prepared" / "corpus.jsonl").is_file()
    run = seedr.search(queries=scifact_slice / "queries.jsonl", bm25=True, corpus=prepared, k=3,
                       show_progress=False)  # the prepared folder is a corpus
    assert all(len(ranking) == 3 for ranking in run.run.values())
    with pytest.raises(DataError, match="--overwrite"):
        seedr.prepare(prepared, corpus=scifact_slice / "corpus.jsonl")
    with pytest.raises(ValueError, match="passage_words must be an integer at least 0, got -5"):
        seedr.prepare(tmp_path / "bad", passage_words=-5)
    assert not (tmp_path / "bad").exists()


def test_report_a_run_folder_then_its_page_again(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("train:\n  seed: 7\n")
    (run / "metrics.jsonl").write_text("".join(json.dumps({"step": step, "loss": 3.0 / step}) + "\n"
                                               for step in (1, 2, 3)))
    (run / "eval-scifact.json").write_text(json.dumps({"nDCG@10": 0.61}))
    written = seedr.report([run], tmp_path / "report", title="one run")
    assert isinstance(written, seedr.Report) and written.markdown == tmp_path / "report" / "report.md"
    assert "one run" in written.markdown.read_text() and "0.6100" in written.markdown.read_text()
    assert written.html.read_text().startswith("<!DOCTYPE html>") and (tmp_path / "report" / "plots").is_dir()
    page = seedr.report(written.folder, tmp_path / "page")  # a written report: its HTML page alone
    assert page.markdown is None and page.html == tmp_path / "page" / "report.html" and page.html.is_file()
    with pytest.raises(DataError, match="--overwrite"):
        seedr.report(run, tmp_path / "report")
    assert seedr.report(run, tmp_path / "report", overwrite=True).html.is_file()
