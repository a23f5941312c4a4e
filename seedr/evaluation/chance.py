"""Chance levels: the expected value of a ranking metric when the pool is ranked at random.

A task knows, when it evaluates, how many candidates it ranks (the pool: a corpus, ReQA's candidates, a
passage pool) and which of them are relevant to each query; under a uniformly random ranking of the
pool the expected value of each metric then has a closed form, exact (no sampling):

- ``R@k`` (recall): every relevant item is in the top k with probability k/N, so E = k/N × (relevant
  items in the pool) / (all judged relevant items).
- ``P@k``: E = k/N × (relevant in the pool) / k.
- ``Success@k`` (ReQA's R@k, DPR's Top-k coverage): 1 − C(N−m, k) / C(N, k), m relevant in the pool.
- ``RR@k`` (MRR): the first relevant item is at rank i with probability C(N−i, m−1) / C(N, m); E is the
  sum of that over i ≤ k, divided by i.
- ``nDCG@k``: DCG is linear in the gains at each rank, and each rank holds a pool item drawn uniformly,
  so E[DCG@k] = (sum of the pool's gains / N) × Σ_{i ≤ k} 1/log2(i+1) (trec_eval's discount); the ideal
  DCG does not depend on the ranking, so E[nDCG@k] = E[DCG@k] / IDCG@k.

The metric of a set of queries is the mean of its queries' values, so its expectation is the mean of
the per-query expectations. A metric without a cut-off is taken at ``depth``, the ranks a run holds
(seedr's experiments retrieve 100): a random run of that depth scores 0 beyond it, as the real runs do.
Metrics with no closed form here (e.g. MAP) have no chance level (``None``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence

from seedr.evaluation.metrics import parse_metric

#: The ranks a run holds when a metric has no cut-off (``RetrieveConfig.k``, ``bm25_run(100)``).
DEPTH = 100


def hit_probability(pool: int, relevant: int, k: int) -> float:
    """P(at least one of ``relevant`` items is in the top ``k`` of a random ranking of ``pool`` items)."""
    k = min(k, pool)
    if relevant <= 0 or k <= 0:
        return 0.0
    miss = 1.0  # C(N−m, k) / C(N, k) as a product, exact in floating point for any pool size
    for i in range(k):
        if pool - relevant - i <= 0:
            return 1.0
        miss *= (pool - relevant - i) / (pool - i)
    return 1.0 - miss


def expected_reciprocal_rank(pool: int, relevant: int, k: int) -> float:
    """E[1 / rank of the first relevant item] (0 beyond rank ``k``) under a random ranking."""
    if relevant <= 0 or pool <= 0:
        return 0.0
    expected, first = 0.0, relevant / pool  # P(first relevant at rank 1)
    for rank in range(1, min(k, pool - relevant + 1) + 1):
        expected += first / rank
        # P(first = i+1) / P(first = i) = C(N−i−1, m−1) / C(N−i, m−1) = (N−i−m+1) / (N−i)
        first *= (pool - rank - relevant + 1) / (pool - rank) if pool > rank else 0.0
    return expected


def _discounts(k: int) -> list[float]:
    return [1.0 / math.log2(rank + 1) for rank in range(1, k + 1)]


def expected_ndcg(pool: int, pool_gains: Iterable[float], judged_gains: Iterable[float], k: int) -> float:
    """E[nDCG@k] under a random ranking: ``pool_gains`` are the gains of the pool's relevant items,
    ``judged_gains`` those of every judged relevant item (the ideal ranking's, as trec_eval's)."""
    ideal = sorted((gain for gain in judged_gains if gain > 0), reverse=True)[:k]
    ideal_dcg = sum(gain * discount for gain, discount in zip(ideal, _discounts(len(ideal))))
    if ideal_dcg <= 0 or pool <= 0:
        return 0.0
    mean_gain = sum(gain for gain in pool_gains if gain > 0) / pool
    return mean_gain * sum(_discounts(min(k, pool))) / ideal_dcg


def query_chance(metric: str, pool: int, judged: Mapping[str, int], in_pool: Collection[str],
                 depth: int = DEPTH) -> float | None:
    """One query's expected ``metric`` (an ``ir_measures`` name, e.g. ``nDCG@10``, ``R@100``,
    ``MRR@10``, ``Success@5``, ``P@10``) under a random ranking of ``pool`` items, of which
    ``in_pool`` are ids; ``judged``: the query's judgments (doc id → grade). ``None``: no closed form."""
    measure = parse_metric(metric)
    params = dict(measure.params)
    k = min(int(params.pop("cutoff", depth)), depth)
    threshold = int(params.pop("rel", 1))
    if params:  # e.g. nDCG(dcg='exp-log2'), judged_only: not the forms above
        return None
    relevant = [doc for doc, grade in judged.items() if grade >= threshold]
    found = sum(doc in in_pool for doc in relevant)
    if measure.NAME == "R":
        return found * min(k, pool) / pool / len(relevant) if relevant and pool else 0.0
    if measure.NAME == "P":
        return found * min(k, pool) / pool / k if pool and k else 0.0
    if measure.NAME == "Success":
        return hit_probability(pool, found, k)
    if measure.NAME == "RR":
        return expected_reciprocal_rank(pool, found, k)
    if measure.NAME == "nDCG":
        gains = [grade for doc, grade in judged.items() if doc in in_pool]
        return expected_ndcg(pool, gains, judged.values(), k)
    return None


def chance_levels(metrics: Sequence[str], pool: Collection[str], qrels: Mapping[str, Mapping[str, int]],
                  depth: int = DEPTH) -> dict[str, float | None]:
    """Each metric's chance level over the queries of ``qrels`` (every one counts, as in
    ``seedr.evaluation.metrics.per_query``) when the items ``pool`` (their ids) are ranked at random."""
    pool = pool if isinstance(pool, (set, frozenset, dict)) else set(pool)
    levels: dict[str, float | None] = {}
    for metric in metrics:
        values = [query_chance(metric, len(pool), judged, pool, depth) for judged in qrels.values()]
        levels[metric] = None if not values or None in values else sum(values) / len(values)
    return levels


def coverage_chance(ks: Sequence[int], pool: int, answer_passages: Mapping[str, int]) -> dict[str, float]:
    """``{"Top-k": chance}`` of DPR's answer coverage: per question, the probability that one of its
    ``answer_passages[qid]`` answer-bearing passages of the pool is in a random top k, averaged."""
    counts = list(answer_passages.values())
    return {f"Top-{k}": sum(hit_probability(pool, count, k) for count in counts) / len(counts) if counts else 0.0
            for k in ks}


__all__ = ["DEPTH", "chance_levels", "coverage_chance", "expected_ndcg", "expected_reciprocal_rank",
           "hit_probability", "query_chance"]
