"""#57: every command of the README's pipeline table and its ``seedr.api`` function, run on the same inputs,
write the same outputs (every file's content, weights tensor by tensor; records but for when they ran and how
long): the options' defaults of the command line and the keywords' defaults of the API are one set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import bm25_experiment
from safetensors import safe_open
from typer.testing import CliRunner

import seedr
from seedr.cli import app
from seedr.config.loading import to_dict

#: Two steps of four texts: enough to move every weight, so that a setting one way does not apply is seen.
TRAINING = {"train.max_steps": 2, "train.batch_size": 4, "train.global_batch_size": 4, "train.log_every": 1,
            "train.save_every": 2}

#: What a record says of its run rather than of its result: when it started, how long it took (an
#: experiment's compute time, rounded to half-seconds, is 0.0 one way and 0.5 the other on a busy machine).
VOLATILE_KEYS = {"time", "started", "seconds", "wall_seconds", "compute_seconds"}


def _cli(*arguments: Any) -> str:
    result = CliRunner().invoke(app, [str(argument) for argument in arguments], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _settings(settings: dict[str, Any]) -> list[str]:
    return [word for key, value in settings.items() for word in ("--set", f"{key}={value}")]


def _steady(value: Any, roots: tuple[str, ...]) -> Any:
    """A record's content without what says when, where and by which command it was made."""
    if isinstance(value, dict):
        return {key: _steady(item, roots) for key, item in value.items() if key not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [_steady(item, roots) for item in value]
    if isinstance(value, str):
        for root in roots:
            value = value.replace(root, "<out>")
    return value


def _content(path: Path, roots: tuple[str, ...]) -> Any:
    if path.suffix == ".json":
        return _steady(json.loads(path.read_text(encoding="utf-8")), roots)
    if path.suffix == ".jsonl" and path.name in {"metrics.jsonl", "events.jsonl"}:
        return [_steady(json.loads(line), roots) for line in path.read_text(encoding="utf-8").splitlines()]
    if path.suffix == ".safetensors":  # its header's metadata is a hash map: saved in no fixed order
        with safe_open(str(path), framework="numpy") as weights:
            return weights.metadata(), {name: weights.get_tensor(name).tobytes() for name in weights.keys()}  # noqa: SIM118 (not a dict)
    if path.suffix in {".yaml", ".yml"}:
        return _steady(yaml.safe_load(path.read_text(encoding="utf-8")), roots)
    if path.suffix in {".md", ".html", ".txt", ".log"}:
        text = path.read_text(encoding="utf-8")
        for root in roots:
            text = text.replace(root, "<out>")
        return text
    return path.read_bytes()


#: Files that hold the machine's state or a picture of it, not a result: compared by presence only.
UNCOMPARED = {".png", ".svg", ".lock", ".log"}


def assert_same_outputs(by_command: Path, by_api: Path) -> None:
    """The two output trees hold the same files, each with the same content (``_content``)."""
    def files(root: Path) -> dict[str, Path]:
        if root.is_file():
            return {"": root, **{sibling.name: sibling for sibling in root.parent.glob(root.name + ".*")}}
        return {str(path.relative_to(root)): path for path in sorted(root.rglob("*")) if path.is_file()}

    ours, theirs = files(by_command), files(by_api)
    assert sorted(ours) == sorted(theirs)
    roots = (str(by_command), str(by_api))
    for name, path in ours.items():
        if path.suffix in UNCOMPARED:
            continue
        assert _content(path, roots) == _content(theirs[name], roots), f"{name} differs"


@pytest.fixture(scope="module")
def beir(shared_data, tmp_path_factory) -> Path:
    """SciFact's first 8 test queries, their judgments (as test and as training labels: a tiny fine-tuning
    reads them), their abstracts and the first 40 others."""
    source = shared_data / "scifact"
    folder = tmp_path_factory.mktemp("parity") / "beir"
    (folder / "qrels").mkdir(parents=True)
    header, *lines = (source / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    judged = lines[:8]
    for split in ("test", "train"):
        (folder / "qrels" / f"{split}.tsv").write_text("\n".join([header, *judged]) + "\n", encoding="utf-8")
    queries = {line.split("\t")[0] for line in judged}
    documents = {line.split("\t")[1] for line in judged}
    with open(source / "corpus.jsonl", encoding="utf-8") as stream:
        kept = [line for number, line in enumerate(stream) if number < 40 or json.loads(line)["_id"] in documents]
    (folder / "corpus.jsonl").write_text("".join(kept), encoding="utf-8")
    asked = [line for line in (source / "queries.jsonl").read_text(encoding="utf-8").splitlines()
             if json.loads(line)["_id"] in queries]
    (folder / "queries.jsonl").write_text("\n".join(asked) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("both-ways")


def _pair(work: Path, stage: str) -> tuple[Path, Path]:
    (work / "command").mkdir(exist_ok=True)
    (work / "api").mkdir(exist_ok=True)
    return work / "command" / stage, work / "api" / stage


def test_prepare_both_ways(beir, work):
    command, api = _pair(work, "prepare")
    _cli("prepare", "--corpus", beir / "corpus.jsonl", "--out", command)
    seedr.prepare(api, corpus=beir / "corpus.jsonl", show_progress=False)
    assert_same_outputs(command, api)


def test_pretrain_both_ways(beir, work):
    command, api = _pair(work, "pretrain")
    settings = {**TRAINING, "data.max_seq_length": 48, "data.max_documents": 12}
    _cli("pretrain", "--config", "seed", "--model", "seedr-base", "--corpus", beir / "corpus.jsonl", "--out",
         command, *_settings(settings))
    seedr.pretrain(api, config="seed", model="seedr-base", corpus=beir / "corpus.jsonl", settings=settings)
    assert_same_outputs(command / "encoder", api / "encoder")


def test_finetune_both_ways(beir, work):
    command, api = _pair(work, "finetune")
    settings = {**TRAINING, "document_max_length": 48, "query_max_length": 16}
    _cli("finetune", "--model", "seedr-base", "--train", beir, "--negatives", "bm25", "--loss", "nll", "--out",
         command, *_settings(settings))
    seedr.finetune(api, model="seedr-base", train=beir, negatives="bm25", loss="nll", settings=settings)
    assert_same_outputs(command / "encoder", api / "encoder")


def test_adapt_both_ways(beir, work):
    command, api = _pair(work, "adapt")
    settings = {**TRAINING, "document_max_length": 48, "query_max_length": 16}
    _cli("adapt", "--model", "seedr-base", "--corpus", beir / "corpus.jsonl", "--out", command, *_settings(settings))
    seedr.adapt(api, model="seedr-base", corpus=beir / "corpus.jsonl", settings=settings)
    assert_same_outputs(command / "encoder", api / "encoder")


def test_average_both_ways(work):
    command, api = _pair(work, "average")
    models = [work / "api" / "pretrain" / "encoder", work / "api" / "finetune" / "encoder"]
    _cli("average", *models, "--out", command, "--weight", "0.25", "--weight", "0.75")
    seedr.average(models, api, weight=[0.25, 0.75])
    assert_same_outputs(command, api)


def test_encode_index_search_fuse_evaluate_both_ways(beir, work):
    model = work / "api" / "finetune" / "encoder"
    corpus, queries, qrels = beir / "corpus.jsonl", beir / "queries.jsonl", beir / "qrels" / "test.tsv"
    command, api = _pair(work, "encode")
    _cli("encode", "--model", model, "--corpus", corpus, "--out", command)
    seedr.encode(model, corpus, api, show_progress=False)
    assert_same_outputs(command, api)

    command, api = _pair(work, "index")
    _cli("index", "--embeddings", work / "api" / "encode", "--out", command)
    seedr.index(work / "api" / "encode", api, show_progress=False)
    assert_same_outputs(command, api)

    command, api = _pair(work, "dense.trec")
    _cli("search", "--index", work / "api" / "index", "--model", model, "--queries", queries, "--k", 10,
         "--out", command)
    seedr.search(api, index=work / "api" / "index", model=model, queries=queries, k=10, show_progress=False)
    assert_same_outputs(command, api)

    command, api = _pair(work, "bm25.trec")
    _cli("search", "--bm25", "--corpus", corpus, "--queries", queries, "--k", 10, "--out", command)
    seedr.search(api, bm25=True, corpus=corpus, queries=queries, k=10, show_progress=False)
    assert_same_outputs(command, api)

    runs = [work / "api" / "bm25.trec", work / "api" / "dense.trec"]
    command, api = _pair(work, "fused.trec")
    _cli("fuse", *runs, "--out", command)
    seedr.fuse(runs, api, show_progress=False)
    assert_same_outputs(command, api)

    printed = _cli("evaluate", *runs, work / "api" / "fused.trec", "--qrels", qrels, "--baseline", runs[0])
    evaluation = seedr.evaluate([*runs, work / "api" / "fused.trec"], qrels=qrels, baseline=runs[0],
                                show_progress=False)
    assert str(evaluation).strip() in printed  # the command prints the table the call's result prints


def test_diagnose_both_ways(beir, work):
    command, api = _pair(work, "diagnose")
    model = work / "api" / "pretrain" / "encoder"
    _cli("diagnose", model, "--corpus", beir / "corpus.jsonl", "--lengths", "32,64", "--out", command,
         "--max-documents", 20, "--pairs", 8, "--word-texts", 2, "--reliance-texts", 4, "--mlm-texts", 4)
    seedr.diagnose(model, api, corpus=beir / "corpus.jsonl", lengths=[32, 64], max_documents=20, pairs=8,
                   word_texts=2, reliance_texts=4, masked_lm_texts=4, show_progress=False)
    assert_same_outputs(command, api)


def test_report_both_ways(work):
    command, api = _pair(work, "report")
    runs = [work / "api" / "pretrain", work / "api" / "finetune"]
    _cli("report", *runs, "--out", command, "--title", "both ways")
    seedr.report(runs, api, title="both ways")
    assert_same_outputs(command, api)


def test_experiment_both_ways(beir, tmp_path):
    spec = tmp_path / "both_ways.yaml"
    spec.write_text(bm25_experiment("Both ways"), encoding="utf-8")
    command, api = tmp_path / "command", tmp_path / "api"
    _cli("experiment", spec, "--out", command, "--set", f"data={beir}")
    seedr.experiment(spec, api, settings={"data": str(beir)})
    results = Path("reports") / "both_ways" / "results.json"
    assert_same_outputs(command / results, api / results)


def test_config_both_ways():
    """``seedr config`` prints the settings ``resolve_settings`` returns for a run on one process, as YAML,
    then the batch they make."""
    printed = _cli("config", "pretrain", "--config", "seed", "--set", "train.batch_size=8")
    resolved = seedr.resolve_settings("pretrain", config="seed", settings={"train.batch_size": 8}, processes=1)
    settings, _, batch = printed.rpartition("\non one process, batch:")
    assert yaml.safe_load(settings) == to_dict(resolved) and batch
