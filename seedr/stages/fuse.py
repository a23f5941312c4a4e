"""`seedr fuse`: hybrid retrieval — fuse TREC runs (BM25, dense ...) by RRF or a normalised convex
combination, the weights chosen on a development split and recorded with the fused run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seedr.io import check_output
from seedr.stages.common import clear_errors, console, locks_output


def _warn(message: str) -> None:
    from rich.markup import escape

    console.print(f"[yellow]warning[/]: {escape(message)}", soft_wrap=True, highlight=False)


@clear_errors
@locks_output("out")
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
        "--weight", min=0.0, help="One per run, in their order: fixed weights (normalised to sum to 1). "
                                  "Default: chosen on the development split, else equal."
    )] = None,
    rrf_k: Annotated[list[int] | None, typer.Option(
        "--rrf-k", min=1, help="RRF's k (default 60, Cormack et al. 2009); repeatable with a development "
                               "split: the best of them."
    )] = None,
    k: Annotated[int | None, typer.Option(
        "--k", min=1, help="Documents per query in the fused run (default: as many as the deepest run)."
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
        "--grid-step", min=0.01, max=1.0, help="Development split: weights tried on the simplex in steps "
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
    from seedr.data.runs import read_trec_run
    from seedr.evaluation.development import development_objective
    from seedr.evaluation.metrics import run_depth
    from seedr.retrieval.fusion import (
        RRF_K,
        Fusion,
        component_entry,
        fuse,
        select_fusion,
        shared_queries,
        weight_grid,
        write_fused_run,
    )

    methods = list(dict.fromkeys(method or ["rrf"]))
    ks = list(dict.fromkeys(rrf_k or [RRF_K]))
    if len(runs) < 2:
        raise ValueError(f"give at least two runs to fuse, got {len(runs)}")
    if weight is not None and len(weight) != len(runs):
        raise ValueError(f"{len(weight)} --weight for {len(runs)} runs: give one per run, in their order")
    if dev_qrels is not None and dev_qa_answers:
        raise ValueError("give one development split: --dev-qrels or --dev-qa-answers")
    judged = dev_qrels is not None or bool(dev_qa_answers)
    if bool(dev_run) != judged:
        raise ValueError("a development split is --dev-run (one per run) with --dev-qrels or --dev-qa-answers")
    if dev_run and len(dev_run) != len(runs):
        raise ValueError(f"{len(dev_run)} --dev-run for {len(runs)} runs: give one per run, in the same order")
    if not dev_run and (len(methods) > 1 or len(ks) > 1):
        raise ValueError("several --method or --rrf-k need a development split to choose among them")
    if dev_qa_answers and not corpus:
        raise ValueError("--dev-qa-answers needs --corpus, the passage corpus the runs rank")
    if dev_run and weight is None:
        weight_grid(len(runs), grid_step)  # a step that does not divide 1: said before anything is read
    read = [*runs, *(dev_run or []), dev_qrels, *(dev_qa_answers or []), *(corpus or [])]
    check_output(out, "TREC run", overwrite=overwrite, inputs=[path for path in read if path and path.exists()])

    loaded = [read_trec_run(path) for path in runs]
    for path, run in zip(runs, loaded):
        if not run:
            raise ValueError(f"{path}: the run ranks no documents (an empty run file): nothing to fuse")
    queries, warnings = shared_queries(runs, loaded)
    depth = k or max(run_depth(run) for run in loaded)

    selection, development = None, None
    if dev_run:
        dev_loaded = [read_trec_run(path) for path in dev_run]
        dev_queries, dev_warnings = shared_queries(dev_run, dev_loaded)
        warnings += dev_warnings
        if queries and dev_queries and dev_queries.get("sha256") == queries.get("sha256"):
            warnings.append("the development runs answer the same queries as the runs fused: the weights are "
                            "chosen on the queries they will be evaluated on")
        objective, split, split_warnings = development_objective(
            dev_run, dev_loaded, qrels=dev_qrels, qa_answers=dev_qa_answers, corpus=corpus, qa_title=qa_title,
            metric=metric)
        warnings += split_warnings
        for message in warnings:
            _warn(message)
        selection = select_fusion(dev_loaded, objective, methods, weight, grid_step, ks, depth,
                                  show_progress=True)
        fusion = selection.best
        read = [component_entry(path, run) for path, run in zip(dev_run, dev_loaded)]
        development = {"development": {**split, "queries": dev_queries, "runs": read}}
        console.print(f"chosen on the development split: {fusion.describe()}, {selection.metric} "
                      f"{selection.value:.4f} (of {len(selection.candidates)} candidates)", highlight=False)
    else:
        for message in warnings:
            _warn(message)
        fusion = Fusion(methods[0], tuple(weight or [1.0] * len(runs)), ks[0])
    fused = fuse(loaded, fusion, depth)
    lines, record = write_fused_run(out, fused, fusion, list(zip(runs, loaded)), queries, depth, tag,
                                    selection, development)
    console.print(f"{fusion.describe()}: {len(fused)} queries, {lines} lines written to [bold]{out}[/] "
                  f"(its record: {record.name})")
