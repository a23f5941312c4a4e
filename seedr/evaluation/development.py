"""The development split a fusion is chosen on (``seedr.retrieval.fusion.select_fusion``): the ``Objective``
that scores a fused development run, the mean of one of seedr's metrics over the split's queries —
an IR metric against qrels (``qrels_objective``) or DPR's answer coverage (``qa_objective``) — built from
what ``seedr fuse`` is given (``development_objective``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from seedr.data.queries import read_qrels
from seedr.data.records import Document, Qrels, Run
from seedr.data.runs import check_run_queries
from seedr.evaluation.metrics import evaluate_run, parse_metric
from seedr.evaluation.qa_coverage import coverage_per_question, first_hit_ranks, ranked_passages, read_qa_file
from seedr.retrieval.fusion import Objective


def qrels_objective(qrels: Qrels, metric: str = "nDCG@10") -> Objective:
    """Mean of an IR metric over every judged query (``seedr.evaluation.metrics``: missing queries 0)."""
    parse_metric(metric)
    return Objective(metric, lambda run: evaluate_run(run, qrels, [metric])[metric])


def qa_objective(answers: dict[str, Sequence[str]], passages: dict[str, Document], metric: str = "Top-20",
                 include_title: bool = False) -> Objective:
    """DPR's answer coverage ``Top-k`` over the questions of ``answers`` (``seedr.evaluation.qa_coverage``)."""
    if not (metric.startswith("Top-") and metric[4:].isdigit() and int(metric[4:]) >= 1):
        raise ValueError(f"answer coverage is scored by Top-k (e.g. Top-20), not {metric!r}")
    k = int(metric[4:])

    def score(run: Run) -> float:
        hits = coverage_per_question(first_hit_ranks(run, passages, answers, k, include_title), [k])[metric]
        return float(np.mean(list(hits.values()))) if hits else 0.0

    return Objective(metric, score)


def development_objective(paths: Sequence[str | os.PathLike], runs: Sequence[Run], *,
                          qrels: str | os.PathLike | None = None, qa_answers: Any = None, corpus: Any = None,
                          qa_title: bool = False, metric: str | None = None
                          ) -> tuple[Objective, dict[str, Any], list[str]]:
    """The objective of a development split given as ``seedr evaluate`` takes one — ``qrels`` (metric
    default nDCG@10), or ``qa_answers`` with the passage ``corpus`` (default Top-20) — for the development
    runs ``runs`` read from ``paths``; what the split was, for the record; and warnings for runs whose
    questions cannot be checked.

    Raises:
        DataError: a QA development run was searched with other questions than ``qa_answers``'.
    """
    if (qrels is None) == (not qa_answers):
        raise ValueError("a development split is scored against qrels or QA answers: give one of them")
    if qrels is not None:
        return qrels_objective(read_qrels(qrels), metric or "nDCG@10"), {"qrels": str(qrels)}, []
    if not corpus:
        raise ValueError("QA answers need the passage corpus the runs rank")
    questions, answers = read_qa_file(qa_answers)
    given = ", ".join(map(str, qa_answers)) if isinstance(qa_answers, list | tuple) else str(qa_answers)
    warnings = [warning for path, run in zip(paths, runs, strict=True)
                if (warning := check_run_queries(path, questions, given, run))]
    passages = ranked_passages(runs, corpus, show_progress=True)
    split = {"qa_answers": [str(path) for path in (qa_answers if isinstance(qa_answers, list | tuple)
                                                   else [qa_answers])], "qa_title": qa_title}
    return qa_objective(answers, passages, metric or "Top-20", qa_title), split, warnings

__all__ = ["development_objective", "qa_objective", "qrels_objective"]
