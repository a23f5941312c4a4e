"""Fuse runs into one (hybrid retrieval), the fusion chosen on a development split: ``seedr fuse``,
``seedr.fuse`` and every fusing condition of an experiment (``seedr.experiments.fusion``) check, choose and
apply a fusion here.

Every method sums, with one weight per run, a per-query transform of each run's ranking
(``seedr.retrieval.fusion``: RRF, Cormack et al. 2009; min-max or z-score normalised convex combinations,
Bruch et al., ACM TOIS 2023). With a development split, the best of the methods, RRF's ks and the weights on
a simplex grid is chosen by the mean of one metric over its queries, scored as ``seedr evaluate`` scores them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seedr.io import check_output
from seedr.pipeline.common import Source, input_paths, locked
from seedr.pipeline.options import AT_LEAST_ONE, Bound, check_options, option


@dataclasses.dataclass(kw_only=True)
class FuseConfig:
    """What ``fuse`` runs with."""

    runs: Sequence[str | os.PathLike] = option(
        help="TREC runs to fuse (two or more, of the same queries), e.g. from `seedr search --bm25` and a "
             "dense `seedr search`.", cli_type=list[Path], positional=True, argument=True)
    out: Path = option(help="Fused TREC run to write (its record: <out>.json).", positional=True)
    method: Sequence[str] | str | None = option(
        None, help="Fusion: minmax, rrf, zscore (min-max or z-score normalised convex combination, "
                   "reciprocal rank fusion). Repeatable with a development split: the best of them. "
                   "Default: rrf.",
        cli_type=list[str])
    weight: Sequence[float] | None = option(
        None, help="One per run, in their order: fixed weights (normalised to sum to 1). Default: chosen on "
                   "the development split, else equal.",
        bound=Bound(float, 0, many=True), cli_type=list[float])
    rrf_k: Sequence[int] | None = option(
        None, help="RRF's k (default 60, Cormack et al. 2009); repeatable with a development split: the best "
                   "of them.", bound=Bound(int, 1, many=True), cli_type=list[int])
    k: int | None = option(
        None, help="Documents per query in the fused run (default: as many as the deepest run).",
        bound=AT_LEAST_ONE)
    tag: str = option("fused", help="Run tag, last column.")
    dev_run: Sequence[str | os.PathLike] | None = option(
        None, help="Development split: the same systems' runs of the development queries, one per run and in "
                   "the same order; the weights are chosen on them.", cli_type=list[Path])
    dev_qrels: str | os.PathLike | None = option(
        None, help="Development split: relevance judgments of its queries (TREC or BEIR qrels).",
        cli_type=Path)
    dev_qa_answers: Source | None = option(
        None, help="Or: its NQ-open / DPR QA JSONL questions with answers (with --corpus); repeatable, "
                   "folders and quoted globs too.", cli_type=list[Path])
    corpus: Source | None = option(
        None, help="QA development split: the passage corpus the runs rank (file, folder or quoted glob; "
                   "repeatable).", cli_type=list[Path])
    qa_title: bool = option(False, help="QA development split: look for answers in passage titles too.",
                            flag="--qa-title/--no-qa-title")
    metric: str | None = option(
        None, help="What the development split is scored by: an ir_measures name with --dev-qrels (default "
                   "nDCG@10), Top-k with --dev-qa-answers (default Top-20).")
    grid_step: float = option(
        0.1, help="Development split: weights tried on the simplex in steps of this (must divide 1).",
        bound=Bound(float, 0.01, 1))
    overwrite: bool = option(
        False, help="Replace OUT when it is a run seedr wrote (with its record); nothing else is replaced.")
    show_progress: bool = option(True, help="A progress bar over the candidates.", command_line=False)

    def __post_init__(self) -> None:
        check_options(self)
        # files, or written ``SearchRun``s and ``FusedRun``s
        self.runs = [Path(os.fspath(run)) for run in self.runs]
        self.dev_run = [Path(os.fspath(run)) for run in self.dev_run or []]
        self.out = Path(self.out)
        self.method, self.rrf_k = methods_of(self.method), ks_of(self.rrf_k)
        if isinstance(self.dev_qa_answers, str | os.PathLike):
            self.dev_qa_answers = [self.dev_qa_answers]
        if self.dev_qrels is not None and self.dev_qa_answers:
            raise ValueError("give one development split: --dev-qrels or --dev-qa-answers")
        if bool(self.dev_run) != (self.dev_qrels is not None or bool(self.dev_qa_answers)):
            raise ValueError("a development split is --dev-run (one per run) with --dev-qrels or "
                             "--dev-qa-answers")
        if self.dev_run and len(self.dev_run) != len(self.runs):
            raise ValueError(f"{len(self.dev_run)} --dev-run for {len(self.runs)} runs: give one per run, in "
                             "the same order")
        if self.dev_qa_answers and not self.corpus:
            raise ValueError("--dev-qa-answers needs --corpus, the passage corpus the runs rank")
        check_fusion(len(self.runs), self.method, self.weight, self.rrf_k, self.grid_step, bool(self.dev_run))


@dataclasses.dataclass(frozen=True)
class Spelling:
    """How a door names what a fusion's checks refuse: the command's options, or an experiment's keys."""

    runs: str = "runs"
    weight: str = "--weight"
    method: str = "--method"
    rrf_k: str = "--rrf-k"
    development: str = "a development split"


