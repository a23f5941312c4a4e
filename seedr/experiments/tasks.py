"""What an experiment evaluates every condition on, and how a condition's model retrieves.

A task reads its data, retrieves for its queries with BM25 or with a dense encoder (``seedr encode``
→ ``seedr index`` → ``seedr search``: ``encode_corpus_to_shards``, ``DenseIndex``, ``search_text``),
writes the TREC run, and scores it per query with the library's evaluation task
(``seedr.evaluation.tasks``, which ``seedr search`` and ``seedr evaluate`` use too), so that
conditions can be compared with paired significance tests.

- ``qrels``: a corpus, queries and relevance labels (e.g. SciFact test) — IR metrics (``nDCG@10`` ...).
- ``reqa``: SQuAD's questions against its (sentence, paragraph) candidates (ICLR 2020 §4.1) — ``R@k``, ``MRR``.
- ``qa``: NQ-open questions against a passage corpus — answer coverage ``Top-k`` (DPR's).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from seedr.config.loading import from_dict
from seedr.config.settings import ENCODE_BATCH_SIZE
from seedr.data.corpus import read_corpus
from seedr.data.records import Document, Run
from seedr.evaluation import reqa
from seedr.evaluation import tasks as evaluation_tasks
from seedr.evaluation.tasks import EvaluationTask
from seedr.registry import Registry
from seedr.retrieval.bm25 import BM25Index
from seedr.retrieval.encode import TextEncoder, encode_corpus_to_shards, load_embeddings, read_manifest
from seedr.retrieval.faiss_index import DenseIndex
from seedr.retrieval.search import search_text

TASKS: Registry[type[RetrievalTask]] = Registry("experiment task")


@dataclasses.dataclass
class RetrieveConfig:
    """How a condition's model retrieves (``seedr encode`` / ``index`` / ``search`` options).

    ``model``: the encoder, for a condition without steps (e.g. ``minilm`` zero-shot); otherwise the
    last step's product. ``pooling``, ``normalize``, ``max_length``: default what the model folder
    declares, and so does ``title`` (how titles are encoded: ``seedr.retrieval.encode.document_input``).
    ``compute_dtype``: ``bfloat16`` runs the encoder under autocast; ``auto`` where it is native (``seedr.hardware``).
    """

    model: str | None = None
    pooling: str | None = None
    normalize: bool | None = None
    max_length: int | None = None
    query_max_length: int | None = None
    compute_dtype: str | None = None
    batch_size: int = ENCODE_BATCH_SIZE
    title: str | None = None  # pair | join | none; None: what the model folder records, else pair
    factory: str = "Flat"
    metric: str = "ip"
    k: int = 100


class RetrievalTask:
    """A task kind: its settings dataclass, the collection its conditions retrieve from, and the
    library's evaluation task (``seedr.evaluation.tasks``) that holds its queries and scores its runs,
    the same object ``seedr search`` and ``seedr evaluate`` use."""

    config_class: ClassVar[type]

    def __init__(self, name: str, settings: dict[str, Any], metrics: list[str], where: str) -> None:
        self.name, self.metrics, self.where = name, list(metrics), where
        self.config = from_dict(self.config_class, settings, where)

    def validate(self) -> None:
        """Check the metrics this task can report (building its evaluation task checks them)."""
        try:
            self._make_evaluation()
        except ValueError as error:
            raise ValueError(f"{self.where}: {error}") from None

    def _make_evaluation(self) -> EvaluationTask:
        raise NotImplementedError

    @functools.cached_property
    def evaluation(self) -> EvaluationTask:
        return self._make_evaluation()

    def queries(self) -> dict[str, str]:
        return self.evaluation.queries()

    def documents(self) -> list[Document]:
        """The collection BM25 and the dense index rank."""
        raise NotImplementedError

    def per_query(self, run: Run) -> dict[str, dict[str, float]]:
        """``{metric: {qid: value}}`` of ``run``."""
        return self.evaluation.per_query(run)

    def chance(self, depth: int = 100) -> dict[str, float | None]:
        """Each metric's chance level: its expected value when the task's pool is ranked at random
        (``seedr.evaluation.chance``; ``depth``: the ranks a run holds, for metrics without a cut-off);
        ``None`` where there is no closed form."""
        raise NotImplementedError

    def dense_run(self, model: str, retrieve: RetrieveConfig, folder: Path) -> Run:
        """Encode the collection into ``folder/embeddings`` (resumable shards), index it, search."""
        encoder = self.encoder(model, retrieve)
        embeddings = folder / "embeddings"
        if not (embeddings / "manifest.json").exists():
            encode_corpus_to_shards(encoder, self.documents(), embeddings, batch_size=retrieve.batch_size)
        manifest = read_manifest(embeddings)
        ids, vectors = load_embeddings(embeddings)
        index = DenseIndex.build(vectors, ids, factory=retrieve.factory, metric=retrieve.metric,
                                 encoder=manifest["encoder"])
        if retrieve.query_max_length:
            encoder = TextEncoder.from_settings(encoder.settings(), max_length=retrieve.query_max_length)
        return search_text(index, encoder, self.queries(), retrieve.k, retrieve.batch_size, show_progress=True)

    def bm25_run(self, k: int) -> Run:
        return BM25Index.build(self.documents(), show_progress=True).search(self.queries(), k=k, show_progress=True)

    @staticmethod
    def encoder(model: str, retrieve: RetrieveConfig) -> Any:
        return TextEncoder(model, pooling=retrieve.pooling, normalize=retrieve.normalize,
                           max_length=retrieve.max_length, dtype=retrieve.compute_dtype, title=retrieve.title)


@dataclasses.dataclass
class QrelsTaskConfig:
    corpus: str = ""
    queries: str = ""
    qrels: str = ""
    max_queries: int | None = None  # a seeded sample of the labelled queries, for CPU budgets
    seed: int = 13


@TASKS.register("qrels")
class QrelsTask(RetrievalTask):
    """IR metrics on labelled queries (``seedr evaluate --qrels``)."""

    config_class = QrelsTaskConfig

    def _make_evaluation(self) -> EvaluationTask:
        return evaluation_tasks.QrelsTask(self.config.qrels, self.metrics, queries=self.config.queries,
                                          max_queries=self.config.max_queries, seed=self.config.seed)

    def labels(self) -> dict[str, dict[str, int]]:
        """The judgements of the queries this task evaluates (a seeded sample under ``max_queries``)."""
        return self.evaluation.labels

    def documents(self) -> list[Document]:
        return list(read_corpus(self.config.corpus))

    def chance(self, depth: int = 100) -> dict[str, float | None]:
        return self.evaluation.chance({document.id for document in self.documents()}, depth)


@dataclasses.dataclass
class ReqaTaskConfig:
    squad: str = ""
    max_articles: int | None = None  # the first N articles of the SQuAD file (dev: 48), for CPU budgets


@TASKS.register("reqa")
class ReqaTask(RetrievalTask):
    """ReQA on SQuAD (ICLR 2020 §4.1): candidates encoded as (sentence, paragraph) pairs."""

    config_class = ReqaTaskConfig

    def _make_evaluation(self) -> EvaluationTask:
        return reqa.ReqaTask(self.config.squad, self.metrics, max_articles=self.config.max_articles)

    def documents(self) -> list[Document]:
        return list(self.evaluation.documents())

    def dense_run(self, model: str, retrieve: RetrieveConfig, folder: Path) -> Run:
        encoder = self.encoder(model, retrieve)
        index = self.evaluation.index(encoder, retrieve.batch_size, show_progress=True)
        return search_text(index, encoder, self.queries(), retrieve.k, retrieve.batch_size, show_progress=True)

    def chance(self, depth: int = 100) -> dict[str, float | None]:
        return self.evaluation.chance(depth)


@dataclasses.dataclass
class QaTaskConfig:
    questions: str = ""  # NQ-open / DPR QA JSONL
    passages: list[str] = dataclasses.field(default_factory=list)  # the passage pool (seedr prepare --passages)
    max_passages: int | None = None  # the first N passages: a pool that can be encoded in the budget
    max_questions: int | None = None
    include_title: bool = False  # DPR's convention: answers are matched in the passage text


@TASKS.register("qa")
class QaTask(RetrievalTask):
    """Open-domain QA answer coverage (DPR's top-k accuracy) over a passage pool; metrics ``Top-k``."""

    config_class = QaTaskConfig

    def _make_evaluation(self) -> EvaluationTask:
        # the pool is read on first use (scoring), not to validate the metrics
        return evaluation_tasks.QaCoverageTask(self.config.questions, self.metrics,
                                               passages=_LazyPassages(self.documents),
                                               include_title=self.config.include_title,
                                               max_questions=self.config.max_questions)

    def documents(self) -> list[Document]:
        if not hasattr(self, "_documents"):  # read once: every condition's run is scored against them
            documents = read_corpus(self.config.passages)  # files, folders or globs (seedr.data.inputs)
            self._documents = list(itertools.islice(documents, self.config.max_passages))
        return self._documents

    def chance(self, depth: int = 100) -> dict[str, float | None]:
        return self.evaluation.chance(self.documents(), depth)


class _LazyPassages(Mapping):
    """The pool by id, read when answer coverage first looks a passage up."""

    def __init__(self, documents: Callable[[], list[Document]]) -> None:
        self._documents = documents

    @functools.cached_property
    def _by_id(self) -> dict[str, Document]:
        return {document.id: document for document in self._documents()}

    def __getitem__(self, key: str) -> Document:
        return self._by_id[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_id)

    def __len__(self) -> int:
        return len(self._by_id)


__all__ = ["TASKS", "QaTask", "QrelsTask", "ReqaTask", "RetrievalTask", "RetrieveConfig"]
