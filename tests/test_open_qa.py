"""Open-domain QA at a budget (``seedr.data.open_qa``), on NQ-open's questions over real Wikipedia
passages (the first 300 articles of shard 00 as DPR's 100-word passages): the committed split, the
exhaustive answer scan against DPR's ``has_answer``, DPR-format training data, and a test pool that holds
an answer passage for every scored question and distractors from every run."""

from __future__ import annotations

import itertools
import json

import pytest

from seedr.data.articles import read_articles
from seedr.data.corpus import read_corpus
from seedr.data.open_qa import answer_passages_of, build_open_qa, read_split, split_questions, write_split
from seedr.data.passages import split_passages
from seedr.data.qa import read_dpr, read_nq_open
from seedr.data.training_sets import load_training_set
from seedr.evaluation.qa_coverage import has_answer
from seedr.io import DataError
from seedr.retrieval.bm25 import BM25Index


@pytest.fixture(scope="module")
def questions_path(shared_data):
    return shared_data / "nq-open" / "NQ-open.dev.jsonl"


@pytest.fixture(scope="module")
def questions(questions_path):
    return read_nq_open(questions_path)


@pytest.fixture(scope="module")
def passages(wiki_shard):
    return list(split_passages(itertools.islice(read_articles(wiki_shard), 300), 100))


@pytest.fixture(scope="module")
def bm25_run(passages, questions):
    index = BM25Index.build(passages)
    return index.search({example.id: example.question for example in questions}, k=100)


def test_split_is_fixed_disjoint_and_bound_to_its_questions_file(questions, questions_path, tmp_path):
    split = split_questions(questions, 1000, seed=0)
    assert split == split_questions(questions, 1000, seed=0) != split_questions(questions, 1000, seed=1)
    assert len(split["test"]) == 1000 and len(split["train"]) == len(questions) - 1000
    assert not set(split["train"]) & set(split["test"])
    path = write_split(tmp_path / "split.json", questions_path, split, seed=0)
    assert read_split(path, questions_path, questions) == split
    other = tmp_path / "NQ-open.dev.jsonl"
    other.write_text(questions_path.read_text(encoding="utf-8").replace("who", "whom", 1), encoding="utf-8")
    with pytest.raises(DataError, match="another questions file") as refused:
        read_split(path, other, read_nq_open(other))
    assert refused.value.field == "sha256"
    with pytest.raises(ValueError, match="test_questions must be between"):
        split_questions(questions, len(questions), seed=0)


def test_answer_scan_finds_exactly_what_has_answer_accepts(questions, passages):
    few = passages[:600]
    text = " ".join(passage.text for passage in few).lower()
    likely = [example for example in questions if example.answers[0].lower() in text][:20]  # hits to check
    some = likely + questions[:20]
    found = answer_passages_of(some, few)
    expected = {example.id: [p.id for p in few if has_answer(example.answers, p.text)] for example in some}
    assert found == expected
    assert sum(map(len, found.values())) > 0  # the check is not vacuous


def test_built_folder_trains_as_dpr_and_pools_an_answer_for_every_scored_question(
        questions, questions_path, passages, bm25_run, tmp_path):
    split = split_questions(questions, 600, seed=0)
    summary = build_open_qa(tmp_path / "nq", questions, split, passages, bm25_run,
                            {"other": {qid: dict(itertools.islice(ranked.items(), 50, 100))
                                       for qid, ranked in bm25_run.items()}},
                            depth=100, positives=2, hard_negatives=5, answer_passages=3, run_depth=10,
                            random_passages=200, seed=0)
    folder = tmp_path / "nq"
    pool = {p.id: p for p in read_corpus(folder / "pool" / "corpus.jsonl")}
    scored = read_nq_open(folder / "test.jsonl")
    assert summary.test_scored == len(scored) > 0 and summary.pool_passages == len(pool)
    assert {example.id for example in scored} <= set(split["test"])
    in_pool = answer_passages_of(scored, pool.values())  # exact: see the test above
    for example in scored:  # an answer passage for every scored question, and both runs' top 10
        assert any(has_answer(example.answers, pool[pid].text) for pid in in_pool[example.id])
        top = sorted(bm25_run[example.id].items(), key=lambda item: -item[1])
        assert {pid for pid, _ in top[:10]} | {pid for pid, _ in top[50:60]} <= pool.keys()
    by_id = {example.id: example for example in questions}
    unscored = sorted(set(split["test"]) - {example.id for example in scored})[:5]
    assert not any(has_answer(by_id[qid].answers, p.text) for qid in unscored for p in passages)

    training = read_dpr(folder / "train.json")
    assert len(training) == summary.train_with_positive > 0
    train_questions = {by_id[qid].question for qid in split["train"]}
    for example in training:
        assert example.question in train_questions
        assert len(example.positives) in (1, 2) and len(example.hard_negatives) <= 5
        assert all(has_answer(example.answers, p.text) for p in example.positives)
        assert not any(has_answer(example.answers, p.text) for p in example.hard_negatives)
    assert len(load_training_set(folder / "train.json").queries) == len(training)
    assert json.loads((folder / "open_qa.json").read_text())["runs"] == ["bm25", "other"]


