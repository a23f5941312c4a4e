"""``fuse`` from Python: hybrid retrieval, runs fused into one (``seedr fuse``)."""

from __future__ import annotations

import dataclasses
import os

from seedr.api.keywords import keywords_of
from seedr.pipeline import fuse as fusing
from seedr.pipeline.fuse import Fused, FuseConfig


@dataclasses.dataclass(frozen=True)
class FusedRun(Fused):
    """A fused TREC run (``fuse``) and its record (``seedr.pipeline.fuse.Fused``: path, run, fusion,
    selection, lines, record, warnings). Give it to ``evaluate``: a path, it is tested against each run it was
    fused from."""

    def __fspath__(self) -> str:
        return os.fspath(self.path)


@keywords_of(FuseConfig)
def fuse(config: FuseConfig) -> FusedRun:
    """Fuse runs into one (``seedr fuse``, hybrid retrieval), the fusion chosen on a development split.

    Every method sums, with one weight per run, a per-query transform of each run's ranking: 1/(k + rank)
    (``rrf``, Cormack et al. 2009), min-max normalised scores (``minmax``) or z-scores (``zscore``); a
    document a run does not rank takes that run's lowest value. With a development split (``dev_run``, one
    run per run fused and in their order, with ``dev_qrels`` or ``dev_qa_answers`` and ``corpus``), the
    best of the ``method``s, ``rrf_k``s and weights on the simplex grid of ``grid_step`` (or the fixed
    ``weight``) is chosen by ``metric``; without one, the first method with ``weight`` or equal weights.
    The record beside the fused run (``<out>.json``) holds the queries, the fusion, every candidate's
    development score and each component's fingerprint.

    Example:
        >>> hybrid = seedr.fuse(["bm25.trec", "dense.trec"], "hybrid.trec", method=["minmax", "rrf"],
        ...                     dev_run=["bm25-dev.trec", "dense-dev.trec"], dev_qrels="dev.tsv")
        >>> seedr.evaluate([hybrid], qrels="test.tsv")   # the fused run against each component too
    """
    fused = fusing.run(config)
    return FusedRun(**{field.name: getattr(fused, field.name) for field in dataclasses.fields(fused)})


__all__ = ["FusedRun", "fuse"]
