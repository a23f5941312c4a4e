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

Beside a run, ``seedr search`` writes ``<run>.json`` (``write_run_and_record``): the files its queries came
from and a fingerprint of their ids and texts, so that ``seedr evaluate`` can refuse to score the run
against other questions (NQ-open's question ids are line numbers: any question file has the same ids).
The record also holds the fingerprint of the run itself (``run_fingerprint``). The two are written as one
unit (a failed write leaves neither), the record moved into place first: a command killed between the two
moves, or a run file copied over another, leaves a record that describes another ranking than the file,
which ``read_run_record`` refuses. The run file itself stays
plain TREC, readable by every tool.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

import numpy as np

from seedr.data.records import Run
from seedr.io import DataError, atomic_files, atomic_write, iter_lines, read_json


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


def run_tag(name: str, fallback: str = "seedr") -> str:
    """A TREC run tag made from a name (a folder's, for a default tag): whitespace becomes ``_``, so
    ``idx dir`` gives ``idx_dir``; an empty name gives ``fallback``."""
    return "_".join(name.split()) or fallback


def write_trec_run(path: str | os.PathLike, run: Run, tag: str = "seedr", k: int | None = None) -> int:
    """Write ``run`` as ``qid Q0 docid rank score tag`` lines, ranks from 1 in seedr's rank order.

    Queries are written in sorted id order; scores with ``repr`` so reading the file back gives the
    same floats (rounding scores would create ties that were not there). ``k`` keeps the top k of
    each query. Written atomically; returns the number of lines.
    """
    _check_token(tag, "tag")
    with atomic_write(path) as stream:
        return _write_run_lines(stream, run, tag, k)


def _write_run_lines(stream: IO[str], run: Run, tag: str, k: int | None = None) -> int:
    """``write_trec_run``'s lines, to an open stream; returns their number."""
    lines = 0
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



def run_record_path(run_path: str | os.PathLike) -> Path:
    """Where the record of a run's queries lies: ``<run file>.json`` (``bm25.trec`` → ``bm25.trec.json``)."""
    return Path(f"{os.fspath(run_path)}.json")


def read_run_record(run_path: str | os.PathLike, run: Run | None = None) -> dict | None:
    """The record beside a run (``<run>.json``), or ``None`` when there is none, checked to describe the run
    file: the fingerprint it records (``"run": {"sha256"}``) must be the file's ``run_fingerprint`` (``run``:
    the file as already read, which spares reading it again). A record without one, written by an older
    seedr, is returned unchecked.

    Raises:
        DataError: the record is not a JSON object, or describes another ranking than the run file (a
            ``search`` or ``fuse`` killed between its two writes, a run file copied over another).
    """
    path = run_record_path(run_path)
    if not path.exists():
        return None
    record = read_json(path)
    if not isinstance(record, dict):
        raise DataError(path, "expected a JSON object: the record of a run's queries")
    recorded = record.get("run")
    if recorded is None:
        return record
    if not isinstance(recorded, dict) or not isinstance(recorded.get("sha256"), str):
        raise DataError(path, "expected an object holding the run's fingerprint ('sha256')", field="run")
    if recorded["sha256"] != run_fingerprint(read_trec_run(run_path) if run is None else run):
        raise DataError(run_path, f"the run file changed since its record {path.name} was written: the record "
                                  "describes another ranking (a search or fuse cut short between its two writes, or "
                                  "another run copied over this one); search or fuse again, or delete "
                                  f"{path.name} to use the run unchecked")
    return record


def recorded_queries(record: dict | None, run_path: str | os.PathLike) -> dict | None:
    """The ``queries`` of a run's record (``read_run_record``): ``None`` when it records none (no record,
    or a fused run of runs that recorded none); a ``DataError`` naming the record when it is malformed."""
    queries = (record or {}).get("queries")
    if queries is None:
        return None
    if not isinstance(queries, dict) or not isinstance(queries.get("sha256"), str):
        raise DataError(run_record_path(run_path), "expected an object with the queries' fingerprint ('sha256')",
                        field="queries")
    return queries


def describe_queries(queries: dict) -> str:
    """``12 from a.jsonl, b.jsonl``: how many queries a queries record names, and from where, for messages."""
    files = queries.get("files")
    named = ", ".join(map(str, files)) if isinstance(files, list) and files else "unknown files"
    return f"{queries.get('count', '?')} from {named}"


def run_fingerprint(run: Run) -> str:
    """sha256 of a run's rankings (query, document, score; in seedr's rank order): the same for any file
    that reads back as the same run, whatever its tag, ranks or compression."""
    digest = hashlib.sha256()
    for qid in sorted(run):
        for doc, score in rank_documents(run[qid]):
            digest.update(f"{qid}\t{doc}\t{float(score)!r}\n".encode())
    return digest.hexdigest()


def queries_fingerprint(queries: Mapping[str, str]) -> str:
    """sha256 of the queries' ids and texts, in id order: the same for any copy of the same questions."""
    digest = hashlib.sha256()
    for qid in sorted(queries):
        digest.update(f"{qid}\t{queries[qid]}\n".encode())
    return digest.hexdigest()


def queries_record(queries: Mapping[str, str], kind: str, files: Sequence[str | os.PathLike]) -> dict:
    """What a run's record says of the queries it answers (``kind``: queries, questions, reqa): the files
    they came from, their number and ``queries_fingerprint``."""
    return {"queries": {"kind": kind, "files": [str(path) for path in files], "count": len(queries),
                        "sha256": queries_fingerprint(queries)}}


def write_run_and_record(path: str | os.PathLike, run: Run, record: Mapping[str, object],
                         tag: str = "seedr") -> tuple[int, Path]:
    """Write ``run`` as a TREC file and ``record`` beside it (``<run>.json``) as one unit (``atomic_files``):
    ids the file cannot hold are refused before either is written, and a failed write (a full disk) leaves
    neither, nor any change to those already there. The record, completed with the run's fingerprint, is
    moved into place first, then the run: a kill between the two moves leaves the old run under the new
    record, which ``read_run_record`` refuses. Returns the run's number of lines and the record's path."""
    _check_token(tag, "tag")
    for qid, scores in run.items():
        _check_token(qid, "query id")
        for doc in scores:
            _check_token(doc, "document id")
    record_path = run_record_path(path)
    with atomic_files() as files:
        with files.write(record_path) as stream:
            json.dump({**record, "run": {"sha256": run_fingerprint(run)}}, stream, indent=2)
        with files.write(path) as stream:
            lines = _write_run_lines(stream, run, tag)
    return lines, record_path


def check_run_queries(run_path: str | os.PathLike, queries: Mapping[str, str], given: str,
                      run: Run | None = None) -> str | None:
    """Check that the run at ``run_path`` was searched with ``queries`` (read from ``given``); ``run`` is the
    file as already read, if it is (``read_run_record`` checks the record against it).

    Returns a warning when the run has no record (made by another tool, or by an older seedr), ``None``
    when it matches.

    Raises:
        DataError: the run records other queries — scoring it would compare answers to the wrong questions —
            or its record describes another ranking than the file.
    """
    path = run_record_path(run_path)
    record = read_run_record(run_path, run)
    if record is None:
        return f"{run_path}: no {path.name} beside it, so it cannot be checked against {given}"
    recorded = recorded_queries(record, run_path)
    if recorded is None:  # a fused run of runs that did not record theirs (seedr.retrieval.fusion)
        return f"{run_path}: {path.name} records no queries, so it cannot be checked against {given}"
    if recorded["sha256"] != queries_fingerprint(queries):
        raise DataError(run_path, f"the run was searched with other {recorded.get('kind', 'queries')} "
                                  f"({describe_queries(recorded)}) than the {len(queries)} of "
                                  f"{given}; score it against the questions it was searched with")
    return None
