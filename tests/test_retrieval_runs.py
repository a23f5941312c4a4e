"""TREC run files: round trip on a real BM25 run, bad lines, the BEIR identical-id option."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from seedr.data.corpus import read_corpus
from seedr.data.queries import read_queries
from seedr.data.runs import (
    ignore_identical_ids,
    rank_documents,
    read_trec_run,
    run_from_topk,
    truncate_run,
    write_trec_run,
)
from seedr.io import DataError
from seedr.retrieval.bm25 import BM25Index


@pytest.fixture(scope="module")
def bm25_run(shared_data: Path):
    folder = shared_data / "scifact"
    queries = dict(list(read_queries(folder / "queries.jsonl").items())[:50])
    return BM25Index.build(read_corpus(folder / "corpus.jsonl")).search(queries, k=100)


def test_round_trip_keeps_every_score_exactly(tmp_path, bm25_run):
    path = tmp_path / "bm25.trec"
    lines = write_trec_run(path, bm25_run, tag="bm25")
    assert lines == sum(len(scores) for scores in bm25_run.values())
    assert read_trec_run(path) == bm25_run
    first = path.read_text().splitlines()[0].split()
    assert first[1] == "Q0" and first[3] == "1" and first[5] == "bm25"


def test_ranks_follow_score_then_document_id(tmp_path, bm25_run):
    path = tmp_path / "bm25.trec"
    write_trec_run(path, bm25_run, k=10)
    by_query: dict[str, list[tuple[int, str, float]]] = {}
    for line in path.read_text().splitlines():
        qid, _, doc, rank, score, _ = line.split()
        by_query.setdefault(qid, []).append((int(rank), doc, float(score)))
    for qid, rows in by_query.items():
        assert [rank for rank, _, _ in rows] == list(range(1, len(rows) + 1))
        assert [(doc, score) for _, doc, score in rows] == rank_documents(bm25_run[qid])[:10]
    assert read_trec_run(path) == truncate_run(bm25_run, 10)


@pytest.mark.parametrize("line, message", [
    ("1 Q0 4983 1 12.5", "expected 6 columns"),
    ("1 Q0 4983 1 high run", "not a number"),
    ("1 Q0 4983 first 12.5 run", "not an integer"),
    ("1 Q0 4983 1 nan run", "not finite"),
])
def test_bad_lines_name_the_line(tmp_path, line, message):
    path = tmp_path / "bad.trec"
    path.write_text(f"1 Q0 5 1 13.0 run\n{line}\n")
    with pytest.raises(DataError, match=message) as error:
        read_trec_run(path)
    assert error.value.line == 2


def test_duplicate_documents_are_an_error(tmp_path):
    path = tmp_path / "dup.trec"
    path.write_text("1 Q0 5 1 13.0 run\n1 Q0 5 2 12.0 run\n")
    with pytest.raises(DataError, match="listed twice"):
        read_trec_run(path)


def test_unwritable_ids_are_refused_and_nothing_is_left(tmp_path):
    path = tmp_path / "run.trec"
    with pytest.raises(ValueError, match="whitespace"):
        write_trec_run(path, {"1": {"doc one": 1.0}})
    assert list(tmp_path.iterdir()) == []


def test_run_from_topk_drops_padding():
    run = run_from_topk(["q1", "q2"], np.array([[2.0, 1.0], [3.0, -np.inf]]), [["a", "b"], ["c", ""]])
    assert run == {"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 3.0}}


def test_ignore_identical_ids():
    run = {"7": {"7": 9.0, "8": 1.0}, "9": {"8": 2.0}}
    assert ignore_identical_ids(run) == {"7": {"8": 1.0}, "9": {"8": 2.0}}
