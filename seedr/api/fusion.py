"""``fuse`` from Python: hybrid retrieval, runs fused into one (``seedr fuse``)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seedr.api.arguments import checks_arguments
from seedr.pipeline.common import Source, input_paths, locked
from seedr.io import check_output


@dataclasses.dataclass(frozen=True)
class FusedRun:
    """A fused TREC run (``fuse``) and its record. Give it to ``evaluate``: a path, it is tested against each
    run it was fused from.

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

    def __fspath__(self) -> str:
        return os.fspath(self.path)


def _fuse_paths(runs: Sequence[str | os.PathLike] | None) -> list[Path]:
    """Runs as paths: files, or ``SearchRun``s and ``FusedRun``s written to files."""
    return [Path(os.fspath(run)) for run in runs or []]


@checks_arguments
def fuse(runs: Sequence[str | os.PathLike], out: str | os.PathLike, *, method: Sequence[str] | str | None = None,
         weight: Sequence[float] | None = None, rrf_k: Sequence[int] | None = None, k: int | None = None,
         tag: str = "fused", dev_run: Sequence[str | os.PathLike] | None = None,
         dev_qrels: str | os.PathLike | None = None, dev_qa_answers: Source | None = None,
         corpus: Source | None = None, qa_title: bool = False, metric: str | None = None, grid_step: float = 0.1,
         overwrite: bool = False, show_progress: bool = True) -> FusedRun:
    """Fuse runs into one (``seedr fuse``, hybrid retrieval), the fusion chosen on a development split.

    Every method sums, with one weight per run, a per-query transform of each run's ranking: 1/(k + rank)
    (``rrf``, Cormack et al. 2009), min-max normalised scores (``minmax``) or z-scores (``zscore``); a
    document a run does not rank takes that run's lowest value. With a development split (``dev_run``, one
    run per run fused and in their order, with ``dev_qrels`` or ``dev_qa_answers`` and ``corpus``), the
    best of the ``method``s, ``rrf_k``s and weights on the simplex grid of ``grid_step`` (or the fixed
    ``weight``) is chosen by ``metric``; without one, the first method with ``weight`` or equal weights.
    The record beside the fused run (``<out>.json``) holds the queries, the fusion, every candidate's
    development score and each component's fingerprint.

    Args:
        runs: two or more TREC runs of the same queries (paths, or written ``SearchRun``s).
        out: the fused TREC run to write.
        method: ``rrf``, ``minmax``, ``zscore``, or several to choose among on the development split
            (default ``rrf``).
        weight: one per run, in their order (normalised to sum to 1).
        rrf_k: RRF's k (default 60), or several to choose among.
        k: documents per query in the fused run (default: as many as the deepest run).
        tag: the run's tag, its last column.
        dev_run, dev_qrels, dev_qa_answers, corpus, qa_title, metric: the development split, as ``evaluate``
            takes a task (``metric``: default nDCG@10 with qrels, Top-20 with QA answers).
        grid_step: the development split's grid of weights (must divide 1).
        overwrite: replace ``out`` when it is a run seedr wrote.
        show_progress: a progress bar over the candidates.

    Example:
        >>> hybrid = seedr.fuse(["bm25.trec", "dense.trec"], "hybrid.trec", method=["minmax", "rrf"],
        ...                     dev_run=["bm25-dev.trec", "dense-dev.trec"], dev_qrels="dev.tsv")
        >>> seedr.evaluate([hybrid], qrels="test.tsv")   # the fused run against each component too
    """
    from seedr.retrieval.fusion import RRF_K, weight_grid

    runs, dev_runs = _fuse_paths(runs), _fuse_paths(dev_run)
    methods = list(dict.fromkeys([method] if isinstance(method, str) else method or ["rrf"]))
    ks = list(dict.fromkeys(rrf_k or [RRF_K]))
    answers = [dev_qa_answers] if isinstance(dev_qa_answers, str | os.PathLike) else dev_qa_answers
    if len(runs) < 2:
        raise ValueError(f"give at least two runs to fuse, got {len(runs)}")
    if weight is not None and len(weight) != len(runs):
        raise ValueError(f"{len(weight)} --weight for {len(runs)} runs: give one per run, in their order")
    if dev_qrels is not None and answers:
        raise ValueError("give one development split: --dev-qrels or --dev-qa-answers")
    judged = dev_qrels is not None or bool(answers)
    if bool(dev_runs) != judged:
        raise ValueError("a development split is --dev-run (one per run) with --dev-qrels or --dev-qa-answers")
    if dev_runs and len(dev_runs) != len(runs):
        raise ValueError(f"{len(dev_runs)} --dev-run for {len(runs)} runs: give one per run, in the same order")
    if not dev_runs and (len(methods) > 1 or len(ks) > 1):
        raise ValueError("several --method or --rrf-k need a development split to choose among them")
    if answers and not corpus:
        raise ValueError("--dev-qa-answers needs --corpus, the passage corpus the runs rank")
    if dev_runs and weight is None:
        weight_grid(len(runs), grid_step)  # a step that does not divide 1: said before anything is read
    out = Path(out)
    with locked(out):
        check_output(out, "TREC run", overwrite=overwrite,
                     inputs=input_paths(runs, dev_runs, dev_qrels, answers, corpus))
        return _fuse(runs, out, methods, weight, ks, k, tag, dev_runs, dev_qrels, answers, corpus, qa_title, metric,
                     grid_step, show_progress)


