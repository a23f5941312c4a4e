"""``seedr adapt`` / ``seedr.adapt`` (#56): from a corpus without labels to an adapted retriever — pairs mined
from the documents alone (no query or qrels file read), a pseudo-query's own document never its negative,
and a label-free validation on held-out documents that is logged, plotted, stops training and keeps the best
model."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

import seedr
from seedr.cli import app
from seedr.data.training_sets import load_training_set
from seedr.io import DataError
from seedr.modeling.encoder import model_fingerprint
from seedr.training.early_stopping import EarlyStopping
from seedr.training.mined_pairs import OWN_POSITIVE, mine_pairs
from tests.helpers import save_tiny_bert

runner = CliRunner()

#: A few steps of a tiny model: seconds on a CPU.
TINY = {"train.max_steps": 4, "train.batch_size": 8, "train.learning_rate": 1e-3, "train.log_every": 1,
        "query_max_length": 32, "document_max_length": 64, "encode_batch_size": 64}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    """A freshly initialised 2-layer, 32-wide BERT with MiniLM's vocabulary."""
    return save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), "mean")


@pytest.fixture(scope="module")
def beir_folder(shared_data: Path, tmp_path_factory) -> Path:
    """A BEIR folder cut from real SciFact: its first 200 abstracts, its queries and its test qrels."""
    source = shared_data / "scifact"
    folder = tmp_path_factory.mktemp("scifact-200")
    lines = (source / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:200]
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "queries.jsonl").write_text((source / "queries.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text((source / "qrels" / "test.tsv").read_text(encoding="utf-8"))
    return folder


@pytest.fixture(scope="module")
def untitled(beir_folder: Path, tmp_path_factory) -> Path:
    """A plain seedr JSONL corpus, ``{"id", "text"}``, with no titles: the same abstracts' texts."""
    rows = [json.loads(line) for line in (beir_folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    path = tmp_path_factory.mktemp("untitled") / "abstracts.jsonl"
    path.write_text("".join(json.dumps({"id": row["_id"], "text": row["text"]}) + "\n" for row in rows[:120]),
                    encoding="utf-8")
    return path


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


class _OpenedFiles:
    """Every file the process opens while ``watching`` (an audit hook: ``open``, ``io.open``, ``os.open``,
    compressed readers and memory maps alike go through it)."""

    def __init__(self) -> None:
        self.watching, self.paths = False, []
        sys.addaudithook(self._hook)

    def _hook(self, event: str, arguments: tuple) -> None:
        if self.watching and event == "open" and isinstance(arguments[0], str | bytes | Path):
            self.paths.append(Path(arguments[0] if not isinstance(arguments[0], bytes) else arguments[0].decode()))


OPENED = _OpenedFiles()


# ------------------------------------------------------------------------------------------------ the pairs


def test_pairs_come_from_the_documents_and_held_out_documents_are_never_trained_on(beir_folder, tmp_path):
    mined = mine_pairs(beir_folder, tmp_path / "pairs", validation=40, seed=3)
    assert mined.summary["sources"] == ["ict", "title", "crop"]  # SciFact has titles; no sections, no links
    assert mined.summary["documents"] == {"train": 160, "validation": 40}
    queries, held_out = _lines(mined.train / "queries.jsonl"), _lines(mined.validation / "queries.jsonl")
    trained_on = {document for query in queries for document in query["documents"]}
    validated_on = {document for query in held_out for document in query["documents"]}
    assert len(trained_on) == 160 and len(validated_on) == 40 and not trained_on & validated_on
    assert {row["id"] for row in _lines(mined.documents)} == trained_on  # what a continued pre-training reads
    # each pseudo-query: its own positive at grade 2, its document's other pairs at 1; validation: one each
    training = load_training_set(mined.train)
    for query in queries:
        judged = training.qrels[query["_id"]]
        assert judged[query["_id"]] == OWN_POSITIVE and sorted(judged.values()) == [1, 1, OWN_POSITIVE]
    assert len(held_out) == 40 and {row["_id"] for row in _lines(mined.validation / "corpus.jsonl")} == {
        row["_id"] for row in held_out}
    # the same seed mines the same pairs; another splits otherwise
    again = mine_pairs(beir_folder, tmp_path / "again", validation=40, seed=3)
    assert (again.train / "queries.jsonl").read_text() == (mined.train / "queries.jsonl").read_text()
    other = mine_pairs(beir_folder, tmp_path / "other", validation=40, seed=4)
    assert (other.validation / "queries.jsonl").read_text() != (mined.validation / "queries.jsonl").read_text()
    rows = [json.loads(line) for line in (beir_folder / "corpus.jsonl").read_text().splitlines()[:200]]
    held = mine_pairs(rows, tmp_path / "rows", validation=40, seed=3)  # rows in memory, as from a notebook
    assert (held.train / "queries.jsonl").read_text() == (mined.train / "queries.jsonl").read_text()
    assert held.summary["corpus"] == ["rows in memory"]


def test_sections_and_links_give_bfs_and_wlp_pairs(shared_data, wiki_shard, tmp_path):
    """The Wikipedia shards have sections (BFS: a lead sentence against a passage of the body); FOLDOC has real
    cross-links (WLP: a lead sentence against a passage of an entry linking to it). A WLP pair's positive
    comes from the linking entry, which is then one of the documents it was mined from."""
    wiki = mine_pairs(wiki_shard, tmp_path / "wiki", max_documents=40, validation=5)
    assert wiki.summary["sources"] == ["ict", "title", "bfs", "crop"] and wiki.summary["pairs"]["train"]["bfs"] > 0
    foldoc = mine_pairs(shared_data / "foldoc" / "foldoc.jsonl.gz", tmp_path / "foldoc", max_documents=300,
                        validation=30)
    assert "wlp" in foldoc.summary["sources"] and foldoc.summary["pairs"]["train"]["wlp"] > 0
    linked = [row for row in _lines(foldoc.train / "queries.jsonl") if row["task"] == "wlp"]
    assert linked and all(len(row["documents"]) == 2 for row in linked)


def test_a_pseudo_query_s_own_document_is_never_its_negative(beir_folder, tmp_path):
    """BM25 ranks the other pairs of a pseudo-query's document first (a crop holds its ICT sentence): they
    are graded relevant, so left out of the mined negatives, and fine-tuning trains towards grade 2 alone."""
    from seedr.negatives import NEGATIVES
    from seedr.training.finetune import FinetuneData

    mined = mine_pairs(beir_folder, tmp_path / "pairs", max_documents=80, validation=10)
    training = load_training_set(mined.train)
    table = NEGATIVES.build("bm25", {"depth": 20}).mine(training.corpus, training.queries, training.qrels, None, "")
    source = {row["_id"]: tuple(row["documents"]) for row in _lines(mined.train / "queries.jsonl")}
    for query, negatives in table.negatives.items():
        assert negatives and all(source[negative.id] != source[query] for negative in negatives)
    data = FinetuneData(training, table, tmp_path / "negatives", tmp_path, negatives_per_query=1, seed=1,
                        epoch_over="queries", positive_grade=OWN_POSITIVE)
    examples = data.dataset(0)
    assert len(examples) == len(training.queries) and all(e.positive.id == e.query_id for e in examples)
    assert all(len(data.relevant[e.query_id]) == 3 for e in examples)  # kept out of in-batch negatives too


def test_a_pair_source_the_corpus_cannot_give_is_one_clear_line(untitled, tmp_path):
    result = runner.invoke(app, ["adapt", "--corpus", str(untitled), "--pairs", "title", "--out", str(tmp_path / "r")])
    assert result.exit_code == 1
    assert "no title pair can be mined" in result.output and "ict, crop" in result.output
    for arguments, message in ((["--pairs", "ict,queries"], "unknown pair source(s) queries"),
                               (["--pretrain", "no-such-recipe"], "no pretrain recipe 'no-such-recipe'"),
                               (["--pretrain-set", "train.no_such_key=1", "--pretrain", "mlm"], "no_such_key"),
                               (["--set", "no_such_key=1"], "no_such_key")):
        out = tmp_path / "refused"
        result = runner.invoke(app, ["adapt", "--corpus", str(untitled), "--out", str(out), *arguments])
        assert result.exit_code == 1 and message in result.output, result.output
        assert not out.exists() or not any(out.iterdir())  # nothing left to refuse the next try


# ------------------------------------------------------------------------------------------------ adapt


def test_adapt_a_beir_folder_reads_neither_its_queries_nor_its_qrels(tiny_model, beir_folder, tmp_path):
    OPENED.paths.clear()
    OPENED.watching = True
    try:
        run = seedr.adapt(tmp_path / "run", corpus=beir_folder, model=tiny_model, max_documents=100, validation=20,
                          dev_every=2, settings=TINY)
    finally:
        OPENED.watching = False
    inside = {path.resolve() for path in OPENED.paths if beir_folder.resolve() in path.resolve().parents}
    assert inside == {(beir_folder / "corpus.jsonl").resolve()}  # no queries.jsonl, nothing of qrels/
    assert isinstance(run, seedr.TrainingRun) and (run.encoder / "model.safetensors").is_file()
    assert (run.encoder / "README.md").is_file() and (run.encoder / "modules.json").is_file()


def test_adapt_a_plain_jsonl_corpus_without_titles_from_the_command_line(tiny_model, untitled, tmp_path):
    out = tmp_path / "run"
    settings = [argument for key, value in TINY.items() for argument in ("--set", f"{key}={value}")]
    result = runner.invoke(app, ["adapt", "--model", str(tiny_model), "--corpus", str(untitled), "--out", str(out),
                                 "--validation", "0.2", "--dev-every", "2", *settings])
    assert result.exit_code == 0, result.output
    pairs = json.loads((out / "pairs" / "pairs.json").read_text())
    assert pairs["sources"] == ["ict", "crop"] and pairs["documents"] == {"train": 96, "validation": 24}
    assert "ict pairs" in result.output and "best dev/MRR@10" in result.output
    from sentence_transformers import SentenceTransformer

    vectors = SentenceTransformer(str(out / "encoder"), device="cpu").encode(["a plain question"])
    assert vectors.shape == (1, 32)


@pytest.fixture(scope="module")
def watched(shared_data: Path, beir_folder: Path, tmp_path_factory) -> dict[str, str]:
    """Labelled queries to watch: SciFact's training judgments of the folder's 200 abstracts."""
    documents = {json.loads(line)["_id"] for line in (beir_folder / "corpus.jsonl").read_text().splitlines()}
    header, *lines = (shared_data / "scifact" / "qrels" / "train.tsv").read_text(encoding="utf-8").splitlines()
    qrels = tmp_path_factory.mktemp("watched") / "qrels.tsv"
    qrels.write_text("\n".join([header, *(line for line in lines if line.split("\t")[1] in documents)]) + "\n")
    return {"qrels": str(qrels), "queries": str(beir_folder / "queries.jsonl"),
            "corpus": str(beir_folder / "corpus.jsonl")}


def test_label_free_validation_is_logged_plotted_and_keeps_the_best_model(tiny_model, untitled, watched, tmp_path):
    """... and labelled queries watched beside it are scored at every evaluation, never chosen by, and
    ``diagnostics.json`` says how well the validation followed them."""
    run = seedr.adapt(tmp_path / "run", corpus=untitled, model=tiny_model, validation=24, dev_every=1,
                      patience=0, settings={**TINY, "train.max_steps": 5, "watch": watched})
    lines = _lines(run.path / "metrics.jsonl")
    evaluated = [line for line in lines if "dev/MRR@10" in line]
    assert [line["step"] for line in evaluated] == [0, 1, 2, 3, 4, 5]  # before training, then every step
    assert all({"dev/R@1", "dev/R@10", "watch/MRR@10", "watch/R@10"} <= line.keys() for line in evaluated)
    tracking = json.loads((run.path / "diagnostics.json").read_text())
    assert tracking["metrics"] == run.summary["tracking"]
    truths = [line["watch/MRR@10"] for line in evaluated]
    kept = [line["dev/MRR@10"] for line in evaluated].index(max(line["dev/MRR@10"] for line in evaluated))
    assert tracking["metrics"]["tracking/kept"] == truths[kept] and tracking["metrics"]["tracking/last"] == truths[-1]
    assert tracking["metrics"]["tracking/regret"] == pytest.approx(max(truths) - truths[kept])
    assert tracking["details"]["evaluations"] == [[line["step"], line["dev/MRR@10"], line["watch/MRR@10"]]
                                                  for line in evaluated]
    assert any("loss" in line for line in lines) and (run.path / "validation.png").stat().st_size > 1000
    scores = [line["dev/MRR@10"] for line in evaluated]
    best_step = evaluated[scores.index(max(scores))]["step"]  # the first of the best
    best = json.loads((run.path / "best" / "best.json").read_text())
    assert best["step"] == best_step == run.summary["best"]["step"] and best["value"] == max(scores)
    assert model_fingerprint(run.encoder) == model_fingerprint(run.path / "best")
    assert f"at step {best_step}" in (run.encoder / "README.md").read_text()  # the card's metrics are its own
    assert run.summary["stopped"] is None and run.summary["steps"] == 5


def test_early_stopping_ends_the_run_when_the_validation_does_not_improve(tiny_model, untitled, tmp_path):
    """A learning rate too small to move a float32 weight: the validation never improves on the starting
    model's, so with patience 2 the run stops at step 2 of 50, and ships the starting model."""
    run = seedr.adapt(tmp_path / "run", corpus=untitled, model=tiny_model, validation=24, dev_every=1, patience=2,
                      settings={**TINY, "train.max_steps": 50, "train.learning_rate": 1e-30})
    assert run.summary["steps"] == 2 and "has not improved" in run.summary["stopped"]
    assert run.summary["best"]["step"] == 0
    assert [line["step"] for line in _lines(run.path / "metrics.jsonl")][-1] == 2
    assert sorted(path.name for path in (run.path / "checkpoints").iterdir()) == ["step-2"]
    assert model_fingerprint(run.encoder) == model_fingerprint(run.path / "best")
    resumed = seedr.adapt(tmp_path / "run", corpus=untitled, model=tiny_model, validation=24, dev_every=1,
                          patience=2, settings={**TINY, "train.max_steps": 50, "train.learning_rate": 1e-30},
                          resume=True)
    assert resumed.summary["steps"] == 2  # a stopped run stays stopped


def test_early_stopping_waits_patience_evaluations_after_the_best():
    class Trainer:
        stopped = None

        class accelerator:  # the attribute a Trainer has
            is_main_process = True

        def stop(self, reason):
            self.stopped = reason

        def unwrapped_model(self):
            return torch.nn.Linear(1, 1)

    evaluations = iter([(1, 0.5), (2, 0.6), (3, 0.6), (4, 0.55)])
    current: dict = {}

    def evaluated():
        return current["step"], {"dev/MRR@10": current["value"]}

    stopping, trainer = EarlyStopping(evaluated, "MRR@10", patience=2), Trainer()
    for step, value in evaluations:
        current.update(step=step, value=value)
        stopping.on_step_end(trainer, step)
        assert (trainer.stopped is not None) == (step == 4)  # 0.6 again is no improvement
    assert stopping.record() == {"metric": "dev/MRR@10", "value": 0.6, "step": 2, "patience": 2}
    with pytest.raises(ValueError, match="dev/nDCG@10"):
        EarlyStopping(evaluated, "nDCG@10", patience=1).observe(1, {"dev/MRR@10": 0.5}, torch.nn.Linear(1, 1))


def test_continued_pre_training_is_validated_on_the_held_out_pairs_too(tiny_model, untitled, tmp_path):
    """--pretrain mlm: on the training documents only, scored on the held-out pairs before its first step and
    every dev_every steps (its own curve and plot), and fine-tuning starts from its encoder."""
    run = seedr.adapt(tmp_path / "run", corpus=untitled, model=tiny_model, validation=24, dev_every=2, patience=0,
                      pretrain="mlm", settings=TINY,
                      pretrain_settings={"train.max_steps": 4, "train.batch_size": 8, "train.global_batch_size": 8,
                                         "data.max_seq_length": 64, "train.log_every": 1})
    seeding = run.path / "pretrain"
    evaluated = [line["step"] for line in _lines(seeding / "metrics.jsonl") if "dev/R@10" in line]
    assert evaluated == [0, 2, 4] and (seeding / "validation.png").is_file()
    assert run.summary["pretraining"]["best"]["step"] in evaluated
    assert model_fingerprint(seeding / "encoder") == model_fingerprint(seeding / "best")
    import yaml

    assert yaml.safe_load((seeding / "config.yaml").read_text())["data"]["corpus"] == [
        "../pairs/documents.jsonl"]  # the held-out documents are not pre-trained on (in the run: relative)
    assert yaml.safe_load((run.path / "config.yaml").read_text())["model"] == "pretrain"  # fine-tuned from it


def test_a_tracking_never_replaces_seedr_diagnose_s_output(tiny_model, untitled, watched, tmp_path):
    """A resumed or re-run adaptation that watches labels writes ``diagnostics.json`` at its end; the papers'
    diagnostics that ``seedr diagnose --out`` wrote there under that name are refused before training, and
    left as they were."""
    out = tmp_path / "run"
    out.mkdir()
    theirs = json.dumps({"metrics": {"alignment": 0.3}, "details": {}})
    (out / "diagnostics.json").write_text(theirs)
    with pytest.raises(DataError, match="is not a tracking of watched labels"):
        seedr.adapt(out, corpus=untitled, model=tiny_model, validation=24, dev_every=1, patience=0,
                    settings={**TINY, "train.max_steps": 1, "watch": watched})
    assert (out / "diagnostics.json").read_text() == theirs and not (out / "encoder").exists()


def test_a_refused_watch_or_model_is_refused_before_pairs_are_mined(tiny_model, untitled, watched, tmp_path):
    # both were refused by the fine-tuning, after pairs/ and config.yaml were written: the next plain run was
    # then told to --resume
    damaged = tmp_path / "watched.tsv"
    damaged.write_text("query-id\tcorpus-id\tscore\n1\t31715818\n")
    pickled = tmp_path / "pickled"
    shutil.copytree(tiny_model, pickled)
    (pickled / "model.safetensors").rename(pickled / "pytorch_model.bin")
    short = [item for key in ("query_max_length", "document_max_length")
             for item in ("--set", f"{key}={TINY[key]}")]
    watch = [item for key in ("queries", "corpus") for item in ("--set", f"watch.{key}={watched[key]}")]
    out = tmp_path / "adapted"
    for arguments, said in [(["--model", str(tiny_model), *watch, "--set", f"watch.qrels={damaged}"],
                             f"{damaged}, line 2: expected 3 tab-separated columns"),
                            (["--model", str(pickled)], "pytorch_model.bin: seedr loads safetensors only")]:
        result = runner.invoke(app, ["adapt", "--corpus", str(untitled), "--out", str(out), *short,
                                     *arguments])
        assert result.exit_code == 1 and said in result.output, result.output
        assert not out.exists()
