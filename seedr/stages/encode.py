"""`seedr encode`: embed a corpus into resumable ``.npy`` shards with a trained encoder."""

from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Annotated

import typer

from seedr.stages.common import clear_errors, console


@clear_errors
def command(
    model: Annotated[str, typer.Option(
        "--model", help="Encoder: a model folder, a seedr run folder, or 'minilm'."
    )],
    corpus: Annotated[list[Path], typer.Option(
        "--corpus", help="Corpus in any format seedr reads (BEIR, seedr JSONL, MS MARCO TSV, articles ...): "
                         "a file, a folder (of shards, or made by `seedr prepare`) or a quoted glob; repeatable."
    )],
    out: Annotated[Path, typer.Option(
        "--out", help="Folder for embeddings-*.npy, ids-*.txt and manifest.json."
    )],
    pooling: Annotated[str | None, typer.Option(
        "--pooling", help="cls or mean (default: the model's own setting, else cls)."
    )] = None,
    normalize: Annotated[bool | None, typer.Option(
        "--normalize/--no-normalize", help="L2-normalise vectors (default: the model's own setting, else no)."
    )] = None,
    max_length: Annotated[int | None, typer.Option(
        "--max-length", help="Tokens per document (default: the model's, else 512)."
    )] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Documents per forward pass.")] = 64,
    dtype: Annotated[str, typer.Option("--dtype", help="Stored precision: float32 or float16.")] = "float32",
    compute_dtype: Annotated[str, typer.Option(
        "--compute-dtype", help="Precision of the forward pass: auto (bfloat16 autocast where the CPU or GPU "
                                "computes bf16 natively, else float32), float32, bfloat16 or float16. "
                                "--compute-dtype float32 turns bf16 off. Recorded with the embeddings; "
                                "`seedr search` encodes queries the same way."
    )] = "auto",
    shard_size: Annotated[int, typer.Option(
        "--shard-size", help="Documents per shard (the unit of resumption)."
    )] = 50_000,
    limit: Annotated[int | None, typer.Option("--limit", help="Encode only the first N documents.")] = None,
    use_title: Annotated[bool, typer.Option(
        "--title/--no-title", help="Encode 'title [SEP] text' (DPR/ANCE) or text only."
    )] = True,
    document_prefix: Annotated[str, typer.Option(
        "--document-prefix", help="Text put before every document."
    )] = "",
    long_documents: Annotated[str | None, typer.Option(
        "--long-documents", help="Cut documents longer than --max-length into passages: firstp or maxp."
    )] = None,
    device: Annotated[str | None, typer.Option(
        "--device", help="cpu, cuda ... (default: cuda when available)."
    )] = None,
) -> None:
    """Encode every document of a corpus; run the same command again to resume an interrupted run.

    Example: seedr encode --model runs/finetune-seed --corpus scifact/corpus.jsonl --out runs/scifact-emb
    """
    from seedr.data.corpus import count_documents, read_corpus
    from seedr.retrieval.encode import (
        TextEncoder,
        encode_corpus_to_shards,
        long_document_passages,
        model_defaults,
    )

    defaults = model_defaults(model)
    encoder = TextEncoder(model, pooling=pooling or defaults["pooling"],
                          normalize=defaults["normalize"] if normalize is None else normalize,
                          max_length=max_length or defaults["max_length"], device=device, dtype=compute_dtype,
                          document_prefix=document_prefix)
    documents = read_corpus(corpus)
    total = count_documents(corpus)  # for the progress bar's ETA (None when the format cannot tell cheaply)
    if limit is not None:
        documents = islice(documents, limit)
        total = min(limit, total) if total is not None else None
    extra = {}
    if long_documents is not None:
        total = None  # passages, not documents
        documents = long_document_passages(documents, encoder.tokenizer, long_documents, encoder.max_length)
        extra = {"long_documents": long_documents}
    target = encode_corpus_to_shards(encoder, documents, out, shard_size=shard_size, dtype=dtype,
                                     batch_size=batch_size, use_title=use_title, extra_settings=extra,
                                     total=total)
    console.print(f"embeddings written to [bold]{target}[/] "
                  f"(pooling {encoder.pooling}, normalize {encoder.normalize}, "
                  f"max length {encoder.max_length}, computed in {encoder.settings()['compute_dtype']})")
