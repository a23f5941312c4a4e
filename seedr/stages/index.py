"""`seedr index`: build a faiss index folder from embedding shards."""

from __future__ import annotations

from seedr.pipeline import index as indexing
from seedr.pipeline.index import IndexConfig
from seedr.stages.common import console
from seedr.stages.options import options_of


@options_of(IndexConfig)
def command(config: IndexConfig) -> None:
    """Index the embeddings of a corpus for `seedr search`; the folder records how it was made.

    Reads the shards of every process of `seedr encode` from disk a chunk at a time (memory-mapped),
    training IVF/PQ on --train-sample vectors only.

    Example: seedr index --embeddings runs/scifact-emb --out runs/scifact-index --factory HNSW32
    """
    built = indexing.run(config)
    console.print(f"{config.factory} index of {len(built.ids)} vectors written to [bold]{config.out}[/]")