def methods_of(method: Sequence[str] | str | None) -> list[str]:
    """The methods to choose among, once each, in order (default: RRF alone)."""
    return list(dict.fromkeys([method] if isinstance(method, str) else method or ["rrf"]))


def ks_of(rrf_k: Sequence[int] | int | None) -> list[int]:
    """RRF's ks to choose among, once each, in order (default: the paper's 60)."""
    from seedr.retrieval.fusion import RRF_K

    return list(dict.fromkeys([rrf_k] if isinstance(rrf_k, int) else rrf_k or [RRF_K]))


def check_fusion(count: int, methods: Sequence[str], weight: Sequence[float] | None, rrf_ks: Sequence[int],
                 grid_step: float, developed: bool, spelling: Spelling = Spelling()) -> None:
    """Refuse a fusion of ``count`` runs that cannot be made, before any run is read: too few runs, weights
    not one per run or all 0, an unknown method, a choice among several methods or ks without a development
    split (``developed``), a grid step that does not divide 1. ``spelling``: how the door names them."""
    from seedr.retrieval.fusion import FUSIONS, weight_grid

    if count < 2:
        raise ValueError(f"give at least two {spelling.runs} to fuse, got {count}")
    if weight is not None and len(weight) != count:
        raise ValueError(f"{len(weight)} {spelling.weight} for {count} {spelling.runs}: give one each, in "
                         "their order")
    if weight is not None and sum(weight) <= 0:
        raise ValueError(f"{spelling.weight}: the fusion weights must not all be 0")
    unknown = [method for method in methods if method not in FUSIONS]
    if unknown:
        raise ValueError(f"unknown fusion method {unknown[0]!r}; valid: {', '.join(FUSIONS.names())}")
    if not developed and (len(methods) > 1 or len(rrf_ks) > 1):
        raise ValueError(f"several {spelling.method} or {spelling.rrf_k} need {spelling.development} to "
                         "choose among them")
    if developed and weight is None:
        weight_grid(count, grid_step)  # a step that does not divide 1: said before anything is read


def task_objective(task: Any, metric: str) -> Any:
    """The ``Objective`` of a development split: ``metric``'s mean over the per-query scores ``task`` gives a
    run (an evaluation task of ``seedr.evaluation``, or an experiment's task), as ``seedr evaluate`` and an
    experiment score runs."""
    from seedr.retrieval.fusion import Objective

    def score(run: Any) -> float:
        values = list(task.per_query(run)[metric].values())
        return sum(values) / len(values) if values else 0.0

    return Objective(metric, score)


def choose(count: int, methods: Sequence[str], weight: Sequence[float] | None, rrf_ks: Sequence[int],
           grid_step: float, depth: int | None, dev_runs: Sequence[Any] | None = None, objective: Any = None,
           show_progress: bool = True) -> tuple[Any, Any]:
    """The ``Fusion`` of ``count`` runs to apply and, with development runs (one per run, in their order,
    scored by ``objective``), the ``Selection`` that chose it (``seedr.retrieval.fusion.choose_fusion``)."""
    from seedr.retrieval.fusion import choose_fusion

    return choose_fusion(count, methods, weight, rrf_ks, dev_runs, objective, grid_step, depth, show_progress)


