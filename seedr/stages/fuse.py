"""`seedr fuse`: hybrid retrieval — fuse TREC runs (BM25, dense ...) by RRF or a normalised convex
combination, the weights chosen on a development split and recorded with the fused run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seedr.api import fuse
from seedr.api.arguments import option_range
from seedr.stages.common import clear_errors, console


def _warn(message: str) -> None:
    from rich.markup import escape

    console.print(f"[yellow]warning[/]: {escape(message)}", soft_wrap=True, highlight=False)


@clear_errors
def command(
    runs: Annotated[list[Path], typer.Argument(
        help="TREC runs to fuse (two or more, of the same queries), e.g. from `seedr search --bm25` and a "
             "dense `seedr search`."
    )],
    out: Annotated[Path, typer.Option("--out", help="Fused TREC run to write (its record: <out>.json).")],
    method: Annotated[list[str] | None, typer.Option(
        "--method", help="Fusion: minmax, rrf, zscore (min-max or z-score normalised convex combination, "
                         "reciprocal rank fusion). Repeatable with a development split: the best of them. "
                         "Default: rrf."
    )] = None,
    weight: Annotated[list[float] | None, typer.Option(
        "--weight", **option_range("fuse", "weight"), help="One per run, in their order: fixed weights (normalised to sum to 1). "
                                  "Default: chosen on the development split, else equal."
    )] = None,
    rrf_k: Annotated[list[int] | None, typer.Option(
        "--rrf-k", **option_range("fuse", "rrf_k"), help="RRF's k (default 60, Cormack et al. 2009); repeatable with a development "
                               "split: the best of them."
    )] = None,
    k: Annotated[int | None, typer.Option(
        "--k", **option_range("fuse", "k"), help="Documents per query in the fused run (default: as many as the deepest run)."
    )] = None,
    tag: Annotated[str, typer.Option("--tag", help="Run tag, last column.")] = "fused",
    dev_run: Annotated[list[Path] | None, typer.Option(
        "--dev-run", help="Development split: the same systems' runs of the development queries, one per "
                          "run and in the same order; the weights are chosen on them."
    )] = None,
    dev_qrels: Annotated[Path | None, typer.Option(
        "--dev-qrels", help="Development split: relevance judgments of its queries (TREC or BEIR qrels)."
    )] = None,
    dev_qa_answers: Annotated[list[Path] | None, typer.Option(
        "--dev-qa-answers", help="Or: its NQ-open / DPR QA JSONL questions with answers (with --corpus); "
                                 "repeatable, folders and quoted globs too."
    )] = None,
    corpus: Annotated[list[Path] | None, typer.Option(
        "--corpus", help="QA development split: the passage corpus the runs rank (file, folder or quoted "
                         "glob; repeatable)."
    )] = None,
    qa_title: Annotated[bool, typer.Option(
        "--qa-title/--no-qa-title", help="QA development split: look for answers in passage titles too."
    )] = False,
    metric: Annotated[str | None, typer.Option(
        "--metric", help="What the development split is scored by: an ir_measures name with --dev-qrels "
                         "(default nDCG@10), Top-k with --dev-qa-answers (default Top-20)."
    )] = None,
    grid_step: Annotated[float, typer.Option(
        "--grid-step", **option_range("fuse", "grid_step"), help="Development split: weights tried on the simplex in steps "
                                               "of this (must divide 1)."
    )] = 0.1,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Replace OUT when it is a run seedr wrote (with its record); nothing else is replaced."
    )] = False,
) -> None:
    """Fuse runs into one (hybrid retrieval), choosing the weights on a development split.

    Every method sums, with one weight per run, a per-query transform of each run's ranking: 1/(k + rank)
    (rrf), min-max normalised scores (minmax) or z-scores (zscore); a document a run does not rank takes
    that run's lowest value. The record beside the fused run (<out>.json) holds the queries, the fusion,
    every candidate's development score and each component's fingerprint: `seedr evaluate` tests the
    fused run against each component.

    Example: seedr fuse bm25.trec dense.trec --dev-run bm25-dev.trec --dev-run dense-dev.trec --dev-qrels dev.tsv --method minmax --method rrf --out hybrid.trec

    Example: seedr fuse bm25.trec dense.trec --out rrf.trec   (RRF, k 60, equal weights)
    """
    fused = fuse([*runs], out, method=method, weight=weight, rrf_k=rrf_k, k=k, tag=tag, dev_run=dev_run,
                 dev_qrels=dev_qrels, dev_qa_answers=dev_qa_answers, corpus=corpus, qa_title=qa_title, metric=metric,
                 grid_step=grid_step, overwrite=overwrite)
    for message in fused.warnings:
        _warn(message)
    selection = fused.selection
    if selection is not None:
        console.print(f"chosen on the development split: {fused.fusion.describe()}, {selection.metric} "
                      f"{selection.value:.4f} (of {len(selection.candidates)} candidates)", highlight=False)
    console.print(f"{fused.fusion.describe()}: {len(fused.run)} queries, {fused.lines} lines written to [bold]{out}[/] "
                  f"(its record: {fused.record.name})")
