"""Evaluation tasks: the questions a run answers and how it is scored, one object per kind, as MTEB's
task objects are. ``seedr search`` reads its queries from one, ``seedr evaluate`` scores runs with it,
and every experiment does both through the same objects (``seedr.experiments.tasks`` adds how a
condition retrieves), so there is one path from a run to its figures.

- ``QrelsTask``: labelled queries, IR metrics of ``ir_measures`` (``nDCG@10``, ``R@100`` ...).
- ``ReqaTask`` (in ``seedr.evaluation.reqa``, with the ReQA metrics it reports): SQuAD's questions against
  its (sentence, paragraph) candidates (ICLR 2020 §4.1): ``R@k`` and ``MRR``.
- ``QaCoverageTask``: open-domain questions with answer strings against a passage collection: DPR's
  answer coverage ``Top-k`` (``seedr.evaluation.qa_coverage``).

Each gives ``queries()``, ``per_query(run)`` (``{metric: {qid: value}}``, what the paired significance
tests take) and ``chance(...)`` (each metric's expected value under a random ranking of the pool,
``seedr.evaluation.chance``). A metric deeper than the runs it scores (``deeper_than``) is left out
by the caller, not silently computed at the runs' depth.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from seedr.data.inputs import Sources
from seedr.data.queries import read_qrels, read_queries, sample_queries
from seedr.data.records import Document, Qrels, Run
from seedr.evaluation.chance import chance_levels, coverage_chance
from seedr.evaluation.metrics import parse_metric, per_query, query_counts
from seedr.evaluation.qa_coverage import (
    answer_passage_counts,
    coverage_per_question,
    first_hit_ranks,
    read_qa_file,
)

#: The answer-coverage metrics' form: ``Top-k``.
COVERAGE_PREFIX = "Top-"


class EvaluationTask:
    """What runs are scored against: the questions, their judgements and the metrics."""

    kind: str = ""
    #: What a run ranks, per what (messages: "the runs rank at most 5 documents a query").
    ranked: str = "documents a query"

    def __init__(self, metrics: Sequence[str]) -> None:
        self.metrics = list(metrics)
        if not self.metrics:
            raise ValueError(f"a {self.kind} task needs at least one metric")

    def queries(self) -> dict[str, str]:
        raise NotImplementedError

    def per_query(self, run: Run, show_progress: bool = False) -> dict[str, dict[str, float]]:
        """``{metric: {qid: value}}`` of ``run``; questions it does not answer score 0 (``show_progress``:
        a bar where scoring is slow, as answer coverage over many passages is)."""
        raise NotImplementedError

    def cutoff(self, metric: str) -> int:
        """The rank ``metric`` reads down to (0: none). On a run shallower than that it would silently
        equal its value at the run's depth, so callers leave it out (``deeper_than``)."""

        return parse_metric(metric).params.get("cutoff", 0)

    def deeper_than(self, depth: int) -> list[str]:
        """The metrics this task cannot report on runs ``depth`` documents deep."""
        return [metric for metric in self.metrics if self.cutoff(metric) > depth]


class QrelsTask(EvaluationTask):
    """IR metrics (``ir_measures`` names) of runs against relevance judgements (TREC or BEIR qrels)."""

    kind = "qrels"

    def __init__(self, qrels: str | Path, metrics: Sequence[str], queries: str | Path | None = None,
                 max_queries: int | None = None, seed: int = 13) -> None:
        super().__init__(metrics)
        for metric in self.metrics:
            try:
                parse_metric(metric)
            except Exception as error:  # ir_measures' own message says what is wrong
                raise ValueError(f"metric {metric!r}: {error}") from None
        self.qrels_path, self.queries_path = qrels, queries
        self.max_queries, self.seed = max_queries, seed

    @functools.cached_property
    def labels(self) -> Qrels:
        """The judgements of the queries this task evaluates (a seeded sample under ``max_queries``)."""

        qrels = read_qrels(self.qrels_path)
        if self.max_queries is not None and self.max_queries < len(qrels):
            chosen = sample_queries(list(qrels), count=self.max_queries, seed=self.seed)
            qrels = {qid: qrels[qid] for qid in sorted(chosen)}
        return qrels

    def queries(self) -> dict[str, str]:
        if self.queries_path is None:
            raise ValueError("this qrels task was made without its queries file")
        texts = read_queries(self.queries_path)
        return {qid: texts[qid] for qid in self.labels if qid in texts}

    def per_query(self, run: Run, show_progress: bool = False) -> dict[str, dict[str, float]]:
        return per_query(run, self.labels, self.metrics)

    def query_counts(self, run: Run) -> dict[str, int]:
        """Judged queries missing from ``run`` (scored 0) and unjudged ones in it (ignored)."""

        return query_counts(run, self.labels)

    def chance(self, pool: Collection[str], depth: int = 100) -> dict[str, float | None]:
        """Each metric's chance level over the document ids ``pool`` (runs ``depth`` deep)."""

        return chance_levels(self.metrics, pool, self.labels, depth)