def depth_of(runs: Sequence[Any], k: int | None) -> int:
    """Documents per query of a fused run: ``k``, else as many as the deepest of ``runs`` ranks."""
    from seedr.evaluation.metrics import run_depth

    return k or max(run_depth(ranking) for ranking in runs)


def apply(runs: Sequence[Any], fusion: Any, depth: int | None) -> Any:
    """``runs`` fused by ``fusion`` into one run of each query's top ``depth``."""
    from seedr.retrieval.fusion import fuse

    return fuse(runs, fusion, depth)


@dataclasses.dataclass(frozen=True)
class Fused:
    """A fused TREC run (``run``) and its record.

    Attributes:
        path: the fused TREC run (its record beside it, ``<path>.json``).
        run: the ranking, ``{qid: {doc: score}}``.
        fusion: the fusion applied (``seedr.retrieval.fusion.Fusion``: method, weights, RRF's k).
        selection: how it was chosen on the development split (best, metric, value, every candidate), or None.
        lines: the lines written.
        record: the record's path.
        warnings: what the inputs left to say (runs without a record of their queries, development queries
            that are the queries fused).
    """

    path: Path
    run: dict[str, dict[str, float]]
    fusion: Any
    selection: Any
    lines: int
    record: Path
    warnings: list[str]


def run(config: FuseConfig) -> Fused:
    """Fuse ``config.runs`` into ``config.out``: read, choose (on the development split when given), fuse,
    write the run and its record (the queries, the fusion, every candidate's development score and each
    component's fingerprint, so that ``seedr evaluate`` tests the fused run against each component)."""
    with locked(config.out):
        check_output(config.out, "TREC run", overwrite=config.overwrite,
                     inputs=input_paths(config.runs, config.dev_run, config.dev_qrels, config.dev_qa_answers,
                                        config.corpus))
        from seedr.data.runs import read_trec_run
        from seedr.retrieval.fusion import shared_queries, write_fused_run

        loaded = [read_trec_run(path) for path in config.runs]
        for path, ranking in zip(config.runs, loaded):
            if not ranking:
                raise ValueError(f"{path}: the run ranks no documents (an empty run file): nothing to fuse")
        queries, warnings = shared_queries(config.runs, loaded)
        depth = depth_of(loaded, config.k)
        dev_loaded, objective, development = None, None, None
        if config.dev_run:
            dev_loaded, objective, development = _development(config, queries, warnings)
        fusion, selection = choose(len(config.runs), config.method, config.weight, config.rrf_k,
                                   config.grid_step, depth, dev_loaded, objective, config.show_progress)
        fused = apply(loaded, fusion, depth)
        lines, record = write_fused_run(config.out, fused, fusion, list(zip(config.runs, loaded)), queries,
                                        depth, config.tag, selection, development)
    return Fused(config.out, fused, fusion, selection, lines, record, warnings)


def _development(config: FuseConfig, queries: dict[str, Any] | None, warnings: list[str]
                 ) -> tuple[list[Any], Any, dict[str, Any]]:
    """The development runs read, the objective that scores their fusion, and what the split was, for the
    record; ``warnings`` gains what the split leaves to say."""
    from seedr.data.runs import read_trec_run
    from seedr.evaluation.development import development_task
    from seedr.retrieval.fusion import component_entry, shared_queries

    dev_loaded = [read_trec_run(path) for path in config.dev_run]
    dev_queries, dev_warnings = shared_queries(config.dev_run, dev_loaded)
    warnings += dev_warnings
    if queries and dev_queries and dev_queries.get("sha256") == queries.get("sha256"):
        warnings.append("the development runs answer the same queries as the runs fused: the weights are "
                        "chosen on the queries they will be evaluated on")
    task, metric, split, split_warnings = development_task(
        config.dev_run, dev_loaded, qrels=config.dev_qrels, qa_answers=config.dev_qa_answers,
        corpus=config.corpus, qa_title=config.qa_title, metric=config.metric)
    warnings += split_warnings
    read = [component_entry(path, ranking) for path, ranking in zip(config.dev_run, dev_loaded)]
    return dev_loaded, task_objective(task, metric), {"development": {**split, "queries": dev_queries,
                                                                       "runs": read}}


__all__ = ["FuseConfig", "Fused", "Spelling", "apply", "check_fusion", "choose", "depth_of", "ks_of",
           "methods_of", "run", "task_objective"]