def test_refuses_runs_over_another_corpus(questions, passages, bm25_run, tmp_path):
    split = split_questions(questions, 600, seed=0)
    stray = {qid: {"not-a-passage": 1.0} for qid in split["test"]}
    with pytest.raises(ValueError, match="not in the corpus"):
        build_open_qa(tmp_path / "nq", questions, split, passages, bm25_run, {"stray": stray}, random_passages=0)
    assert not (tmp_path / "nq").exists()


def test_prepare_open_qa_from_files(questions_path, passages, bm25_run, tmp_path):
    """``seedr prepare --open-qa``: the split is made and written on first use, then read back."""
    from typer.testing import CliRunner

    from seedr.cli import app
    from seedr.data.corpus import write_corpus
    from seedr.data.runs import write_trec_run

    write_corpus(tmp_path / "passages" / "corpus.jsonl", passages)
    write_trec_run(tmp_path / "bm25.trec", bm25_run)
    arguments = ["prepare", "--open-qa", str(questions_path), "--corpus", str(tmp_path / "passages"),
                 "--split", str(tmp_path / "split.json"), "--test-questions", "500", "--bm25-run",
                 str(tmp_path / "bm25.trec"), "--pool-random", "100"]
    result = CliRunner().invoke(app, [*arguments, "--out", str(tmp_path / "nq")])
    assert result.exit_code == 0, result.output
    made = json.loads((tmp_path / "split.json").read_text())
    assert len(made["test"]) == 500 and (tmp_path / "nq" / "pool" / "corpus.jsonl").exists()
    again = CliRunner().invoke(app, [*arguments, "--seed", "7", "--out", str(tmp_path / "nq2")])
    assert again.exit_code == 0, again.output
    assert json.loads((tmp_path / "split.json").read_text()) == made  # an existing split is read, not remade
    assert (tmp_path / "nq" / "test.jsonl").read_text() == (tmp_path / "nq2" / "test.jsonl").read_text()
    missing = CliRunner().invoke(app, ["prepare", "--open-qa", str(questions_path), "--out", str(tmp_path / "x")])
    assert missing.exit_code != 0 and "--open-qa needs" in missing.output


def test_the_experiment_step_builds_from_the_committed_split(questions_path, passages, tmp_path):
    """``open_qa`` in an experiment's setup: the committed NQ-open split, BM25 made by the step itself."""
    from pathlib import Path

    from seedr.data.corpus import write_corpus
    from seedr.experiments.steps import STEPS, shipped_split

    write_corpus(tmp_path / "passages.jsonl", passages[:1500])
    assert Path(shipped_split("nq-open-dev")).is_file() and shipped_split("my/split.json") == "my/split.json"
    step = STEPS.get("open_qa")({"questions": str(questions_path), "passages": [str(tmp_path / "passages.jsonl")],
                                 "split": "nq-open-dev", "random_passages": 50, "run_depth": 5}, "test")
    step.validate()
    summary = step.run(tmp_path / "nq")
    assert summary["train_questions"] == 2610 and summary["test_questions"] == 1000
    assert 0 < summary["test_scored"] == len(read_nq_open(tmp_path / "nq" / "test.jsonl"))
    assert step.product(tmp_path / "nq") == str(tmp_path / "nq")
    with pytest.raises(ValueError, match="split is required"):
        STEPS.get("open_qa")({"questions": str(questions_path), "passages": ["x"]}, "test").validate()
