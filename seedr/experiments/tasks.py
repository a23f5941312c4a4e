"""What an experiment evaluates every condition on, and how a condition's model retrieves.

A task reads its data, retrieves for its queries with BM25 or with a dense encoder (``seedr encode``
→ ``seedr index`` → ``seedr search``: the pipeline's stages, ``seedr.pipeline``, run with the condition's
``retrieve:`` options, ``RetrieveConfig``), writes the TREC run, and scores it per query with the
library's evaluation task (``seedr.evaluation.tasks``, which ``seedr search`` and ``seedr evaluate`` use
too), so that conditions can be compared with paired significance tests.

- ``qrels``: a corpus, queries and relevance labels (e.g. SciFact test) — IR metrics (``nDCG@10`` ...).
- ``reqa``: SQuAD's questions against its (sentence, paragraph) candidates (ICLR 2020 §4.1) — ``R@k``, ``MRR``.
- ``qa``: NQ-open questions against a passage corpus — answer coverage ``Top-k`` (DPR's).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import typing
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from seedr.config.loading import from_dict
from seedr.data.corpus import read_corpus
from seedr.data.records import Document, Run
from seedr.evaluation import reqa
from seedr.evaluation import tasks as evaluation_tasks
from seedr.evaluation.tasks import EvaluationTask
from seedr.pipeline import encode as encoding
from seedr.pipeline import index as indexing
from seedr.pipeline import search as searching
from seedr.pipeline.encode import EncodeConfig
from seedr.pipeline.index import IndexConfig
from seedr.pipeline.options import check_options, default_of
from seedr.pipeline.search import SearchConfig
from seedr.registry import Registry

TASKS: Registry[type[RetrievalTask]] = Registry("experiment task")

#: Each ``retrieve:`` key, and the stage configs' fields it sets (its type, default and help are the
#: first's). ``query_max_length`` is ``seedr search``'s ``--max-length``; ``batch_size`` is documents per
#: forward pass and queries per forward pass alike.
OPTIONS: dict[str, tuple[tuple[type, str], ...]] = {
    "model": ((EncodeConfig, "model"),),
    "pooling": ((EncodeConfig, "pooling"),),
    "normalize": ((EncodeConfig, "normalize"),),
    "max_length": ((EncodeConfig, "max_length"),),
    "query_max_length": ((SearchConfig, "max_length"),),
    "compute_dtype": ((EncodeConfig, "compute_dtype"),),
    "batch_size": ((EncodeConfig, "batch_size"), (SearchConfig, "batch_size")),
    "title": ((EncodeConfig, "title"),),
    "document_prefix": ((EncodeConfig, "document_prefix"),),
    "long_documents": ((EncodeConfig, "long_documents"),),
    "query_prefix": ((SearchConfig, "query_prefix"),),
    "factory": ((IndexConfig, "factory"),),
    "metric": ((IndexConfig, "metric"),),
    "train_sample": ((IndexConfig, "train_sample"),),
    "k": ((SearchConfig, "k"),),
    "nprobe": ((SearchConfig, "nprobe"),),
    "ef_search": ((SearchConfig, "ef_search"),),
}

#: Where an experiment's default is not the stage's: ``model``, the last step's product unless a condition
#: without steps names one (``minilm`` zero-shot); ``compute_dtype``, float32 unless asked (``auto``, the
#: stage's, would compute in bf16 on a CPU or GPU with native bf16, and move results recorded in float32).
EXPERIMENT_DEFAULTS: dict[str, Any] = {"model": None, "compute_dtype": None}


def _field(key: str) -> tuple[str, Any, dataclasses.Field]:
    config_class, name = OPTIONS[key][0]
    source = next(field for field in dataclasses.fields(config_class) if field.name == name)
    kind = typing.get_type_hints(config_class)[name]
    if key in EXPERIMENT_DEFAULTS:
        default = EXPERIMENT_DEFAULTS[key]
        kind = kind | None if default is None else kind
    else:
        default = default_of(source)
    return key, kind, dataclasses.field(default=default, metadata=source.metadata)


class _Stages:
    """The stage configs a ``RetrieveConfig`` makes."""

    def __post_init__(self) -> None:
        check_options(self)  # the stage fields' own bounds: ``k: 0`` is refused as ``seedr search --k 0`` is

    def _options(self, config_class: type) -> dict[str, Any]:
        """This config's values of ``config_class``'s fields, by that class's names."""
        return {name: getattr(self, key) for key, fields in OPTIONS.items() if key != "model"
                for owner, name in fields if owner is config_class}

    def encode_config(self, model: str, corpus: Any, out: Path, limit: int | None = None) -> EncodeConfig:
        """``seedr encode --model MODEL --corpus CORPUS --out OUT --limit LIMIT`` with these options."""
        return EncodeConfig(model=model, corpus=corpus, out=out, limit=limit, **self._options(EncodeConfig))

    def index_config(self, embeddings: Path, out: Path) -> IndexConfig:
        """``seedr index --embeddings EMBEDDINGS --out OUT`` with these options."""
        return IndexConfig(embeddings=embeddings, out=out, **self._options(IndexConfig))

    def search_config(self, **sources: Any) -> SearchConfig:
        """``seedr search`` of ``sources`` (``queries=``, ``index=`` ...) with these options."""
        return SearchConfig(**sources, **self._options(SearchConfig))


