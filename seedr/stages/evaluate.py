"""`seedr evaluate`: score TREC runs — IR metrics, QA answer coverage, ReQA or MIND impressions — with
significance tests."""

from __future__ import annotations

from seedr.pipeline import evaluate as evaluation
from seedr.pipeline.evaluate import EvaluateConfig
from seedr.stages.common import console
from seedr.stages.options import options_of


@options_of(EvaluateConfig)
def command(config: EvaluateConfig) -> None:
    """Evaluate runs (queries missing from a run score 0; ties broken by document id) and compare them.

    Metrics with a cutoff beyond the runs' depth (R@1000 or Top-100 on runs of 100 or 20 documents a query)
    are left out, with a note. QA and ReQA runs must record the questions they were searched with (`seedr
    search` writes RUN.json beside RUN): a run without one is refused unless --force. With several runs, each cell shows the difference to the baseline and its p-value.

    A fused run (`seedr fuse`) is also tested against each run it was fused from, one table each.

    Example: seedr evaluate dense.trec bm25.trec --qrels scifact/qrels/test.tsv --baseline bm25.trec

    Example: seedr evaluate reranked.trec --mind MINDsmall_dev/behaviors.tsv   (AUC, MRR, nDCG@5, nDCG@10)
    """
    from rich.console import Console

    evaluated = evaluation.run(config)
    for note in evaluated.notes:
        console.print(note, soft_wrap=True, highlight=False, markup=False)
    for table in evaluated.tables():
        Console().print(table)
