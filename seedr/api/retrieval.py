"""``encode``, ``index`` and ``search`` from Python, and what they return: ``Embeddings``, an ``Index`` whose
``search(text, k)`` gives ``Hit``s, a ``SearchRun``."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from collections.abc import Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from seedr.api.arguments import checks_arguments
from seedr.api.keywords import keywords_of
from seedr.pipeline.common import Source, input_paths, is_paths, length_of, locked, model_name
from seedr.config.settings import ENCODE_BATCH_SIZE
from seedr.io import atomic_directory, check_output
from seedr.pipeline import encode as encoding
from seedr.pipeline.encode import EncodeConfig, check_inputs


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
        from seedr.retrieval.encode import TextEncoder

        recorded = self.searcher.config.get("encoder") or {}
        if self.model is None and "model" not in recorded:
            raise ValueError(f"{self.path} does not record its encoder: give model=")
        return TextEncoder.from_settings(recorded, self.model, device=self.device)

    @functools.cached_property
    def documents(self) -> Mapping[str, Any]:
        """The corpus by id (``{}`` when it is not known): read once, on the first search."""
        from seedr.data.corpus import load_corpus

        return load_corpus(self.corpus) if self.corpus is not None else {}

    @checks_arguments
    def search(self, queries: str | Sequence[str] | Mapping[str, str], k: int = 10,
               batch_size: int = ENCODE_BATCH_SIZE) -> list[Hit] | list[list[Hit]] | dict[str, list[Hit]]:
        """The top ``k`` documents of one query (a list of ``Hit``), of several (a list of lists, in order)
        or of ``{qid: text}`` (``{qid: hits}``), best first; ties broken by document id."""
        from seedr.data.runs import rank_documents
        from seedr.retrieval.search import search_text

        given = {"0": queries} if isinstance(queries, str) else (
            dict(queries) if isinstance(queries, Mapping) else {str(i): text for i, text in enumerate(queries)})
        run = search_text(self.searcher, self.encoder, given, k, batch_size)
        hits = {qid: [self._hit(doc, score) for doc, score in rank_documents(run.get(qid, {}))] for qid in given}
        if isinstance(queries, str):
            return hits["0"]
        return hits if isinstance(queries, Mapping) else [hits[qid] for qid in given]

    def _hit(self, doc: str, score: float) -> Hit:
        document = self.documents.get(doc)
        if document is None:
            return Hit(doc, float(score))
        return Hit(doc, float(score), document.text, document.title)


@checks_arguments
def index(embeddings: str | os.PathLike, out: str | os.PathLike, *, factory: str = "Flat", metric: str = "ip",
          train_sample: int | None = None, seed: int = 0, gpu: bool = True, overwrite: bool = False,
          corpus: Source | None = None, show_progress: bool = True) -> Index:
    """Build a faiss index folder from an embeddings folder (``seedr index``) and return it, ready to search.

    ``factory`` is a faiss ``index_factory`` string (``Flat``, ``HNSW32``, ``IVF256,PQ16np`` ...);
    ``corpus`` (default: the one ``encode`` read, when ``embeddings`` comes from it) gives hits their texts.

    Example:
        >>> index = seedr.index(embeddings, "runs/index")
        >>> index.search("what causes tides?", k=10)
    """
    from seedr.retrieval.embeddings import load_embeddings, read_manifest
    from seedr.retrieval.faiss_index import DenseIndex

    out = Path(out)
    with locked(out):
        check_output(out, "faiss index", overwrite=overwrite, inputs=input_paths(embeddings))
        manifest = read_manifest(embeddings)
        ids, vectors = load_embeddings(embeddings)
        built = DenseIndex.build(vectors, ids, factory=factory, metric=metric, train_sample=train_sample, seed=seed,
                                 encoder={**manifest["encoder"], **manifest["extra"]}, show_progress=show_progress,
                                 gpu=gpu)
        built.save(out)
    if corpus is None and isinstance(embeddings, Embeddings):
        corpus = embeddings.corpus
    return Index(out, corpus=corpus)


@dataclasses.dataclass(frozen=True)
class SearchRun:
    """A ranking of documents for queries (``search``): ``{qid: {doc: score}}``, and the TREC file it was
    written to, if any.

    Attributes:
        run: the ranking.
        queries: the queries it answers (``{qid: text}``).
        kind: ``queries``, ``questions`` (NQ-open / DPR QA) or ``reqa``.
        path: the TREC run file (with its record of the queries, ``<path>.json``), or None.
        tag: the run's name.
    """

    run: dict[str, dict[str, float]]
    queries: dict[str, str]
    kind: str
    path: Path | None
    tag: str

    def __fspath__(self) -> str:
        if self.path is None:
            raise TypeError("this run was not written to a file (search(out=None))")
        return os.fspath(self.path)


@checks_arguments
def search(out: str | os.PathLike | None = None, *, queries: Source | Mapping[str, str] | None = None,
           questions: Source | None = None, reqa: str | os.PathLike | None = None, k: int = 100,
           index: str | os.PathLike | None = None, model: str | os.PathLike | None = None,
           max_length: int | None = None, query_prefix: str | None = None, batch_size: int = ENCODE_BATCH_SIZE,
           nprobe: int | None = None, ef_search: int | None = None, device: str | None = None, mmap: bool = False,
           bm25: bool = False, corpus: Source | None = None, bm25_index: str | os.PathLike | None = None,
           k1: float = 0.9, b: float = 0.4, tag: str | None = None, overwrite: bool = False,
           show_progress: bool = True) -> SearchRun:
    """Rank documents for a batch of queries (``seedr search``): a dense ``index`` or ``bm25`` over a
    ``corpus``; the top ``k`` of each query, written as a TREC run to ``out`` when given.

    Exactly one of ``queries`` (BEIR queries.jsonl, TSV, parquet, a Dataset, a list of dicts or
    ``{qid: text}``), ``questions`` (NQ-open / DPR QA JSONL) or ``reqa`` (SQuAD JSON: its questions against its
    sentence candidates).

    Example:
        >>> bm25_run = seedr.search("runs/bm25.trec", bm25=True, corpus="scifact/corpus.jsonl",
        ...                         queries="scifact/queries.jsonl")
    """
    from seedr.data.corpus import count_documents, read_corpus
    from seedr.data.inputs import input_files
    from seedr.data.queries import read_queries
    from seedr.data.runs import queries_record, run_tag, write_run_and_record
    from seedr.evaluation.tasks import QaCoverageTask

    sources = [source for source in (queries, questions, reqa) if source is not None]
    if len(sources) != 1:
        raise ValueError("give exactly one of queries (--queries), questions (--questions), reqa (--reqa)")
    model = model_name(model)
    dense = index is not None or (reqa is not None and model is not None)
    if bm25 == dense:
        raise ValueError("choose one way to search: bm25 (--bm25), or a dense index (--index; reqa: a dense model)")
    read = input_paths(queries, questions, reqa, corpus, index, model)
    if bm25 and bm25_index is not None and (corpus is not None or reqa is not None):  # it will be written
        check_output(bm25_index, "BM25 index", overwrite=overwrite, inputs=read, option="--bm25-index")
    if out is not None:  # nor the run inside a BM25 index, read or written
        check_output(out, "TREC run", overwrite=overwrite, inputs=[*read, *input_paths(bm25_index)])
    check_inputs(model, corpus)
    reqa_task = None  # the questions come from the evaluation task `seedr evaluate` scores them with
    if reqa is not None:
        from seedr.evaluation.reqa import ReqaTask  # faiss, for its candidates' index

        reqa_task = ReqaTask(reqa)
        texts, kind, files = reqa_task.queries(), "reqa", [reqa]
    elif questions is not None:
        texts = QaCoverageTask(questions).queries()
        kind, files = "questions", input_files(questions, "questions")
    else:
        given_paths = is_paths(queries)
        texts = {str(qid): str(text) for qid, text in queries.items()} if isinstance(queries, Mapping) \
            else read_queries(queries)
        kind, files = "queries", input_files(queries, "queries") if given_paths else []

    # the searchers (torch, bm25s: seconds), once what they search for is known to be there
    from seedr.retrieval.bm25 import BM25Index
    from seedr.retrieval.encode import TextEncoder, model_defaults
    from seedr.retrieval.search import search_text

    # the BM25 index written and the run: all or nothing (the index is moved into place after the run)
    with locked(out), contextlib.ExitStack() as written:
        if bm25:
            if corpus is None and reqa_task is None:
                if bm25_index is None:
                    raise ValueError("BM25 needs a corpus (--corpus, or --reqa) to index, or a saved bm25_index")
                searcher = BM25Index.load(bm25_index)
            else:
                if reqa_task is not None:
                    documents, total = reqa_task.documents(), len(reqa_task.candidates)
                else:
                    documents = read_corpus(corpus)
                    total = count_documents(corpus) if is_paths(corpus) else length_of(corpus)
                searcher = BM25Index.build(documents, k1=k1, b=b, show_progress=show_progress, total=total)
                if bm25_index is not None:
                    searcher.save_into(written.enter_context(atomic_directory(bm25_index)))
            run = searcher.search(texts, k=k, show_progress=show_progress)
            tag = tag or "bm25"
        elif reqa_task is not None:  # dense ReQA: candidates are encoded as (sentence, paragraph) pairs
            defaults = model_defaults(model)
            encoder = TextEncoder(model, defaults["pooling"], defaults["normalize"],
                                  max_length or defaults["max_length"], device=device, query_prefix=query_prefix or "")
            searcher = reqa_task.index(encoder, batch_size, show_progress=show_progress)
            run = search_text(searcher, encoder, texts, k, batch_size, show_progress=show_progress)
            tag = tag or "reqa-dense"
        else:
            dense_index = Index(index, model=model, mmap=mmap, device=device)
            parameters = {"nprobe": nprobe, "efSearch": ef_search}
            dense_index.searcher.set_search_parameters(**{key: value for key, value in parameters.items() if value})
            encoder = dense_index.encoder
            if max_length is not None or query_prefix is not None:
                encoder = TextEncoder.from_settings(dense_index.searcher.config.get("encoder") or {}, model,
                                                    max_length=max_length, query_prefix=query_prefix, device=device)
            run = search_text(dense_index.searcher, encoder, texts, k, batch_size, show_progress=show_progress)
            tag = tag or run_tag(Path(index).resolve().name, "dense")  # a folder name may hold spaces
        path = None
        if out is not None:
            path = Path(out)
            # the record (the questions, for `seedr evaluate` to check) and the run, as one unit
            write_run_and_record(path, run, queries_record(texts, kind, files), tag)
    return SearchRun(run, texts, kind, path, tag)
