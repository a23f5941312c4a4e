"""`seedr search`: rank documents for queries — dense (faiss index + encoder) or BM25 — into a TREC run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seedr.api import search
from seedr.api.arguments import option_range
from seedr.config.settings import ENCODE_BATCH_SIZE
from seedr.stages.common import clear_errors, console


@clear_errors
def command(
    out: Annotated[Path, typer.Option("--out", help="TREC run file to write.")],
    queries: Annotated[list[Path] | None, typer.Option(
        "--queries", help="Queries: BEIR queries.jsonl, TSV (qid<TAB>text), parquet or a Hugging Face save_to_disk "
                          "folder, or a BEIR / `seedr prepare` folder holding queries.jsonl; repeatable, quoted globs "
                          "too."
    )] = None,
    questions: Annotated[list[Path] | None, typer.Option(
        "--questions", help="Or questions of NQ-open / DPR QA JSONL files (repeatable, folders and quoted "
                            "globs too)."
    )] = None,
    reqa: Annotated[Path | None, typer.Option(
        "--reqa", help="Or ReQA: SQuAD JSON; its questions against its (sentence, paragraph) candidates."
    )] = None,
    k: Annotated[int, typer.Option("--k", **option_range("search", "k"), help="Documents per query.")] = 100,
    index: Annotated[Path | None, typer.Option(
        "--index", help="Dense: index folder from `seedr index`."
    )] = None,
    model: Annotated[str | None, typer.Option(
        "--model", help="Dense: query encoder (default: the one recorded in the index; another path must hold "
                        "the same weights, checked by fingerprint)."
    )] = None,
    max_length: Annotated[int | None, typer.Option(
        "--max-length", **option_range("search", "max_length"),
        help="Dense: tokens per query (default: as the documents)."
    )] = None,
    query_prefix: Annotated[str | None, typer.Option(
        "--query-prefix", help="Dense: text put before every query."
    )] = None,
    batch_size: Annotated[int, typer.Option(
        "--batch-size", **option_range("search", "batch_size"),
        help="Dense: queries per forward pass.")] = ENCODE_BATCH_SIZE,
    nprobe: Annotated[int | None, typer.Option(
        "--nprobe", **option_range("search", "nprobe"), help="Dense IVF indexes: inverted lists visited."
    )] = None,
    ef_search: Annotated[int | None, typer.Option(
        "--ef-search", **option_range("search", "ef_search"), help="Dense HNSW indexes: search breadth."
    )] = None,
    device: Annotated[str | None, typer.Option("--device", help="Dense: cpu, cuda ...")] = None,
    mmap: Annotated[bool, typer.Option(
        "--mmap", help="Dense: memory-map the index instead of reading it (indexes larger than memory)."
    )] = False,
    bm25: Annotated[bool, typer.Option("--bm25", help="BM25 instead of a dense index.")] = False,
    corpus: Annotated[list[Path] | None, typer.Option(
        "--corpus", help="BM25: corpus to index on the fly: a file (JSONL, TSV, parquet ...), a folder (of shards, "
                         "made by `seedr prepare`, or a Hugging Face save_to_disk folder) or a quoted glob; "
                         "repeatable."
    )] = None,
    bm25_index: Annotated[Path | None, typer.Option(
        "--bm25-index", help="BM25: a saved index folder (or where to save one built from --corpus)."
    )] = None,
    k1: Annotated[float, typer.Option(
        "--k1", **option_range("search", "k1"), help="BM25 k1 (Anserini's default).")] = 0.9,
    b: Annotated[float, typer.Option(
        "--b", **option_range("search", "b"), help="BM25 b (Anserini's default).")] = 0.4,
    tag: Annotated[str | None, typer.Option(
        "--tag", help="Run tag, last column (default: bm25 or the index folder name, spaces as _)."
    )] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Replace OUT when it is a run seedr wrote (with its record), and, BM25, "
                            "--bm25-index when it holds an index; nothing else is replaced.")] = False,
) -> None:
    """Search a dense index or BM25 with a batch of queries and write the top k as a TREC run.

    Example: seedr search --index runs/scifact-index --queries scifact/queries.jsonl --out dense.trec
    """

    result = search(out, queries=queries or None, questions=questions or None, reqa=reqa, k=k, index=index, model=model,
                    max_length=max_length, query_prefix=query_prefix, batch_size=batch_size, nprobe=nprobe,
                    ef_search=ef_search, device=device, mmap=mmap, bm25=bm25, corpus=corpus or None,
                    bm25_index=bm25_index, k1=k1, b=b, tag=tag, overwrite=overwrite)
    lines = sum(len(ranked) for ranked in result.run.values())
    console.print(f"{len(result.run)} queries, {lines} lines written to [bold]{out}[/] (its queries: {out.name}.json)")
