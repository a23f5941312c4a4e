"""Hybrid retrieval: fuse the TREC runs of several retrievers (BM25 and dense, any number) into one.

Every method (``FUSIONS``) is a weighted sum, over the runs, of a per-query transform of each run's
ranking of the query's documents:

* ``rrf`` — reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009):
  ``f(d) = Σ_i w_i / (k + r_i(d))``, ``r_i(d)`` the rank (from 1) of ``d`` in run ``i`` in seedr's rank
  order (score descending, document id ascending: ``seedr.data.runs``). k = 60 and equal weights
  are the paper's.
* ``minmax`` — a convex combination of min-max normalised scores,
  ``f(d) = Σ_i w_i (s_i(d) − min_i) / (max_i − min_i)``, the minimum and maximum over the documents run
  ``i`` ranks for the query (Bruch, Gai & Ingber, "An Analysis of Fusion Functions for Hybrid
  Retrieval", ACM TOIS 2023: a convex combination tuned on a few queries beats RRF, which is itself
  sensitive to k).
* ``zscore`` — the same with z-scores, ``(s_i(d) − μ_i) / σ_i`` (σ: the population standard deviation).

A document that run ``i`` does not rank for the query takes the lowest value run ``i`` gives there:
0 for RRF (the paper's sum runs over the runs that rank it) and for min-max (whose lowest value is 0:
ranx's ``wsum`` of ``min-max``-normalised runs counts an absent document 0 too, so the two agree), and
the lowest z-score for z-score, as Pyserini's hybrid search fills in a run's minimum score — ranx counts
0 there, the list's mean, which would rank a document the run did not retrieve above half of those it
did. A list whose scores are all equal normalises to 0 (as ranx's). A query a run does not answer adds
nothing from that run. Weights are non-negative and normalised to sum to 1 (only their ratios change
the ranking). Fused scores are rounded to 12 decimals, so that documents whose sums are equal in exact
arithmetic tie — and are ordered by id — instead of being ordered by the rounding of the summation.
The fused run keeps each query's top ``depth`` documents.

Weights — and RRF's k, and the method itself when several are offered — are chosen on a development
split (``select_fusion``): every candidate of a grid (weights on the simplex in steps of ``step``: 11
for two runs at 0.1, 66 for three; k from a list) fuses the *development* runs of the same systems and
is scored by an ``Objective`` (the mean of one metric over the development queries, computed by seedr's
evaluation: ``seedr.evaluation.development``); the best is kept, a tie going to the weights nearest
to equal, then to the k nearest to 60. ``write_fused_run`` records the choice, every candidate's score,
and the fingerprint of every run it read beside the fused run (``<run>.json``, with the queries record
its components share), so that ``seedr evaluate`` can test the fused run against each component
(``fused_components``) and refuse a component that has changed since.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from seedr.data.records import Run
from seedr.data.runs import (
    describe_queries,
    rank_documents,
    read_run_record,
    read_trec_run,
    recorded_queries,
    run_fingerprint,
    run_record_path,
    write_run_and_record,
)
from seedr.io import DataError
from seedr.registry import Registry

#: A method's per-query transform: the scores of one run's ranking (in rank order) and RRF's k → the
#: values the weighted sum adds up, and the value of a document the run does not rank.
Transform = Callable[[np.ndarray, int], tuple[np.ndarray, float]]
FUSIONS: Registry[Transform] = Registry("fusion method")

#: RRF's k in Cormack et al. (2009), the default and the tie-breaker of the selection.
RRF_K = 60
#: Digits fused scores keep (see the module docstring).
DECIMALS = 12
#: The most candidates a selection evaluates (a finer step or more runs: a coarser grid is asked for).
MAX_CANDIDATES = 10_000


@FUSIONS.register("rrf")
def reciprocal_ranks(scores: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """``1 / (k + rank)``, ranks from 1; an absent document adds 0 (Cormack et al. 2009)."""
    return 1.0 / (k + np.arange(1, len(scores) + 1, dtype=np.float64)), 0.0


@FUSIONS.register("minmax")
def min_max(scores: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """``(s − min) / (max − min)`` in [0, 1] (0 for all when they are equal); an absent document 0."""
    spread = float(scores.max() - scores.min())
    values = (scores - scores.min()) / spread if spread > 0 else np.zeros_like(scores)
    return values, 0.0


@FUSIONS.register("zscore")
def z_scores(scores: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """``(s − mean) / std`` (population std; 0 for all when it is 0); an absent document the lowest."""
    sigma = float(scores.std())
    values = (scores - scores.mean()) / sigma if sigma > 0 else np.zeros_like(scores)
    return values, float(values.min())


@dataclass(frozen=True)
class Fusion:
    """One way to fuse runs: a method of ``FUSIONS``, one weight per run (normalised to sum to 1 here)
    and, for ``rrf``, its k."""

    method: str
    weights: tuple[float, ...]
    rrf_k: int = RRF_K

    def __post_init__(self) -> None:
        FUSIONS.get(self.method)
        weights = np.asarray(self.weights, dtype=np.float64)
        if weights.ndim != 1 or len(weights) < 1 or not np.isfinite(weights).all() or (weights < 0).any():
            raise ValueError(f"fusion weights must be finite and non-negative, got {list(self.weights)}")
        if weights.max() <= 0:
            raise ValueError("fusion weights must not all be 0")
        if self.rrf_k < 1:
            raise ValueError(f"RRF's k must be at least 1, got {self.rrf_k}")
        scaled = weights / weights.max()  # in [0, 1] first: the sum of large weights (1e308 twice) is no inf
        object.__setattr__(self, "weights", tuple(float(w) for w in scaled / scaled.sum()))

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "weights": list(self.weights),
                "rrf_k": self.rrf_k if self.method == "rrf" else None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Fusion:
        return cls(data["method"], tuple(data["weights"]), data.get("rrf_k") or RRF_K)

    def describe(self) -> str:
        weights = ", ".join(f"{w:.3g}" for w in self.weights)
        return f"{self.method} (weights {weights}{f', k {self.rrf_k}' if self.method == 'rrf' else ''})"


#: One query's documents (sorted by id) and each run's transformed values for them: (D, runs).
QueryMatrix = tuple[list[str], np.ndarray]


def query_matrices(runs: Sequence[Run], method: str, rrf_k: int = RRF_K) -> dict[str, QueryMatrix]:
    """Each query's documents (the union of the runs' rankings) and what each run adds for them
    before weighting, so that any weights combine them by one matrix product."""
    transform = FUSIONS.get(method)
    matrices = {}
    for qid in sorted(set().union(*runs)):
        docs = sorted(set().union(*(run.get(qid, {}) for run in runs)))
        row = {doc: i for i, doc in enumerate(docs)}
        matrix = np.zeros((len(docs), len(runs)), dtype=np.float64)  # (D, R)
        for column, run in enumerate(runs):
            ranked = rank_documents(run.get(qid, {}))
            if not ranked:  # a query the run does not answer: the same 0 for every document
                continue
            values, fill = transform(np.array([score for _, score in ranked], dtype=np.float64), rrf_k)
            matrix[:, column] = fill
            matrix[[row[doc] for doc, _ in ranked], column] = values
        matrices[qid] = (docs, matrix)
    return matrices


def combine(matrices: Mapping[str, QueryMatrix], weights: Sequence[float], depth: int | None = None) -> Run:
    """The fused run of ``query_matrices`` under ``weights``: each query's top ``depth`` (all when None)."""
    w = np.asarray(weights, dtype=np.float64)  # (R,)
    run: Run = {}
    for qid, (docs, matrix) in matrices.items():
        fused = np.round(matrix @ w, DECIMALS)  # (D,)
        # documents are sorted by id, so a stable sort by score descending is seedr's rank order
        order = np.argsort(-fused, kind="stable")[:depth]
        run[qid] = {docs[i]: float(fused[i]) for i in order}
    return run


