"""`seedr evaluate`: score TREC runs — IR metrics, QA answer coverage or ReQA — with significance tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from seedr.api import evaluate
from seedr.api.arguments import option_range
from seedr.evaluation import DEFAULT_METRICS
from seedr.io import EVALUATION_MARKDOWN_MARKER, atomic_files, check_output
from seedr.stages.common import clear_errors, console


@clear_errors
def command(
    runs: Annotated[list[Path], typer.Argument(help="TREC run files (several: a comparison table).")],
    qrels: Annotated[Path | None, typer.Option(
        "--qrels", help="Relevance judgments: TREC qrels, BEIR qrels TSV, parquet or a Hugging Face "
                         "save_to_disk folder (query-id, corpus-id, score)."
    )] = None,
    metrics: Annotated[str, typer.Option(
        "--metrics", help="Comma-separated ir_measures names: MRR@10, nDCG@10, R@100, MAP, R(rel=2)@1000 ..."
    )] = ",".join(DEFAULT_METRICS),
    qa_answers: Annotated[list[Path] | None, typer.Option(
        "--qa-answers", help="QA coverage: NQ-open / DPR QA JSONL with answers, the questions the runs "
                             "were searched with (repeatable, folders and quoted globs too)."
    )] = None,
    corpus: Annotated[list[Path] | None, typer.Option(
        "--corpus", help="QA coverage: the passage corpus the runs rank: a file, a folder (of shards, or "
                         "made by `seedr prepare`) or a quoted glob; repeatable."
    )] = None,
    ks: Annotated[str, typer.Option("--ks", help="QA coverage: the k of top-k accuracy.")] = "1,5,20,100",
    qa_title: Annotated[bool, typer.Option(
        "--qa-title/--no-qa-title", help="QA coverage: look for answers in passage titles too. Default: text "
                                         "only, DPR's convention (its has_answer reads the passage text), so "
                                         "figures compare with DPR's Table 2; retrieval still reads titles "
                                         "(BM25 indexes them, encoders see 'title [SEP] text')."
    )] = False,
    reqa: Annotated[Path | None, typer.Option(
        "--reqa", help="ReQA: the SQuAD JSON the runs were made from (Recall@k, MRR)."
    )] = None,
    baseline: Annotated[Path | None, typer.Option(
        "--baseline", help="Run to test the others against (default: the first)."
    )] = None,
    test: Annotated[str, typer.Option(
        "--test", help="Paired test: permutation (SEED-Encoder) or ttest (CPDAE)."
    )] = "permutation",
    alpha: Annotated[float, typer.Option(
        "--alpha", **option_range("evaluate", "alpha"), help="Significance level.")] = 0.05,
    resamples: Annotated[int, typer.Option(
        "--resamples", **option_range("evaluate", "resamples"), help="Permutation test resamples.")] = 10_000,
    ignore_identical_ids: Annotated[bool, typer.Option(
        "--ignore-identical-ids", help="Drop documents whose id is the query's (BEIR's option)."
    )] = False,
    components: Annotated[bool, typer.Option(
        "--components/--no-components", help="Test each fused run (`seedr fuse`) against each run it was fused "
                                             "from, read from its record (unless given among the runs)."
    )] = True,
    force: Annotated[bool, typer.Option(
        "--force", help="QA coverage and ReQA: score a run that does not record the questions it was searched "
                        "with (no RUN.json beside it: a run made by another tool), with a warning; without it, "
                        "such a run is refused."
    )] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results as JSON.")] = None,
    markdown_out: Annotated[Path | None, typer.Option(
        "--markdown", help="Write the table as Markdown."
    )] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Replace --json / --markdown files seedr evaluate wrote before (nothing else)."
    )] = False,
) -> None:
    """Evaluate runs (queries missing from a run score 0; ties broken by document id) and compare them.

    Metrics with a cutoff beyond the runs' depth (R@1000 or Top-100 on runs of 100 or 20 documents a query)
    are left out, with a note. QA and ReQA runs must record the questions they were searched with (`seedr
    search` writes RUN.json beside RUN): a run without one is refused unless --force. With several runs, each cell shows the difference to the baseline and its p-value.

    A fused run (`seedr fuse`) is also tested against each run it was fused from, one table each.

    Example: seedr evaluate dense.trec bm25.trec --qrels scifact/qrels/test.tsv --baseline bm25.trec
    """
    from rich.console import Console

    read = [path for path in (*runs, qrels, *(qa_answers or []), *(corpus or []), reqa) if path and path.exists()]
    for path, kind, option in ((json_out, "evaluation JSON", "--json"), (markdown_out, "evaluation Markdown",
                                                                       "--markdown")):
        if path is not None:
            check_output(path, kind, overwrite=overwrite, inputs=read, option=option)
    try:
        cutoffs = [int(k) for k in ks.split(",") if k.strip()]
    except ValueError:
        raise ValueError(f"--ks: {ks!r} is not a comma-separated list of integers") from None
    evaluation = evaluate(runs, qrels=qrels, metrics=metrics, qa_answers=qa_answers or None, corpus=corpus or None,
                          ks=cutoffs, qa_title=qa_title, reqa=reqa, baseline=baseline, test=test, alpha=alpha,
                          resamples=resamples, ignore_identical_ids=ignore_identical_ids, components=components,
                          force=force)
    for note in evaluation.notes:
        console.print(note, soft_wrap=True, highlight=False, markup=False)
    for table in evaluation.tables():
        Console().print(table)
    with atomic_files() as files:  # both or neither: a full disk at the Markdown keeps no JSON
        if json_out is not None:
            with files.write(json_out) as stream:
                json.dump(evaluation.to_dict(), stream, indent=2)
        if markdown_out is not None:
            with files.write(markdown_out) as stream:
                stream.write(f"{EVALUATION_MARKDOWN_MARKER}\n{evaluation.to_markdown()}")
