"""``encode``, ``index`` and ``search`` from Python, and what they return: ``Embeddings``, an ``Index`` whose
``search(text, k)`` gives ``Hit``s, a ``SearchRun``."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from seedr.api.keywords import keywords_of
from seedr.config.settings import ENCODE_BATCH_SIZE
from seedr.pipeline import encode as encoding
from seedr.pipeline import index as indexing
from seedr.pipeline import search as searching
from seedr.pipeline.common import Source, model_name
from seedr.pipeline.encode import EncodeConfig
from seedr.pipeline.index import IndexConfig
from seedr.pipeline.search import SearchConfig, SearchRun


@dataclasses.dataclass(frozen=True)
class Embeddings:
    """An embeddings folder written by ``encode`` (``embeddings-*.npy``, ``ids-*.txt``, ``manifest.json``).

    Attributes:
        path: the folder.
        corpus: the corpus it encodes, when known (``index`` passes it on, so that hits carry their texts).
        complete: whether the folder is whole (under several processes, only the last one to finish
            completes it).
    """

    path: Path
    corpus: Source | None = None
    complete: bool = True

    def __fspath__(self) -> str:
        return os.fspath(self.path)


@keywords_of(EncodeConfig)
def encode(config: EncodeConfig) -> Embeddings:
    """Encode every document of ``corpus`` into ``out`` (``seedr encode``); calling it again resumes.

    Documents are encoded as the model was trained (its folder records pooling, normalisation, length and
    how titles enter: by default ``title [SEP] text`` as a text pair). Under ``torchrun`` / ``accelerate
    launch`` each process encodes its own shards.

    Example:
        >>> embeddings = seedr.encode(retriever, "scifact/corpus.jsonl", "runs/emb")
    """
    encoded = encoding.run(config)
    return Embeddings(encoded.path, config.corpus, complete=encoded.complete)


@dataclasses.dataclass(frozen=True)
class Hit:
    """One retrieved document: its id, its score and, when the corpus is known, its title and text."""

    id: str
    score: float
    text: str | None = None
    title: str | None = None


class Index:
    """A faiss index folder (``index``, ``seedr index``) and the encoder its queries need.

    ``search`` encodes queries as the documents were (the model the index records, checked by
    fingerprint) and returns ``Hit``s; with the corpus known (given here, or passed on from ``encode``),
    hits carry their titles and texts.

    Example:
        >>> index = seedr.Index("runs/scifact-index", corpus="scifact/corpus.jsonl")
        >>> index.search("what causes tides?", k=3)[0]
        Hit(id='4983', score=93.1, text='...', title='...')
    """

    def __init__(self, path: str | os.PathLike, *, corpus: Source | None = None,
                 model: str | os.PathLike | None = None, mmap: bool = False, device: str | None = None) -> None:
        self.path = Path(path)
        self.corpus = corpus
        self.model = model_name(model)
        self.mmap = mmap
        self.device = device

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __repr__(self) -> str:
        return f"Index({str(self.path)!r})"

    @functools.cached_property
    def searcher(self) -> Any:
        """The ``seedr.retrieval.faiss_index.DenseIndex``, read once."""
        from seedr.retrieval.faiss_index import DenseIndex

        return DenseIndex.load(self.path, mmap=self.mmap)

    @functools.cached_property
    def encoder(self) -> Any:
        """The query encoder (``seedr.retrieval.encode.TextEncoder``) the index records."""
        return searching.query_encoder(self.searcher, self.path, self.model, device=self.device)

    @functools.cached_property
    def documents(self) -> Mapping[str, Any]:
        """The corpus by id (``{}`` when it is not known): read once, on the first search."""
        from seedr.data.corpus import load_corpus

        return load_corpus(self.corpus) if self.corpus is not None else {}

    def search(self, queries: str | Sequence[str] | Mapping[str, str], k: int = 10,
               batch_size: int = ENCODE_BATCH_SIZE) -> list[Hit] | list[list[Hit]] | dict[str, list[Hit]]:
        """The top ``k`` documents of one query (a list of ``Hit``), of several (a list of lists, in order)
        or of ``{qid: text}`` (``{qid: hits}``), best first; ties broken by document id: ``seedr search`` over
        this index, its run kept in memory."""
        from seedr.data.runs import rank_documents

        given = {"0": queries} if isinstance(queries, str) else (
            dict(queries) if isinstance(queries, Mapping) else {str(i): text for i, text in enumerate(queries)})
        config = SearchConfig(queries=given, index=self.path, model=self.model, k=k, batch_size=batch_size,
                              device=self.device, mmap=self.mmap, show_progress=False)  # refuses a bad k first
        run = searching.dense_search(self.searcher, self.encoder, given, config)
        hits = {qid: [self._hit(doc, score) for doc, score in rank_documents(run.get(qid, {}))] for qid in given}
        if isinstance(queries, str):
            return hits["0"]
        return hits if isinstance(queries, Mapping) else [hits[qid] for qid in given]

    def _hit(self, doc: str, score: float) -> Hit:
        document = self.documents.get(doc)
        if document is None:
            return Hit(doc, float(score))
        return Hit(doc, float(score), document.text, document.title)


@keywords_of(IndexConfig)
def index(config: IndexConfig) -> Index:
    """Build a faiss index folder from an embeddings folder (``seedr index``) and return it, ready to search.

    ``factory`` is a faiss ``index_factory`` string (``Flat``, ``HNSW32``, ``IVF256,PQ16np`` ...);
    ``corpus`` (default: the one ``encode`` read, when ``embeddings`` comes from it) gives hits their texts.

    Example:
        >>> index = seedr.index(embeddings, "runs/index")
        >>> index.search("what causes tides?", k=10)
    """
    indexing.run(config)
    corpus = config.corpus
    if corpus is None and isinstance(config.embeddings, Embeddings):
        corpus = config.embeddings.corpus
    return Index(config.out, corpus=corpus)


@keywords_of(SearchConfig)
def search(config: SearchConfig) -> SearchRun:
    """Rank documents for a batch of queries (``seedr search``): a dense ``index`` or ``bm25`` over a
    ``corpus``; the top ``k`` of each query, written as a TREC run to ``out`` when given.

    Exactly one of ``queries`` (BEIR queries.jsonl, TSV, parquet, a Dataset, a list of dicts or
    ``{qid: text}``), ``questions`` (NQ-open / DPR QA JSONL) or ``reqa`` (SQuAD JSON: its questions against its
    sentence candidates).

    Example:
        >>> bm25_run = seedr.search("runs/bm25.trec", bm25=True, corpus="scifact/corpus.jsonl",
        ...                         queries="scifact/queries.jsonl")
    """
    return searching.run(config)
