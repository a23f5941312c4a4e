"""TREC run files — the format every stage after ``search`` reads — and the ranking conventions of seedr.

A run is ``{qid: {docid: score}}`` (``seedr.data.records.Run``). Its ranking is implicit: documents in
order of score, highest first, ties broken by document id (ascending). That one order is used
everywhere — when a run file is written (the ``rank`` column), by every metric
(``seedr.evaluation.metrics``), by answer coverage and by ReQA — so that an exact score tie can never
rank a document differently in two places. (``trec_eval`` itself breaks ties by document id
*descending* and ignores the rank column; MS MARCO's script breaks them ascending. Lin & Yang, "The
Impact of Score Ties on Repeatability in Document Ranking", SIGIR 2019, show such differences move
published figures; fixing one order removes them.)

A line of a run file is ``qid Q0 docid rank score tag`` (TREC; also what Anserini, Pyserini and
``trec_eval`` read and write).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from seedr.data.io import DataError, atomic_write, iter_lines
from seedr.data.records import Run


def rank_documents(scores: dict[str, float]) -> list[tuple[str, float]]:
    """``(docid, score)`` of one query in rank order: score descending, then document id ascending."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def id_ranks(ids: Sequence[str]) -> np.ndarray:
    """Each id's position in sorted order: the integer form of the tie-breaker of seedr's rank order."""
    return np.argsort(np.argsort(np.asarray(ids, dtype=str), kind="stable")).astype(np.int64)


def truncate_run(run: Run, k: int) -> Run:
    """Keep each query's top ``k`` documents (in rank order)."""
    return {qid: dict(rank_documents(scores)[:k]) for qid, scores in run.items()}


def run_from_topk(qids: Sequence[str], scores: np.ndarray | Sequence[Sequence[float]],
                  ids: Sequence[Sequence[str]]) -> Run:
    """A run from per-query top-k results: ``scores`` (Q, k) and ``ids`` (Q lists of k document ids).

    Padding entries (id ``None`` or ``""``, as faiss leaves when fewer than k documents exist) are dropped.
    """
    if len(qids) != len(scores) or len(qids) != len(ids):
        raise ValueError(f"{len(qids)} query ids, {len(scores)} score rows and {len(ids)} id rows differ")
    return {str(qid): {str(doc): float(score) for doc, score in zip(row_ids, row_scores) if doc}
            for qid, row_scores, row_ids in zip(qids, scores, ids)}


def ignore_identical_ids(run: Run) -> Run:
    """Drop documents whose id equals their query's id.

    BEIR's evaluation option ``ignore_identical_ids`` (on by default there): in datasets where queries
    are also documents (ArguAna, Quora, CQADupStack) a system finds the query itself, which is never
    judged relevant. seedr leaves it off unless asked, and says so in the stage output.
    """
    return {qid: {doc: score for doc, score in scores.items() if doc != qid} for qid, scores in run.items()}


def _check_token(value: str, what: str) -> None:
    if not value or any(c.isspace() for c in value):
        raise ValueError(f"{what} {value!r} cannot be written to a TREC run: it is empty or has whitespace")


def write_trec_run(path: str | os.PathLike, run: Run, tag: str = "seedr", k: int | None = None) -> int:
    """Write ``run`` as ``qid Q0 docid rank score tag`` lines, ranks from 1 in seedr's rank order.

    Queries are written in sorted id order; scores with ``repr`` so reading the file back gives the
    same floats (rounding scores would create ties that were not there). ``k`` keeps the top k of
    each query. Written atomically; returns the number of lines.
    """
    _check_token(tag, "tag")
    lines = 0
    with atomic_write(path) as stream:
        for qid in sorted(run):
            _check_token(qid, "query id")
            ranked = rank_documents(run[qid])
            for rank, (doc, score) in enumerate(ranked[:k] if k is not None else ranked, start=1):
                _check_token(doc, "document id")
                stream.write(f"{qid} Q0 {doc} {rank} {float(score)!r} {tag}\n")
                lines += 1
    return lines


def read_trec_run(path: str | os.PathLike) -> Run:
    """Read a TREC run file (six whitespace-separated columns); the rank column is checked, not used.

    Raises ``DataError`` naming the line for a wrong column count, a non-numeric rank or score, or a
    document listed twice for the same query.
    """
    run: Run = {}
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        columns = line.split()
        if len(columns) != 6:
            raise DataError(path, f"expected 6 columns 'qid Q0 docid rank score tag', found {len(columns)}",
                            line=number)
        qid, _, doc, rank, score, _ = columns
        try:
            int(rank)
        except ValueError:
            raise DataError(path, f"rank {rank!r} is not an integer", line=number, field="rank") from None
        try:
            value = float(score)
        except ValueError:
            raise DataError(path, f"score {score!r} is not a number", line=number, field="score") from None
        if not np.isfinite(value):
            raise DataError(path, f"score {score!r} is not finite", line=number, field="score")
        scores = run.setdefault(qid, {})
        if doc in scores:
            raise DataError(path, f"document {doc!r} is listed twice for query {qid!r}", line=number,
                            field="docid")
        scores[doc] = value
    return run

