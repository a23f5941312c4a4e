"""`seedr index`: build a faiss index folder from embedding shards."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seedr.api import index as build_index
from seedr.api.arguments import option_range
from seedr.stages.common import clear_errors, console


@clear_errors
def command(
    embeddings: Annotated[Path, typer.Option("--embeddings", help="Folder written by `seedr encode`.")],
    out: Annotated[Path, typer.Option(
        "--out", help="Index folder to write (index.faiss, ids.txt, index.json)."
    )],
    factory: Annotated[str, typer.Option(
        "--factory", help="faiss index_factory string: Flat, HNSW32, IVF256,PQ16np ... "
        "(np: no polysemous training, which plain PQ search does not use and which is slow)"
    )] = "Flat",
    metric: Annotated[str, typer.Option("--metric", help="ip (dot product), cosine or l2.")] = "ip",
    train_sample: Annotated[int | None, typer.Option(
        "--train-sample", **option_range("index", "train_sample"),
        help="Vectors to train IVF/PQ on (default: all)."
    )] = None,
    seed: Annotated[int, typer.Option(
        "--seed", **option_range("index", "seed"), help="Seed of the training sample.")] = 0,
    gpu: Annotated[bool, typer.Option(
        "--gpu/--no-gpu", help="Train IVF k-means on every GPU when faiss has GPU support (default: yes)."
    )] = True,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Replace OUT when it already holds an index.")] = False,
) -> None:
    """Index the embeddings of a corpus for `seedr search`; the folder records how it was made.

    Reads the shards of every process of `seedr encode` from disk a chunk at a time (memory-mapped),
    training IVF/PQ on --train-sample vectors only.

    Example: seedr index --embeddings runs/scifact-emb --out runs/scifact-index --factory HNSW32
    """

    built = build_index(embeddings, out, factory=factory, metric=metric, train_sample=train_sample, seed=seed,
                        gpu=gpu, overwrite=overwrite)
    console.print(f"{factory} index of {len(built.searcher.ids)} vectors written to [bold]{out}[/]")
