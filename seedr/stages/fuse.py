"""`seedr fuse`: hybrid retrieval — fuse TREC runs (BM25, dense ...) by RRF or a normalised convex
combination, the weights chosen on a development split and recorded with the fused run."""

from __future__ import annotations

from seedr.pipeline import fuse as fusing
from seedr.pipeline.fuse import FuseConfig
from seedr.stages.common import console
from seedr.stages.options import options_of


def _warn(message: str) -> None:
    from rich.markup import escape

    console.print(f"[yellow]warning[/]: {escape(message)}", soft_wrap=True, highlight=False)


@options_of(FuseConfig)
def command(config: FuseConfig) -> None:
    """Fuse runs into one (hybrid retrieval), choosing the weights on a development split.

    Every method sums, with one weight per run, a per-query transform of each run's ranking: 1/(k + rank)
    (rrf), min-max normalised scores (minmax) or z-scores (zscore); a document a run does not rank takes
    that run's lowest value. The record beside the fused run (<out>.json) holds the queries, the fusion,
    every candidate's development score and each component's fingerprint: `seedr evaluate` tests the
    fused run against each component.

    Example: seedr fuse bm25.trec dense.trec --dev-run bm25-dev.trec --dev-run dense-dev.trec --dev-qrels dev.tsv --method minmax --method rrf --out hybrid.trec

    Example: seedr fuse bm25.trec dense.trec --out rrf.trec   (RRF, k 60, equal weights)
    """
    fused = fusing.run(config)
    for message in fused.warnings:
        _warn(message)
    selection = fused.selection
    if selection is not None:
        console.print(f"chosen on the development split: {fused.fusion.describe()}, {selection.metric} "
                      f"{selection.value:.4f} (of {len(selection.candidates)} candidates)", highlight=False)
    console.print(f"{fused.fusion.describe()}: {len(fused.run)} queries, {fused.lines} lines written to "
                  f"[bold]{config.out}[/] (its record: {fused.record.name})")
