"""The development split a fusion is chosen on (``seedr.retrieval.fusion.select_fusion``), given as
``seedr fuse`` takes it: the evaluation task (``seedr.evaluation.tasks``) that scores a fused development
run — an IR metric against qrels, or DPR's answer coverage — the very task ``seedr evaluate`` would score it
with, so that the mean a fusion is chosen by is the mean ``seedr evaluate`` reports
(``seedr.pipeline.fuse.task_objective``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from seedr.data.records import Run
from seedr.data.runs import check_run_queries
from seedr.evaluation.qa_coverage import ranked_passages
from seedr.evaluation.tasks import EvaluationTask, QaCoverageTask, QrelsTask


def development_task(paths: Sequence[str | os.PathLike], runs: Sequence[Run], *,
                     qrels: str | os.PathLike | None = None, qa_answers: Any = None, corpus: Any = None,
                     qa_title: bool = False, metric: str | None = None
                     ) -> tuple[EvaluationTask, str, dict[str, Any], list[str]]:
    """The task of a development split given as ``seedr evaluate`` takes one — ``qrels`` (metric default
    nDCG@10), or ``qa_answers`` with the passage ``corpus`` (default Top-20) — for the development runs
    ``runs`` read from ``paths``; the metric it is scored by; what the split was, for the record; and
    warnings for runs whose questions cannot be checked.

    Raises:
        DataError: a QA development run was searched with other questions than ``qa_answers``'.
    """
    if (qrels is None) == (not qa_answers):
        raise ValueError("a development split is scored against qrels or QA answers: give one of them")
    if qrels is not None:
        metric = metric or "nDCG@10"
        return QrelsTask(qrels, [metric]), metric, {"qrels": str(qrels)}, []
    if not corpus:
        raise ValueError("QA answers need the passage corpus the runs rank")
    metric = metric or "Top-20"
    task = QaCoverageTask(qa_answers, [metric], include_title=qa_title)
    given = ", ".join(map(str, qa_answers)) if isinstance(qa_answers, list | tuple) else str(qa_answers)
    warnings = [warning for path, run in zip(paths, runs, strict=True)
                if (warning := check_run_queries(path, task.queries(), given, run))]
    task.passages = ranked_passages(runs, corpus, show_progress=True)
    split = {"qa_answers": [str(path) for path in (qa_answers if isinstance(qa_answers, list | tuple)
                                                   else [qa_answers])], "qa_title": qa_title}
    return task, metric, split, warnings


__all__ = ["development_task"]