def _fuse(runs: list[Path], out: Path, methods: list[str], weight: Sequence[float] | None, ks: list[int],
          k: int | None, tag: str, dev_runs: list[Path], dev_qrels: Any, answers: Any, corpus: Any, qa_title: bool,
          metric: str | None, grid_step: float, show_progress: bool) -> FusedRun:
    """``fuse`` once its arguments and output are checked: read, choose, fuse, write."""
    from seedr.data.runs import read_trec_run
    from seedr.evaluation.development import development_objective
    from seedr.evaluation.metrics import run_depth
    from seedr.retrieval.fusion import choose_fusion, component_entry, shared_queries, write_fused_run
    from seedr.retrieval.fusion import fuse as fuse_runs

    loaded = [read_trec_run(path) for path in runs]
    for path, run in zip(runs, loaded):
        if not run:
            raise ValueError(f"{path}: the run ranks no documents (an empty run file): nothing to fuse")
    queries, warnings = shared_queries(runs, loaded)
    depth = k or max(run_depth(run) for run in loaded)

    objective, dev_loaded, development = None, None, None
    if dev_runs:
        dev_loaded = [read_trec_run(path) for path in dev_runs]
        dev_queries, dev_warnings = shared_queries(dev_runs, dev_loaded)
        warnings += dev_warnings
        if queries and dev_queries and dev_queries.get("sha256") == queries.get("sha256"):
            warnings.append("the development runs answer the same queries as the runs fused: the weights are "
                            "chosen on the queries they will be evaluated on")
        objective, split, split_warnings = development_objective(
            dev_runs, dev_loaded, qrels=dev_qrels, qa_answers=answers, corpus=corpus, qa_title=qa_title,
            metric=metric)
        warnings += split_warnings
        read = [component_entry(path, run) for path, run in zip(dev_runs, dev_loaded)]
        development = {"development": {**split, "queries": dev_queries, "runs": read}}
    fusion, selection = choose_fusion(len(runs), methods, weight, ks, dev_loaded, objective, grid_step, depth,
                                      show_progress)
    fused = fuse_runs(loaded, fusion, depth)
    lines, record = write_fused_run(out, fused, fusion, list(zip(runs, loaded)), queries, depth, tag,
                                    selection, development)
    return FusedRun(out, fused, fusion, selection, lines, record, warnings)


__all__ = ["FusedRun", "fuse"]
