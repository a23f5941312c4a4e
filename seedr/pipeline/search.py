"""Rank documents for a batch of queries, dense (a faiss index and the encoder it records) or BM25: ``seedr
search``, ``seedr.search``, ``seedr.Index.search`` and every retrieval of an experiment run this. An experiment
searches an index it holds in memory and keeps the run in memory too: it calls the pieces ``run`` is made of
(``search_index``, ``reqa_dense_search``, ``bm25_search``)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from seedr.config.settings import ENCODE_BATCH_SIZE
from seedr.data.records import Run
from seedr.io import atomic_directory, check_output
from seedr.pipeline.common import Source, input_paths, is_paths, length_of, locked, model_name
from seedr.pipeline.encode import check_inputs
from seedr.pipeline.options import AT_LEAST_ONE, Bound, check_options, option


@dataclasses.dataclass(kw_only=True)
class SearchConfig:
    """What ``search`` runs with."""

    out: Path | None = option(None, help="TREC run file to write.", cli_type=Path, positional=True,
                              cli_required=True)
    queries: Source | Mapping[str, str] | None = option(
        None, help="Queries: BEIR queries.jsonl, TSV (qid<TAB>text), parquet or a Hugging Face save_to_disk "
                   "folder, or a BEIR / `seedr prepare` folder holding queries.jsonl; repeatable, quoted globs "
                   "too.", cli_type=list[Path])
    questions: Source | None = option(
        None, help="Or questions of NQ-open / DPR QA JSONL files (repeatable, folders and quoted globs too).",
        cli_type=list[Path])
    reqa: str | os.PathLike | None = option(
        None, help="Or ReQA: SQuAD JSON; its questions against its (sentence, paragraph) candidates.",
        cli_type=Path)
    k: int = option(100, help="Documents per query.", bound=AT_LEAST_ONE)
    index: str | os.PathLike | None = option(None, help="Dense: index folder from `seedr index`.", cli_type=Path)
    model: str | None = option(
        None, help="Dense: query encoder (default: the one recorded in the index; another path must hold the "
                   "same weights, checked by fingerprint).")
    max_length: int | None = option(None, help="Dense: tokens per query (default: as the documents).",
                                    bound=AT_LEAST_ONE)
    query_prefix: str | None = option(None, help="Dense: text put before every query.")
    batch_size: int = option(ENCODE_BATCH_SIZE, help="Dense: queries per forward pass.", bound=AT_LEAST_ONE)
    nprobe: int | None = option(None, help="Dense IVF indexes: inverted lists visited.", bound=AT_LEAST_ONE)
    ef_search: int | None = option(None, help="Dense HNSW indexes: search breadth.", bound=AT_LEAST_ONE)
    device: str | None = option(None, help="Dense: cpu, cuda ...")
    mmap: bool = option(
        False, help="Dense: memory-map the index instead of reading it (indexes larger than memory).")
    bm25: bool = option(False, help="BM25 instead of a dense index.")
    corpus: Source | None = option(
        None, help="BM25: corpus to index on the fly: a file (JSONL, TSV, parquet ...), a folder (of shards, made "
                   "by `seedr prepare`, or a Hugging Face save_to_disk folder) or a quoted glob; repeatable.",
        cli_type=list[Path])
    bm25_index: str | os.PathLike | None = option(
        None, help="BM25: a saved index folder (or where to save one built from --corpus).", cli_type=Path)
    k1: float = option(0.9, help="BM25 k1 (Anserini's default).", bound=Bound(float, 0))
    b: float = option(0.4, help="BM25 b (Anserini's default).", bound=Bound(float, 0, 1))
    tag: str | None = option(None, help="Run tag, last column (default: bm25 or the index folder name, spaces as _).")
    overwrite: bool = option(
        False, help="Replace OUT when it is a run seedr wrote (with its record), and, BM25, --bm25-index when it "
                    "holds an index; nothing else is replaced.")
    show_progress: bool = option(True, help="Show progress bars.", command_line=False)

    def __post_init__(self) -> None:
        check_options(self)
        self.model = model_name(self.model)
        if sum(source is not None for source in (self.queries, self.questions, self.reqa)) != 1:
            raise ValueError("give exactly one of queries (--queries), questions (--questions), reqa (--reqa)")
        if self.bm25 == self.dense:
            raise ValueError("choose one way to search: bm25 (--bm25), or a dense index (--index; reqa: a dense "
                             "model)")

    @property
    def dense(self) -> bool:
        """Whether it searches a dense index (or, ReQA, the candidates encoded by a dense model)."""
        return self.index is not None or (self.reqa is not None and self.model is not None)


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


def query_encoder(searcher: Any, where: str | os.PathLike, model: str | None = None, *,
                  max_length: int | None = None, query_prefix: str | None = None, device: str | None = None) -> Any:
    """The encoder of queries to ``searcher`` (a ``DenseIndex`` read from ``where``): the one it records
    (``model``: the same weights elsewhere, checked by fingerprint), with a query length or prefix of its own."""
    from seedr.retrieval.encode import TextEncoder

    recorded = searcher.config.get("encoder") or {}
    if model is None and "model" not in recorded:
        raise ValueError(f"{where} does not record its encoder: give model=")
    return TextEncoder.from_settings(recorded, model, max_length=max_length, query_prefix=query_prefix,
                                     device=device)


def search_index(searcher: Any, texts: dict[str, str], config: SearchConfig) -> Run:
    """``run``'s dense search over ``searcher`` (a ``DenseIndex``, read from ``config.index`` or held in
    memory): its faiss search parameters set (IVF's ``nprobe``, HNSW's ``efSearch``), the queries ``texts``
    encoded as its documents were (``query_encoder``), the top ``config.k`` of each."""
    parameters = {"nprobe": config.nprobe, "efSearch": config.ef_search}
    searcher.set_search_parameters(**{key: value for key, value in parameters.items() if value})
    encoder = query_encoder(searcher, config.index, config.model, max_length=config.max_length,
                            query_prefix=config.query_prefix, device=config.device)
    return dense_search(searcher, encoder, texts, config)


def dense_search(searcher: Any, encoder: Any, texts: dict[str, str], config: SearchConfig) -> Run:
    """The top ``config.k`` of each query of ``texts`` (``{qid: text}``) in ``searcher``, its queries encoded
    by ``encoder`` (``seedr.retrieval.search.search_text``)."""
    from seedr.retrieval.search import search_text

    return search_text(searcher, encoder, texts, config.k, config.batch_size, show_progress=config.show_progress)


def reqa_dense_search(task: Any, encoder: Any, texts: dict[str, str], config: SearchConfig) -> Run:
    """Dense ReQA: ``task``'s candidates (``seedr.evaluation.reqa.ReqaTask``) encoded by ``encoder`` as
    (sentence, paragraph) pairs into an exact index, searched with its questions ``texts``."""
    searcher = task.index(encoder, config.batch_size, show_progress=config.show_progress)
    return dense_search(searcher, encoder, texts, config)


def bm25_search(documents: Iterable[Any], texts: dict[str, str], config: SearchConfig,
                total: int | None = None) -> tuple[Any, Run]:
    """BM25 with the config's ``k1`` and ``b`` over ``documents`` (``total`` of them, for the ETA) and the
    top ``config.k`` of each query of ``texts``: ``(the BM25Index, the run)``."""
    from seedr.retrieval.bm25 import BM25Index

    searcher = BM25Index.build(documents, k1=config.k1, b=config.b, show_progress=config.show_progress, total=total)
    return searcher, searcher.search(texts, k=config.k, show_progress=config.show_progress)


def run(config: SearchConfig) -> SearchRun:
    """Rank documents for the queries: a dense ``index`` or ``bm25`` over a ``corpus``; the top ``k`` of
    each query, written as a TREC run to ``out`` when given (with the record of its queries)."""
    from seedr.data.corpus import count_documents, read_corpus
    from seedr.data.inputs import input_files
    from seedr.data.queries import read_queries
    from seedr.data.runs import queries_record, run_tag, write_run_and_record
    from seedr.evaluation.tasks import QaCoverageTask

    read = input_paths(config.queries, config.questions, config.reqa, config.corpus, config.index, config.model)
    if config.bm25 and config.bm25_index is not None and (config.corpus is not None or config.reqa is not None):
        check_output(config.bm25_index, "BM25 index", overwrite=config.overwrite, inputs=read,
                     option="--bm25-index")  # it will be written
    if config.out is not None:  # nor the run inside a BM25 index, read or written
        check_output(config.out, "TREC run", overwrite=config.overwrite,
                     inputs=[*read, *input_paths(config.bm25_index)])
    check_inputs(config.model, config.corpus)
    reqa_task = None  # the questions come from the evaluation task `seedr evaluate` scores them with
    if config.reqa is not None:
        from seedr.evaluation.reqa import ReqaTask  # faiss, for its candidates' index

        reqa_task = ReqaTask(config.reqa)
        texts, kind, files = reqa_task.queries(), "reqa", [config.reqa]
    elif config.questions is not None:
        texts = QaCoverageTask(config.questions).queries()
        kind, files = "questions", input_files(config.questions, "questions")
    else:
        queries = config.queries
        texts = {str(qid): str(text) for qid, text in queries.items()} if isinstance(queries, Mapping) \
            else read_queries(queries)
        kind, files = "queries", input_files(queries, "queries") if is_paths(queries) else []

    # the searchers (torch, bm25s: seconds), once what they search for is known to be there
    from seedr.retrieval.bm25 import BM25Index
    from seedr.retrieval.encode import TextEncoder
    from seedr.retrieval.faiss_index import DenseIndex

    # the BM25 index written and the run: all or nothing (the index is moved into place after the run)
    with locked(config.out), contextlib.ExitStack() as written:
        if config.bm25:
            if config.corpus is None and reqa_task is None:
                if config.bm25_index is None:
                    raise ValueError("BM25 needs a corpus (--corpus, or --reqa) to index, or a saved bm25_index")
                ranked = BM25Index.load(config.bm25_index).search(texts, k=config.k,
                                                                  show_progress=config.show_progress)
            else:
                if reqa_task is not None:
                    documents, total = reqa_task.documents(), len(reqa_task.candidates)
                else:
                    documents = read_corpus(config.corpus)
                    total = count_documents(config.corpus) if is_paths(config.corpus) else length_of(config.corpus)
                searcher, ranked = bm25_search(documents, texts, config, total)
                if config.bm25_index is not None:
                    searcher.save_into(written.enter_context(atomic_directory(config.bm25_index)))
            tag = config.tag or "bm25"
        elif reqa_task is not None:  # dense ReQA: candidates are encoded as (sentence, paragraph) pairs
            encoder = TextEncoder(config.model, max_length=config.max_length, device=config.device,
                                  query_prefix=config.query_prefix or "")
            ranked = reqa_dense_search(reqa_task, encoder, texts, config)
            tag = config.tag or "reqa-dense"
        else:
            ranked = search_index(DenseIndex.load(config.index, mmap=config.mmap), texts, config)
            tag = config.tag or run_tag(Path(config.index).resolve().name, "dense")  # a folder name may hold spaces
        path = None
        if config.out is not None:
            path = Path(config.out)
            # the record (the questions, for `seedr evaluate` to check) and the run, as one unit
            write_run_and_record(path, ranked, queries_record(texts, kind, files), tag)
    return SearchRun(ranked, texts, kind, path, tag)


__all__ = ["SearchConfig", "SearchRun", "bm25_search", "dense_search", "query_encoder", "reqa_dense_search", "run",
           "search_index"]