def fuse(runs: Sequence[Run], fusion: Fusion, depth: int | None = None) -> Run:
    """Fuse ``runs`` (one weight of ``fusion`` each) into one run of each query's top ``depth``."""
    if len(runs) != len(fusion.weights):
        raise ValueError(f"{len(runs)} runs but {len(fusion.weights)} weights: give one weight per run")
    return combine(query_matrices(runs, fusion.method, fusion.rrf_k), fusion.weights, depth)


def _compositions(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    """Every tuple of ``parts`` non-negative integers summing to ``total``."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total, -1, -1):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)


def weight_grid(runs: int, step: float) -> list[tuple[float, ...]]:
    """Weights on the simplex in steps of ``step`` (which must divide 1): corners (one run alone) included."""
    if runs < 1:
        raise ValueError("no runs to weigh")
    divisions = round(1 / step) if step > 0 else 0
    if divisions < 1 or not math.isclose(divisions * step, 1.0, rel_tol=1e-9):
        raise ValueError(f"the weight step must divide 1 (0.5, 0.25, 0.1, 0.05 ...), got {step}")
    size = math.comb(divisions + runs - 1, runs - 1)
    if size > MAX_CANDIDATES:
        raise ValueError(f"a weight step of {step} over {runs} runs gives {size:,} weightings (at most "
                         f"{MAX_CANDIDATES:,}): choose a coarser step")
    return [tuple(part / divisions for part in parts) for parts in _compositions(divisions, runs)]


@dataclass(frozen=True)
class Objective:
    """What the development split scores a fused run by: ``metric``'s mean over its queries."""

    metric: str
    score: Callable[[Run], float]


@dataclass(frozen=True)
class Selection:
    """The fusion chosen on a development split, its score there, and every candidate's."""

    best: Fusion
    metric: str
    value: float
    candidates: list[tuple[Fusion, float]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "value": self.value, "best": self.best.to_dict(),
                "candidates": [{**fusion.to_dict(), "value": value} for fusion, value in self.candidates]}


def select_fusion(dev_runs: Sequence[Run], objective: Objective, methods: Sequence[str] = ("rrf",),
                  weights: Sequence[float] | None = None, step: float = 0.1, rrf_ks: Sequence[int] = (RRF_K,),
                  depth: int | None = None, show_progress: bool = False) -> Selection:
    """Choose the fusion of the runs whose development runs ``dev_runs`` fuse best under ``objective``.

    Candidates: each method of ``methods``; weights on the simplex grid of ``step`` (or only ``weights``,
    when given); for ``rrf`` each k of ``rrf_ks``. Each fuses ``dev_runs`` to ``depth`` documents a
    query, as the runs will be. A tie goes to the weights nearest to equal, then to the k nearest to 60.
    """
    if len(dev_runs) < 2:
        raise ValueError(f"fusion needs at least two runs, got {len(dev_runs)}")
    if not methods:
        raise ValueError("no fusion method to choose from")
    grid = [tuple(weights)] if weights is not None else weight_grid(len(dev_runs), step)
    plans = [(method, k) for method in dict.fromkeys(methods)
             for k in (dict.fromkeys(rrf_ks) if method == "rrf" else [RRF_K])]
    candidates: list[tuple[Fusion, float]] = []
    total = len(plans) * len(grid)
    with tqdm(total=total, desc="fusion grid", unit="candidate", disable=not show_progress) as bar:
        for method, k in plans:
            matrices = query_matrices(dev_runs, method, k)
            for point in grid:
                fusion = Fusion(method, point, k)
                candidates.append((fusion, float(objective.score(combine(matrices, fusion.weights, depth)))))
                bar.update()
    equal = np.full(len(dev_runs), 1 / len(dev_runs))
    preference = sorted(range(len(candidates)), key=lambda i: (
        -candidates[i][1], round(float(np.linalg.norm(np.asarray(candidates[i][0].weights) - equal)), 9),
        abs(candidates[i][0].rrf_k - RRF_K) if candidates[i][0].method == "rrf" else 0,
        list(dict.fromkeys(methods)).index(candidates[i][0].method)))
    best, value = candidates[preference[0]]
    return Selection(best, objective.metric, value, candidates)


def choose_fusion(count: int, methods: Sequence[str] = ("rrf",), weights: Sequence[float] | None = None,
                  rrf_ks: Sequence[int] = (RRF_K,), dev_runs: Sequence[Run] | None = None,
                  objective: Objective | None = None, step: float = 0.1, depth: int | None = None,
                  show_progress: bool = False) -> tuple[Fusion, Selection | None]:
    """The fusion of ``count`` runs to apply, and how it was chosen: with a development split (``dev_runs``,
    one per run in their order, scored by ``objective``), the best candidate (``select_fusion``); without
    one, the first of ``methods`` with ``weights`` (equal ones when not given) and the first k. What ``seedr
    fuse`` and an experiment's fused condition both choose with."""
    if dev_runs is None:
        return Fusion(methods[0], tuple(weights or [1.0] * count), rrf_ks[0]), None
    if objective is None:
        raise ValueError("a development split needs the objective that scores its fused runs")
    selection = select_fusion(dev_runs, objective, methods, weights, step, rrf_ks, depth, show_progress)
    return selection.best, selection


# ---------------------------------------------------------------------------------------------- files
def shared_queries(paths: Sequence[str | os.PathLike], runs: Sequence[Run]) -> tuple[dict[str, Any] | None, list[str]]:
    """The queries record (``seedr search``'s ``<run>.json``) that the runs share, and a warning for
    each run without one (made by another tool, or by an older seedr: it cannot be checked). ``runs``: the
    files as read, against which their records are checked (``read_run_record``).

    Raises:
        DataError: two runs record different queries — fusing them would mix answers to other questions —
            or a record describes another ranking than its run file.
    """
    shared, first, warnings = None, None, []
    for path, run in zip(map(Path, paths), runs, strict=True):
        recorded = recorded_queries(read_run_record(path, run), path)
        if recorded is None:
            warnings.append(f"{path}: no {run_record_path(path).name} beside it, so its queries cannot be "
                            "checked against the other runs'")
        elif shared is None:
            shared, first = recorded, path
        elif recorded["sha256"] != shared["sha256"]:
            raise DataError(path, f"the run was searched with other {recorded.get('kind', 'queries')} "
                                  f"({describe_queries(recorded)}) than {first} ({describe_queries(shared)}): "
                                  "fuse runs of the same queries")
    return shared, warnings


def component_entry(path: str | os.PathLike, run: Run) -> dict[str, Any]:
    """How a fused run's record names a run it read: its absolute path and ``run_fingerprint``."""
    return {"path": str(Path(path).resolve()), "fingerprint": run_fingerprint(run)}


def write_fused_run(out: str | os.PathLike, run: Run, fusion: Fusion, components: Sequence[tuple[Path, Run]],
                    queries: Mapping[str, Any] | None, depth: int | None, tag: str = "fused",
                    selection: Selection | None = None, development: Mapping[str, Any] | None = None
                    ) -> tuple[int, Path]:
    """Write the fused TREC run and its record (``<out>.json``): the components' queries record, the
    fusion, its components (path and fingerprint) and, when chosen on a development split, the
    selection with every candidate and what the split was (``development``). Written as one unit
    (``seedr.data.runs.write_run_and_record``: the record, with the fused run's fingerprint, first);
    returns the number of lines and the record's path."""
    record: dict[str, Any] = {}
    if queries is not None:
        record["queries"] = dict(queries)
    record["fusion"] = {**fusion.to_dict(), "depth": depth,
                        "components": [component_entry(path, component) for path, component in components]}
    if selection is not None:
        record["fusion"]["selection"] = {**selection.to_dict(), **dict(development or {})}
    return write_run_and_record(out, run, record, tag)


def fused_components(run_path: str | os.PathLike) -> tuple[list[Path], list[str]]:
    """The runs a fused run was made from (its record's ``fusion.components``), each checked to read
    back as the run that was fused, and a warning for each that is no longer where it was. ``[]`` for a
    run that is not fused.

    Raises:
        DataError: a component has changed since it was fused (a test against it would test another run),
            the record describes another ranking than the fused run, or it is malformed.
    """
    fusion = (read_run_record(run_path) or {}).get("fusion")
    if not isinstance(fusion, dict):
        return [], []
    entries = fusion.get("components", [])
    if not isinstance(entries, list) or not all(isinstance(entry, dict) and isinstance(entry.get("path"), str)
                                                and isinstance(entry.get("fingerprint"), str) for entry in entries):
        raise DataError(run_record_path(run_path), "expected 'components': a list of runs, each with its 'path' and "
                                                   "'fingerprint'", field="fusion")
    found, warnings = [], []
    for entry in entries:
        path = Path(entry["path"])
        if not path.is_file():
            warnings.append(f"{run_path} was fused from {path}, which is no longer there: not tested against it")
            continue
        if run_fingerprint(read_trec_run(path)) != entry.get("fingerprint"):
            raise DataError(path, f"the run has changed since {run_path} was fused from it: fuse again, or "
                                  "evaluate the fused run without its components (--no-components)")
        found.append(path)
    return found, warnings


__all__ = ["DECIMALS", "FUSIONS", "RRF_K", "Fusion", "Objective", "Selection", "combine", "component_entry",
           "fuse", "fused_components", "min_max",
           "query_matrices", "reciprocal_ranks", "select_fusion", "shared_queries", "weight_grid", "write_fused_run", "z_scores"]
