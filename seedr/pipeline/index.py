"""Build a faiss index folder from an embeddings folder: ``seedr index``, ``seedr.index`` and every dense
retrieval of an experiment (which keeps the index in memory: ``build``) run this."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from seedr.io import check_output
from seedr.pipeline.common import Source, input_paths, locked
from seedr.pipeline.options import AT_LEAST_ONE, NOT_NEGATIVE, check_options, option


@dataclasses.dataclass(kw_only=True)
class IndexConfig:
    """What ``index`` runs with."""

    embeddings: str | os.PathLike = option(help="Folder written by `seedr encode`.", cli_type=Path, positional=True)
    out: Path = option(help="Index folder to write (index.faiss, ids.txt, index.json).", positional=True)
    factory: str = option(
        "Flat", help="faiss index_factory string: Flat, HNSW32, IVF256,PQ16np ... (np: no polysemous training, "
                     "which plain PQ search does not use and which is slow)")
    metric: str = option("ip", help="ip (dot product), cosine or l2.")
    train_sample: int | None = option(None, help="Vectors to train IVF/PQ on (default: all).", bound=AT_LEAST_ONE)
    seed: int = option(0, help="Seed of the training sample.", bound=NOT_NEGATIVE)
    gpu: bool = option(True, help="Train IVF k-means on every GPU when faiss has GPU support (default: yes).",
                       flag="--gpu/--no-gpu")
    overwrite: bool = option(False, help="Replace OUT when it already holds an index.")
    corpus: Source | None = option(
        None, help="The corpus the embeddings encode, for hits to carry their texts (default: the one `encode` "
                   "read, when the embeddings come from it).", command_line=False)
    show_progress: bool = option(True, help="Show a progress bar.", command_line=False)

    def __post_init__(self) -> None:
        check_options(self)
        self.out = Path(self.out)


def build(config: IndexConfig) -> Any:
    """The ``seedr.retrieval.faiss_index.DenseIndex`` of ``config.embeddings``, in memory: read a chunk at a
    time (memory-mapped), IVF/PQ trained on ``train_sample`` vectors; it records the encoder's settings (and
    how long documents were cut), so that queries are encoded as the documents were."""
    from seedr.retrieval.embeddings import load_embeddings, read_manifest
    from seedr.retrieval.faiss_index import DenseIndex

    manifest = read_manifest(config.embeddings)
    ids, vectors = load_embeddings(config.embeddings)
    return DenseIndex.build(vectors, ids, factory=config.factory, metric=config.metric,
                            train_sample=config.train_sample, seed=config.seed,
                            encoder={**manifest["encoder"], **manifest["extra"]},
                            show_progress=config.show_progress, gpu=config.gpu)


def run(config: IndexConfig) -> Any:
    """Build the index (``build``) and write it to ``config.out``; returns the ``DenseIndex``."""
    with locked(config.out):
        check_output(config.out, "faiss index", overwrite=config.overwrite, inputs=input_paths(config.embeddings))
        built = build(config)
        built.save(config.out)
    return built


__all__ = ["IndexConfig", "build", "run"]
