"""Ranking metrics of a run against graded relevance judgments, computed by ``ir_measures``.

Metric names are ``ir_measures`` names, with the field's usual aliases accepted: ``MRR@10`` (= RR@10,
MS MARCO passage's official metric), ``MRR@100`` (MS MARCO document), ``R@k``/``Recall@k`` (recall:
relevant documents in the top k over all relevant ones), ``nDCG@10`` (BEIR; trec_eval's nDCG with
linear gains, the judged grade as gain), ``MAP``/``AP``, ``Success@k``, ``P@k``. Binary metrics count
a document relevant when its grade is at least 1; write ``R(rel=2)@1000`` for TREC DL's convention
(grade ≥ 2). Results are keyed by the names given.

Conventions (they change published numbers, so they are fixed and stated):

* Every query in the qrels counts; one the run does not answer scores 0 on every metric (as
  ``trec_eval -c``). Queries of the run without judgments are ignored. A query whose judgments are all
  0 stays in, scoring 0.
* Ranking ties are broken by document id, ascending, for every metric (``seedr.data.runs``):
  each query's scores are replaced by their ranks before evaluation. (Left alone, ``ir_measures``
  would break ties one way for RR — MS MARCO's script, id ascending — and the other way for the
  trec_eval metrics.)
"""

from __future__ import annotations

from collections.abc import Sequence

import ir_measures
import numpy as np

from seedr.config.settings import FinetuneConfig
from seedr.data.records import Qrels, Run
from seedr.data.runs import rank_documents
from seedr.evaluation import DEFAULT_METRICS


def parse_metric(name: str) -> ir_measures.Measure:
    """The ``ir_measures`` measure for a metric name (``ValueError`` naming the bad one)."""
    try:
        return ir_measures.parse_measure(name)
    except (ValueError, NameError, TypeError, SyntaxError, AttributeError) as error:
        examples = ", ".join(DEFAULT_METRICS)
        raise ValueError(f"unknown metric {name!r} ({error}); examples: {examples}") from None


def run_depth(run: Run) -> int:
    """How many documents the run ranks for a query, at most (``seedr search --k``)."""
    return max((len(scores) for scores in run.values()), default=0)


def deeper_than(metrics: Sequence[str], depth: int) -> list[str]:
    """The metrics whose cutoff is beyond ``depth``: on a run that ranks ``depth`` documents, R@1000
    silently equals R@``depth``, so they are not to be reported as if measured at their cutoff."""
    return [name for name in metrics if parse_metric(name).params.get("cutoff", 0) > depth]


def check_dev_metrics(config: FinetuneConfig) -> None:
    """Refuse dev metrics that go deeper than the documents retrieved per dev query: R@1000 on a top 100
    would silently equal R@100 (``deeper_than``). A check of the settings, made when they are resolved
    (``seedr.api.resolve_settings``) and again when a fine-tuning starts."""
    too_deep = deeper_than(config.dev_metrics, config.dev_depth)
    if too_deep:
        raise ValueError(f"dev_metrics {', '.join(too_deep)} go deeper than the {config.dev_depth} documents "
                         f"retrieved per dev query: raise dev_depth or drop them")


def rank_scores(run: Run) -> Run:
    """The same rankings with scores replaced by strictly decreasing rank scores (no ties left).

    Document at rank r of n gets score n − r + 1, in seedr's order (score descending, id ascending).
    """
    return {qid: {doc: float(len(scores) - rank) for rank, (doc, _) in enumerate(rank_documents(scores))}
            for qid, scores in run.items()}


def per_query(run: Run, qrels: Qrels,
              metrics: Sequence[str] = DEFAULT_METRICS) -> dict[str, dict[str, float]]:
    """``{metric: {qid: value}}`` for every query of ``qrels`` (missing from the run → 0)."""
    measures = {name: parse_metric(name) for name in metrics}
    names_of = {}
    for name, measure in measures.items():
        names_of.setdefault(measure, []).append(name)
    judged = {qid: scores for qid, scores in rank_scores(run).items() if qid in qrels and scores}
    values = {name: dict.fromkeys(qrels, 0.0) for name in metrics}
    if judged:
        for result in ir_measures.iter_calc(list(names_of), qrels, judged):
            for name in names_of[result.measure]:
                values[name][result.query_id] = float(result.value)
    return values


def evaluate_run(run: Run, qrels: Qrels, metrics: Sequence[str] = DEFAULT_METRICS) -> dict[str, float]:
    """Mean of each metric over all queries of ``qrels`` (see the module docstring's conventions)."""
    return {name: float(np.mean(list(by_query.values()))) if by_query else 0.0
            for name, by_query in per_query(run, qrels, metrics).items()}


def query_counts(run: Run, qrels: Qrels) -> dict[str, int]:
    """How many queries are judged, answered by the run, missing from it (scored 0), or unjudged (ignored)."""
    answered = {qid for qid, scores in run.items() if scores}
    return {"judged": len(qrels), "evaluated": len(answered & set(qrels)),
            "missing_from_run": len(set(qrels) - answered), "unjudged_in_run": len(answered - set(qrels))}
