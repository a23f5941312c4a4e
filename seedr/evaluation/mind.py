"""MIND news-recommendation metrics (Wu et al., ACL 2020), exactly as the official scorer.

The official ``evaluate.py`` (github.com/msnews/MIND) scores each impression — the news shown to a
user at one time, clicked (1) or not (0) — and averages over impressions:

* AUC: ``sklearn.metrics.roc_auc_score`` of clicks vs scores. Here computed with the equivalent
  Mann–Whitney rank formula (average ranks for ties), so sklearn is not needed;
* MRR: ``mrr_score`` — the mean over clicked items of 1 / rank (so an impression with two clicks at
  ranks 1 and 3 scores (1 + 1/3) / 2, unlike IR's reciprocal rank of the first hit);
* nDCG@5, nDCG@10: ``ndcg_score`` — DCG with gains 2^y − 1 and discounts log2(rank + 1) over the top
  k, divided by the DCG of the ideal order.

Items are ranked by ``np.argsort(scores)[::-1]`` as in the official script (it only sees ranks, so
ties cannot arise there; with raw scores, tied items keep that deterministic numpy order).
Impressions without labels (MIND's test set) are skipped; an impression with no scores is scored as
if all its items tied (the official script fills a missing line with rank 1 for every item).

``MindTask`` scores TREC runs that rerank impressions (``seedr evaluate RUN --mind behaviors.tsv``): a run's
query ids are impression ids, its documents their candidate news; a candidate the run leaves out ranks last.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import functools
import itertools
import os

import numpy as np
from scipy.stats import rankdata

from seedr.data.mind import Impression, read_behaviors
from seedr.data.records import Run
from seedr.evaluation.tasks import EvaluationTask

MIND_METRICS = ("AUC", "MRR", "nDCG@5", "nDCG@10")


class _Impression(Protocol):
    id: Any
    labels: Sequence[int] | None


def auc_score(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve = P(score of a random click > score of a random non-click), ties ½."""
    positives = int(labels.sum())
    negatives = len(labels) - positives
    if positives == 0 or negatives == 0:
        raise ValueError("AUC is undefined for an impression whose items are all clicked or all not clicked")
    ranks = rankdata(scores)  # average ranks: a tie counts one half
    return float((ranks[labels == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def dcg_score(labels: np.ndarray, scores: np.ndarray, k: int) -> float:
    order = np.argsort(scores)[::-1]
    gains = 2 ** np.take(labels, order[:k]) - 1
    discounts = np.log2(np.arange(len(gains)) + 2)
    return float(np.sum(gains / discounts))


def ndcg_score(labels: np.ndarray, scores: np.ndarray, k: int) -> float:
    return dcg_score(labels, scores, k) / dcg_score(labels, labels, k)


def mrr_score(labels: np.ndarray, scores: np.ndarray) -> float:
    """Mean over the clicked items of 1 / their rank."""
    ranked = np.take(labels, np.argsort(scores)[::-1])
    return float(np.sum(ranked / (np.arange(len(ranked)) + 1)) / np.sum(ranked))


def impression_metrics(scores: dict[Any, Sequence[float]], impressions: Iterable[_Impression]
                       ) -> dict[str, dict[str, float]]:
    """``{metric: {impression id: value}}`` for every labelled impression."""
    values: dict[str, dict[str, float]] = {name: {} for name in MIND_METRICS}
    for impression in impressions:
        if not impression.labels:
            continue
        labels = np.asarray(impression.labels, dtype=np.float64)
        predicted = scores.get(impression.id)
        predicted = np.ones(len(labels)) if predicted is None else np.asarray(predicted, dtype=np.float64)
        if predicted.shape != labels.shape:
            raise ValueError(f"impression {impression.id!r}: {len(predicted)} scores for {len(labels)} items")
        key = str(impression.id)
        try:
            values["AUC"][key] = auc_score(labels, predicted)
        except ValueError as error:
            raise ValueError(f"impression {impression.id!r}: {error}") from None
        values["MRR"][key] = mrr_score(labels, predicted)
        values["nDCG@5"][key] = ndcg_score(labels, predicted, 5)
        values["nDCG@10"][key] = ndcg_score(labels, predicted, 10)
    return values


def evaluate_impressions(scores: dict[Any, Sequence[float]],
                         impressions: Iterable[_Impression]) -> dict[str, float]:
    """AUC, MRR, nDCG@5, nDCG@10 averaged over labelled impressions, plus their count ``impressions``."""
    values = impression_metrics(scores, impressions)
    count = len(values["AUC"])
    if count == 0:
        raise ValueError("no labelled impressions to evaluate")
    return {**{name: float(np.mean(list(by_impression.values()))) for name, by_impression in values.items()},
            "impressions": count}


def run_scores(run: Run, impressions: Iterable[Impression]) -> dict[str, list[float]]:
    """Each impression's candidate scores, in the impression's order, from a run that reranks them; a
    candidate the run does not rank scores below every one it ranks, an impression it does not answer is
    left out (scored as all tied, ``impression_metrics``)."""
    scores = {}
    for impression in impressions:
        ranked = run.get(impression.id)
        if not ranked:
            continue
        last = min(ranked.values()) - 1.0
        scores[impression.id] = [ranked.get(candidate, last) for candidate in impression.candidates]
    return scores


class MindTask(EvaluationTask):
    """MIND's impressions (``behaviors.tsv``) scored by AUC, MRR, nDCG@5 and nDCG@10 over each impression's
    candidates, as the official scorer does (SEED-Encoder, Lu et al. 2021, Table 4)."""

    kind = "mind"
    ranked = "candidates an impression"

    def __init__(self, behaviors: str | os.PathLike, metrics: Sequence[str] = MIND_METRICS,
                 max_impressions: int | None = None) -> None:
        super().__init__(metrics)
        unknown = [metric for metric in self.metrics if metric not in MIND_METRICS]
        if unknown:
            raise ValueError(f"MIND reports {', '.join(MIND_METRICS)}; not {unknown}")
        self.behaviors, self.max_impressions = behaviors, max_impressions

    @functools.cached_property
    def impressions(self) -> list[Impression]:
        """The labelled impressions (MIND's test set has none: nothing to score), the first
        ``max_impressions`` of the file when given."""
        labelled = (impression for impression in read_behaviors(self.behaviors) if impression.labels)
        labelled = list(itertools.islice(labelled, self.max_impressions))
        if not labelled:
            raise ValueError(f"{self.behaviors}: no labelled impressions to evaluate")
        return labelled

    def queries(self) -> dict[str, str]:
        """Each labelled impression's user."""
        return {impression.id: impression.user for impression in self.impressions}

    def deeper_than(self, depth: int) -> list[str]:
        """None: the metrics read an impression's own candidates, however many it shows."""
        return []

    def per_query(self, run: Run, show_progress: bool = False) -> dict[str, dict[str, float]]:
        values = impression_metrics(run_scores(run, self.impressions), self.impressions)
        return {metric: values[metric] for metric in self.metrics}
