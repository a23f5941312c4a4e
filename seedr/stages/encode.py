"""`seedr encode`: embed a corpus into resumable ``.npy`` shards with a trained encoder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seedr.api import encode
from seedr.api.arguments import option_range
from seedr.config.settings import ENCODE_BATCH_SIZE
from seedr.io.run_folders import CHECKPOINTS, PRODUCT
from seedr.stages.common import clear_errors, console


def _say_which_step(model: str, device: str | None) -> None:
    """For a run folder: which step of the run its ``encoder/`` is, and a warning when a newer checkpoint
    exists (a run killed between a checkpoint and the product's update, not yet resumed); said by the main
    process. Torch is imported only for a run folder, so that any other model's missing input is refused at
    once (``seedr.api.encode``)."""
    run = Path(model).expanduser()
    if not ((run / PRODUCT / "config.json").exists() and (run / CHECKPOINTS).is_dir()):
        return
    from accelerate import PartialState
    from rich.markup import escape

    from seedr.engine.checkpoint import product_steps

    if not PartialState(cpu=device == "cpu").is_main_process:
        return
    step, newest = product_steps(run)
    if step is not None:
        console.print(f"model: {escape(str(run / PRODUCT))}, step {step} of the run", highlight=False)
    if newest is not None and (step is None or newest > step):
        which = f"step {step}" if step is not None else "of no kept checkpoint"
        console.print(escape(f"warning: {run / PRODUCT} is {which}, but the run has a newer checkpoint, step "
                             f"{newest}: it was stopped before publishing it. Resume the run (--resume) to publish "
                             f"it, or encode {run / CHECKPOINTS / f'step-{newest}' / PRODUCT}"),
                      style="yellow", soft_wrap=True, highlight=False)


@clear_errors
def command(
    model: Annotated[str, typer.Option(
        "--model", help="Encoder: a model folder, a seedr run folder, or 'minilm'."
    )],
    corpus: Annotated[list[Path], typer.Option(
        "--corpus", help="Corpus in any format seedr reads (BEIR, seedr JSONL, MS MARCO TSV, articles, parquet, "
                         "a Hugging Face save_to_disk folder ...): a file, a folder (of shards, or made by `seedr "
                         "prepare`) or a quoted glob; repeatable."
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
        "--max-length", **option_range("encode", "max_length"),
        help="Tokens per document (default: the model's, else 512)."
    )] = None,
    batch_size: Annotated[int, typer.Option(
        "--batch-size", **option_range("encode", "batch_size"), help="Documents per forward pass.")] = ENCODE_BATCH_SIZE,
    dtype: Annotated[str, typer.Option("--dtype", help="Stored precision: float32 or float16.")] = "float32",
    compute_dtype: Annotated[str, typer.Option(
        "--compute-dtype", help="Precision of the forward pass: auto (bfloat16 autocast where the CPU or GPU "
                                "computes bf16 natively, else float32), float32, bfloat16 or float16. "
                                "--compute-dtype float32 turns bf16 off. Recorded with the embeddings; "
                                "`seedr search` encodes queries the same way."
    )] = "auto",
    shard_size: Annotated[int, typer.Option(
        "--shard-size", **option_range("encode", "shard_size"),
        help="Documents per shard (the unit of resumption)."
    )] = 50_000,
    limit: Annotated[int | None, typer.Option(
        "--limit", **option_range("encode", "limit"), help="Encode only the first N documents.")] = None,
    title: Annotated[str | None, typer.Option(
        "--title", help="How titles are encoded: pair ('title [SEP] text', DPR/ANCE), join ('title text' as "
                        "one segment, BEIR) or none (text only); default: the model folder's, else pair."
    )] = None,
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

    Under `torchrun` or `accelerate launch` each process encodes its own shards on its own device
    (shard i goes to process i mod N); the last process to finish completes the folder, whose shards
    are those one process makes.

    Example: seedr encode --model runs/finetune-seed --corpus scifact/corpus.jsonl --out runs/scifact-emb
    """
    _say_which_step(model, device)
    embeddings = encode(model, corpus, out, pooling=pooling, normalize=normalize, max_length=max_length,
                        batch_size=batch_size, dtype=dtype, compute_dtype=compute_dtype, shard_size=shard_size,
                        limit=limit, title=title, document_prefix=document_prefix, long_documents=long_documents,
                        device=device)
    if not embeddings.complete:
        from accelerate import PartialState

        state = PartialState()
        console.print(f"process {state.process_index} of {state.num_processes}: its shards are in "
                      f"{embeddings.path}; the last process to finish completes the folder")
        return
    from seedr.retrieval.embeddings import read_manifest

    settings = read_manifest(embeddings.path)["encoder"]
    console.print(f"embeddings written to [bold]{embeddings.path}[/] "
                  f"(pooling {settings['pooling']}, normalize {settings['normalize']}, "
                  f"max length {settings['max_length']}, title {settings['title']}, "
                  f"computed in {settings['compute_dtype']})")
