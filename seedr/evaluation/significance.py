"""Paired significance tests between systems evaluated on the same queries.

* ``permutation`` — the paired randomisation (permutation) test: under the null hypothesis the two
  systems' scores on a query are exchangeable, so the sign of each per-query difference is flipped at
  random and the mean difference recomputed; the two-sided p-value is the share of resamples at
  least as extreme as the observed mean difference (exact through ``scipy.stats.permutation_test``
  when 2^n ≤ ``n_resamples``, seeded resamples otherwise, with scipy's p-value). The resamples are
  drawn and reduced in chunks of about ``RESAMPLE_CHUNK_VALUES`` values, so memory stays flat however
  many queries and resamples there are; the p-value is the same as drawing them all at once. SEED-Encoder
  (Lu et al. 2021, sec. 5) reports it at p < 0.05; Smucker et al. (CIKM 2007) recommend it for IR.
* ``ttest`` — the two-tailed paired t-test (``scipy.stats.ttest_rel``), CPDAE's test (Table 1, p ≤ 0.05).

Queries are aligned by id over the union of all systems' queries; a query a system lacks scores 0
for it (as ``seedr.evaluation.metrics`` scores queries missing from a run). Identical score vectors
give p = 1.

Both tests take each system as one fixed run. Where each side of a comparison is a recipe trained with
several seeds, the variation between seeds is part of what a re-run would change: an experiment's
verdicts test the seeds' figures too (``seedr.experiments.record.verdicts``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from seedr.registry import Registry

SignificanceTest = Callable[[np.ndarray, np.ndarray, int, int], float]
TESTS: Registry[SignificanceTest] = Registry("significance test")

#: Resampled values (resamples × queries) drawn at once: about 9 bytes each (a uniform and its sign),
#: so a chunk peaks near 10 MB however many queries and resamples there are; all 10,000 resamples of
#: 3,610 NQ-open questions at once peaked at 2.5 GB under scipy's generic resampling
#: (``bench/bench_significance.py``).
RESAMPLE_CHUNK_VALUES = 1_000_000


def resample_chunk(queries: int, n_resamples: int) -> int:
    """How many resamples to draw at once for ``queries`` paired values (at least 1)."""
    return max(1, min(n_resamples, RESAMPLE_CHUNK_VALUES // max(queries, 1)))


@TESTS.register("permutation")
def permutation_test(system: np.ndarray, baseline: np.ndarray, n_resamples: int = 10_000,
                     seed: int = 0, chunk: int | None = None) -> float:
    """Two-sided p-value of the paired sign-flipping randomisation test on the mean difference.

    Exact (every sign pattern, ``scipy.stats.permutation_test``) when 2^n ≤ ``n_resamples``. Otherwise
    ``n_resamples`` seeded random sign patterns, the p-value computed as scipy computes it (the observed
    statistic counted once, two-sided as twice the smaller tail), but drawn and reduced here as one
    matrix product per chunk: scipy's generic resampling took ~11 s per test for SQuAD's 10,570 ReQA
    questions, this ~0.5 s. ``chunk``: resamples drawn at once (default ``resample_chunk``); it
    changes memory, not the result (the uniforms deciding the signs come from one stream).
    """
    system, baseline = np.asarray(system, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if np.array_equal(system, baseline):
        return 1.0
    if 2 ** min(len(system), 64) <= n_resamples:
        result = stats.permutation_test((system, baseline), lambda x, y, axis: np.mean(x - y, axis=axis),
                                        permutation_type="samples", vectorized=True, n_resamples=n_resamples,
                                        alternative="two-sided")
        return float(result.pvalue)
    differences = system - baseline
    observed = differences.mean()
    # scipy's tolerance for statistics equal to the observed one up to rounding
    gamma = abs(np.finfo(np.float64).eps * 100 * observed)
    rng, total = np.random.default_rng(seed), differences.sum()
    chunk = chunk or resample_chunk(len(differences), n_resamples)
    at_most = at_least = 0
    for start in range(0, n_resamples, chunk):
        flips = rng.random((min(chunk, n_resamples - start), len(differences))) < 0.5
        means = (total - 2.0 * (flips @ differences)) / len(differences)  # a flip negates its difference
        at_most += int(np.count_nonzero(means <= observed + gamma))
        at_least += int(np.count_nonzero(means >= observed - gamma))
    less, greater = (at_most + 1) / (n_resamples + 1), (at_least + 1) / (n_resamples + 1)
    return float(min(1.0, 2 * min(less, greater)))


@TESTS.register("ttest")
def paired_ttest(system: np.ndarray, baseline: np.ndarray, n_resamples: int = 0, seed: int = 0) -> float:
    """Two-sided p-value of the paired t-test (``n_resamples`` and ``seed`` are unused)."""
    differences = system - baseline
    if np.all(differences == differences[0]):
        # zero variance: t is undefined; identical systems are not different, a constant shift is
        return 1.0 if differences[0] == 0 else 0.0
    return float(stats.ttest_rel(system, baseline).pvalue)


def align(per_query_by_system: dict[str, dict[str, float]]) -> tuple[list[str], dict[str, np.ndarray]]:
    """Query ids (sorted union) and each system's scores on them, 0 where a system lacks a query."""
    qids = sorted(set().union(*(scores.keys() for scores in per_query_by_system.values())))
    return qids, {name: np.array([scores.get(qid, 0.0) for qid in qids], dtype=np.float64)
                  for name, scores in per_query_by_system.items()}


@dataclass(frozen=True)
class SystemResult:
    """One system against the baseline on one metric (the baseline's own row has ``p_value=None``)."""

    name: str
    mean: float
    delta: float
    p_value: float | None
    significant: bool


@dataclass(frozen=True)
class Comparison:
    """Systems vs a baseline on one metric, over ``queries`` aligned queries."""

    baseline: str
    test: str
    alpha: float
    queries: int
    systems: dict[str, SystemResult]


def compare_runs(per_query_by_system: dict[str, dict[str, float]], baseline: str, test: str = "permutation",
                 alpha: float = 0.05, n_resamples: int = 10_000, seed: int = 0) -> Comparison:
    """Compare every system with ``baseline`` on one metric's per-query scores.

    ``significant`` means p < ``alpha`` (two-sided; the sign of ``delta`` gives the direction). No
    correction for multiple comparisons is applied.
    """
    if baseline not in per_query_by_system:
        raise KeyError(f"baseline {baseline!r} is not among the systems: {', '.join(per_query_by_system)}")
    run_test = TESTS.get(test)
    qids, scores = align(per_query_by_system)
    if not qids:
        raise ValueError("no queries to compare")
    base = scores[baseline]
    results = {}
    for name, values in scores.items():
        p_value = None if name == baseline else run_test(values, base, n_resamples, seed)
        results[name] = SystemResult(name, float(values.mean()), float(values.mean() - base.mean()), p_value,
                                     p_value is not None and p_value < alpha)
    return Comparison(baseline, test, alpha, len(qids), results)