RetrieveConfig = dataclasses.make_dataclass("RetrieveConfig", [_field(key) for key in OPTIONS], bases=(_Stages,))
RetrieveConfig.__module__ = __name__
RetrieveConfig.__doc__ = """How a condition's model retrieves: the ``retrieve:`` options (``OPTIONS``), each
the field of ``seedr encode`` / ``index`` / ``search`` it sets, with that field's type, default (but for
``EXPERIMENT_DEFAULTS``) and help, so that its retrieval is those stages run with those options."""


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

    def corpus(self) -> dict[str, Any]:
        """The collection as ``seedr encode`` reads it: ``{"corpus": paths, "limit": N or None}``."""
        raise NotImplementedError

    def dense_run(self, model: str, retrieve: RetrieveConfig, folder: Path) -> Run:
        """``seedr encode`` (the collection into ``folder/embeddings``, resumable shards), ``seedr index`` and
        ``seedr search`` with the condition's options; the index and the run are kept in memory. Finished
        embeddings are read back as they are (in a work folder moved since, their model's path is another)."""
        encoded = retrieve.encode_config(model, out=folder / "embeddings", **self.corpus())
        if not encoding.complete(encoded.out):
            encoding.run(encoded)
        index = retrieve.index_config(encoded.out, folder / "index")
        search = retrieve.search_config(queries=self.queries(), index=index.out)
        return searching.search_index(indexing.build(index), search.queries, search)

    def bm25_run(self, k: int) -> Run:
        """``seedr search --bm25`` over the collection, its run kept in memory."""
        search = SearchConfig(queries=self.queries(), bm25=True, k=k)
        return searching.bm25_search(self.documents(), search.queries, search)[1]


@dataclasses.dataclass
class QrelsTaskConfig:
    corpus: str = ""
    queries: str = ""
    qrels: str = ""
    max_queries: int | None = None  # a seeded sample of the labelled queries, for CPU budgets
    seed: int = 13


@TASKS.register("qrels")
class QrelsRetrieval(RetrievalTask):
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

    def corpus(self) -> dict[str, Any]:
        return {"corpus": self.config.corpus}

    def chance(self, depth: int = 100) -> dict[str, float | None]:
        return self.evaluation.chance({document.id for document in self.documents()}, depth)


@dataclasses.dataclass
class ReqaTaskConfig:
    squad: str = ""
    max_articles: int | None = None  # the first N articles of the SQuAD file (dev: 48), for CPU budgets


@TASKS.register("reqa")
class ReqaRetrieval(RetrievalTask):
    """ReQA on SQuAD (ICLR 2020 §4.1): candidates encoded as (sentence, paragraph) pairs."""

    config_class = ReqaTaskConfig

    def _make_evaluation(self) -> EvaluationTask:
        return reqa.ReqaTask(self.config.squad, self.metrics, max_articles=self.config.max_articles)

    def documents(self) -> list[Document]:
        return list(self.evaluation.documents())

    def dense_run(self, model: str, retrieve: RetrieveConfig, folder: Path) -> Run:
        """``seedr search --reqa SQUAD --model MODEL``: the candidates encoded in memory as (sentence,
        paragraph) pairs, by the encoder ``seedr encode`` makes with the condition's options."""
        search = retrieve.search_config(reqa=self.config.squad, model=model)
        encoder = encoding.text_encoder(retrieve.encode_config(model, self.config.squad, folder / "embeddings"),
                                        query_prefix=search.query_prefix or "")
        return searching.reqa_dense_search(self.evaluation, encoder, self.queries(), search)

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
class QaRetrieval(RetrievalTask):
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

    def corpus(self) -> dict[str, Any]:
        return {"corpus": self.config.passages, "limit": self.config.max_passages}

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


__all__ = ["EXPERIMENT_DEFAULTS", "OPTIONS", "TASKS", "QaRetrieval", "QrelsRetrieval", "ReqaRetrieval",
           "RetrievalTask", "RetrieveConfig"]
