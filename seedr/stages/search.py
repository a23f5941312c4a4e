"""`seedr search`: rank documents for queries — dense (faiss index + encoder) or BM25 — into a TREC run."""

from __future__ import annotations

from seedr.pipeline import search as searching
from seedr.pipeline.search import SearchConfig
from seedr.stages.common import console
from seedr.stages.options import options_of


@options_of(SearchConfig)
def command(config: SearchConfig) -> None:
    """Search a dense index or BM25 with a batch of queries and write the top k as a TREC run.

    Example: seedr search --index runs/scifact-index --queries scifact/queries.jsonl --out dense.trec
    """
    result = searching.run(config)
    lines = sum(len(ranked) for ranked in result.run.values())
    console.print(f"{len(result.run)} queries, {lines} lines written to [bold]{config.out}[/] "
                  f"(its queries: {config.out.name}.json)")