def coverage_cutoffs(metrics: Sequence[str]) -> list[int]:
    """The k of each ``Top-k`` metric; a clear error for any other name."""
    bad = [m for m in metrics if not (m.startswith(COVERAGE_PREFIX) and m[len(COVERAGE_PREFIX):].isdigit())]
    if bad:
        raise ValueError(f"QA coverage reports Top-k (e.g. Top-20); not {bad}")
    cutoffs = [int(metric[len(COVERAGE_PREFIX):]) for metric in metrics]
    if min(cutoffs) < 1:
        raise ValueError(f"every k of Top-k must be at least 1, got {list(metrics)}")
    return cutoffs


class QaCoverageTask(EvaluationTask):
    """DPR's answer coverage: is an answer string in one of a question's top-k passages (``Top-k``)?

    ``passages`` maps the ids the runs rank to their passages (the whole pool, or only the passages
    the runs rank: ``seedr.evaluation.qa_coverage.ranked_passages``); the chance levels need the pool.
    ``include_title``: look for answers in titles too (default: text only, DPR's convention).
    """

    kind = "qa"
    ranked = "passages a question"

    def __init__(self, questions: Sources, metrics: Sequence[str] = ("Top-1", "Top-5", "Top-20", "Top-100"),
                 passages: Mapping[str, Document] | None = None,
                 include_title: bool = False, max_questions: int | None = None) -> None:
        super().__init__(metrics)
        self.cutoffs = coverage_cutoffs(self.metrics)
        self.questions, self.passages = questions, passages
        self.include_title, self.max_questions = include_title, max_questions

    @functools.cached_property
    def _questions(self) -> tuple[dict[str, str], dict[str, list[str]]]:
        questions, answers = read_qa_file(self.questions)
        kept = list(questions)[: self.max_questions]
        return {q: questions[q] for q in kept}, {q: answers[q] for q in kept}

    def queries(self) -> dict[str, str]:
        return self._questions[0]

    @property
    def answers(self) -> dict[str, list[str]]:
        return self._questions[1]

    def cutoff(self, metric: str) -> int:
        return int(metric[len(COVERAGE_PREFIX):])

    def per_query(self, run: Run, show_progress: bool = False) -> dict[str, dict[str, float]]:
        if self.passages is None:
            raise ValueError("QA coverage needs the passages the runs rank (passages=...)")
        first_hits = first_hit_ranks(run, self.passages, self.answers, max(self.cutoffs), self.include_title,
                                     show_progress=show_progress)
        values = coverage_per_question(first_hits, self.cutoffs)
        return {metric: values[metric] for metric in self.metrics}

    def chance(self, pool: Sequence[Document], depth: int = 100) -> dict[str, float | None]:
        """Each ``Top-k``'s chance level over the passage pool (a run holds ``depth`` ranks)."""

        counts = answer_passage_counts(pool, self.answers, self.include_title)
        cutoffs = {metric: min(k, depth) for metric, k in zip(self.metrics, self.cutoffs)}
        levels = coverage_chance(sorted(set(cutoffs.values())), len(pool), counts)
        return {metric: levels[f"Top-{k}"] for metric, k in cutoffs.items()}


__all__ = ["EvaluationTask", "QaCoverageTask", "QrelsTask", "coverage_cutoffs"]
