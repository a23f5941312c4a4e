"""What an experiment evaluates every condition on, and how a condition's model retrieves.

A task reads its data, retrieves for its queries with BM25 or with a dense encoder (``seedr encode``
→ ``seedr index`` → ``seedr search``: ``encode_corpus_to_shards``, ``DenseIndex``, ``search_text``),
writes the TREC run, and scores it per query (``seedr evaluate``: ``per_query``, ReQA's metrics, QA
answer coverage), so that conditions can be compared with paired significance tests.

- ``qrels``: a corpus, queries and relevance labels (e.g. SciFact test) — IR metrics (``nDCG@10`` ...).
- ``reqa``: SQuAD's questions against its (sentence, paragraph) candidates (ICLR 2020 §4.1) — ``R@k``, ``MRR``.
- ``qa``: NQ-open questions against a passage corpus — answer coverage ``Top-k`` (DPR's).
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from typing import Any, ClassVar

from seedr.config import from_dict
from seedr.data.records import Document, Run
from seedr.registry import Registry

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
    batch_size: int = 64
    title: str | None = None  # pair | join | none; None: what the model folder records, else pair
    factory: str = "Flat"
    metric: str = "ip"
    k: int = 100


def fuses(retrieve: Any) -> bool:
    """Whether a condition's ``retrieve`` fuses other conditions' runs (a mapping with ``fuse``)."""
    return isinstance(retrieve, dict) and "fuse" in retrieve


@dataclasses.dataclass
class FuseConfig:
    """A condition that fuses other conditions' runs on every task (``seedr fuse``,
    ``seedr.retrieval.fusion``), e.g. ``retrieve: {fuse: [bm25, script], method: [minmax, rrf],
    select_on: scifact-dev}``.

    ``fuse``: the conditions (two or more, retrieving, not fused themselves). ``method``: rrf, minmax or
    zscore, or a list of them; ``weights``: one per condition, fixed; ``rrf_k``: RRF's k, or a list.
    ``select_on``: a task of the experiment whose runs choose the weights (on the simplex in steps of
    ``grid_step``; and the method and k among those listed) by ``metric`` (default: the task's first);
    this condition's figures on that task are then not held out. Without it: the first method and k,
    ``weights`` or equal ones. ``k``: documents per query of the fused run.
    """

    fuse: list[str] = dataclasses.field(default_factory=list)
    method: list[str] | str = "rrf"
    weights: list[float] | None = None
    rrf_k: list[int] | int = 60
    select_on: str | None = None
    metric: str | None = None
    grid_step: float = 0.1
    k: int = 100

    def __post_init__(self) -> None:
        from seedr.retrieval.fusion import FUSIONS

        self.method = [self.method] if isinstance(self.method, str) else list(self.method)
        self.rrf_k = [self.rrf_k] if isinstance(self.rrf_k, int) else list(self.rrf_k)
        if len(self.fuse) < 2:
            raise ValueError(f"fuse: name at least two conditions to fuse, got {self.fuse}")
        unknown = [method for method in self.method if method not in FUSIONS]
        if unknown:
            raise ValueError(f"method: unknown fusion method(s) {unknown}; valid: {', '.join(FUSIONS.names())}")
        if self.weights is not None and (len(self.weights) != len(self.fuse) or min(self.weights) < 0
                                         or sum(self.weights) <= 0):
            raise ValueError(f"weights: one non-negative weight per fused condition, got {self.weights}")
        if not self.method or not self.rrf_k or min(self.rrf_k) < 1 or self.k < 1 or not 0 < self.grid_step <= 1:
            raise ValueError("method and rrf_k need a value; rrf_k and k at least 1; grid_step in (0, 1]")
        if self.select_on is None and (len(self.method) > 1 or len(self.rrf_k) > 1):
            raise ValueError("several methods or rrf_k need select_on, the task that chooses among them")

    def choose(self, dev_runs: list[Run] | None = None, task: RetrievalTask | None = None) -> tuple[Any, Any]:
        """The ``Fusion`` to apply and, with ``select_on``, the ``Selection`` made on ``task``'s runs
        ``dev_runs`` of the fused conditions (in the order of ``fuse``)."""
        from seedr.retrieval.fusion import Fusion, Objective, select_fusion

        if self.select_on is None:
            return Fusion(self.method[0], tuple(self.weights or [1.0] * len(self.fuse)), self.rrf_k[0]), None
        assert dev_runs is not None and task is not None
        metric = self.metric or task.metrics[0]

        def score(run: Run) -> float:
            values = list(task.per_query(run)[metric].values())
            return sum(values) / len(values) if values else 0.0

        selection = select_fusion(dev_runs, Objective(metric, score), self.method, self.weights, self.grid_step,
                                  self.rrf_k, self.k, show_progress=True)
        return selection.best, selection


class RetrievalTask:
    """A task kind: its settings dataclass, its documents and queries, and its per-query scores."""

    config_class: ClassVar[type]

    def __init__(self, name: str, settings: dict[str, Any], metrics: list[str], where: str) -> None:
        self.name, self.metrics, self.where = name, list(metrics), where
        self.config = from_dict(self.config_class, settings, where)

    def validate(self) -> None:
        """Check the metrics this task can report."""

    def queries(self) -> dict[str, str]:
        raise NotImplementedError

    def documents(self) -> list[Document]:
        """The collection BM25 and the dense index rank."""
        raise NotImplementedError

    def per_query(self, run: Run) -> dict[str, dict[str, float]]:
        """``{metric: {qid: value}}`` of ``run``."""
        raise NotImplementedError

    def chance(self, depth: int = 100) -> dict[str, float | None]:
        """Each metric's chance level: its expected value when the task's pool is ranked at random
        (``seedr.evaluation.chance``; ``depth``: the ranks a run holds, for metrics without a cut-off);
        ``None`` where there is no closed form."""
        raise NotImplementedError

    def dense_run(self, model: str, retrieve: RetrieveConfig, folder: Path) -> Run:
        """Encode the collection into ``folder/embeddings`` (resumable shards), index it, search."""
        from seedr.retrieval.encode import TextEncoder, encode_corpus_to_shards, load_embeddings, read_manifest
        from seedr.retrieval.faiss_index import DenseIndex
        from seedr.retrieval.search import search_text

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
        from seedr.retrieval.bm25 import BM25Index

        return BM25Index.build(self.documents(), show_progress=True).search(self.queries(), k=k, show_progress=True)

    @staticmethod
    def encoder(model: str, retrieve: RetrieveConfig) -> Any:
        from seedr.retrieval.encode import TextEncoder

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

    def validate(self) -> None:
        from seedr.evaluation.metrics import parse_metric

        for metric in self.metrics:
            try:
                parse_metric(metric)
            except Exception as error:  # ir_measures' own message says what is wrong
                raise ValueError(f"{self.where}: metric {metric!r}: {error}") from None

    def labels(self) -> dict[str, dict[str, int]]:
        """The judgements of the queries this task evaluates (a seeded sample under ``max_queries``)."""
        from seedr.data.queries import read_qrels, sample_queries

        qrels = read_qrels(self.config.qrels)
        if self.config.max_queries is not None and self.config.max_queries < len(qrels):
            chosen = sample_queries(list(qrels), count=self.config.max_queries, seed=self.config.seed)
            qrels = {qid: qrels[qid] for qid in sorted(chosen)}
        return qrels

    def queries(self) -> dict[str, str]:
        from seedr.data.queries import read_queries

        texts = read_queries(self.config.queries)
        return {qid: texts[qid] for qid in self.labels() if qid in texts}

    def documents(self) -> list[Document]:
        from seedr.data.corpus import read_corpus

        return list(read_corpus(self.config.corpus))

    def per_query(self, run: Run) -> dict[str, dict[str, float]]:
        from seedr.evaluation.metrics import per_query

        return per_query(run, self.labels(), self.metrics)

    def chance(self, depth: int = 100) -> dict[str, float | None]:
        from seedr.evaluation.chance import chance_levels

        return chance_levels(self.metrics, {document.id for document in self.documents()}, self.labels(), depth)


@dataclasses.dataclass
class ReqaTaskConfig:
    squad: str = ""
    max_articles: int | None = None  # the first N articles of the SQuAD file (dev: 48), for CPU budgets


@TASKS.register("reqa")
class ReqaTask(RetrievalTask):
    """ReQA on SQuAD (ICLR 2020 §4.1): candidates encoded as (sentence, paragraph) pairs."""

    config_class = ReqaTaskConfig

    def validate(self) -> None:
        from seedr.evaluation.reqa import REQA_METRICS

        unknown = sorted(set(self.metrics) - set(REQA_METRICS))
        if unknown:
            raise ValueError(f"{self.where}: ReQA reports {', '.join(REQA_METRICS)}; not {unknown}")

    def _data(self) -> Any:
        from seedr.data.qa import read_squad, reqa_candidates

        if not hasattr(self, "_cached"):
            self._cached = reqa_candidates(read_squad(self.config.squad)[: self.config.max_articles])
        return self._cached

    def queries(self) -> dict[str, str]:
        return self._data()[1]

    def documents(self) -> list[Document]:
        from seedr.evaluation.reqa import lexical_documents

        return list(lexical_documents(self._data()[0]))

    def dense_run(self, model: str, retrieve: RetrieveConfig, folder: Path) -> Run:
        from seedr.evaluation.reqa import index_candidates
        from seedr.retrieval.search import search_text

        encoder = self.encoder(model, retrieve)
        index = index_candidates(encoder, self._data()[0], retrieve.batch_size, show_progress=True)
        return search_text(index, encoder, self.queries(), retrieve.k, retrieve.batch_size, show_progress=True)

    def per_query(self, run: Run) -> dict[str, dict[str, float]]:
        from seedr.evaluation.reqa import reqa_per_query

        values = reqa_per_query(run, self._data()[2])
        return {metric: values[metric] for metric in self.metrics}

    def chance(self, depth: int = 100) -> dict[str, float | None]:
        from seedr.evaluation.chance import chance_levels
        from seedr.evaluation.reqa import REQA_METRICS

        candidates = {candidate.id for candidate in self._data()[0]}
        levels = chance_levels([REQA_METRICS[metric] for metric in self.metrics], candidates, self._data()[2], depth)
        return {metric: levels[REQA_METRICS[metric]] for metric in self.metrics}


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

    def validate(self) -> None:
        bad = [m for m in self.metrics if not (m.startswith("Top-") and m[4:].isdigit())]
        if bad:
            raise ValueError(f"{self.where}: QA coverage reports Top-k (e.g. Top-20); not {bad}")

    def _questions(self) -> tuple[dict[str, str], dict[str, list[str]]]:
        from seedr.evaluation.qa_coverage import read_qa_file

        questions, answers = read_qa_file(self.config.questions)
        kept = list(questions)[: self.config.max_questions]
        return {q: questions[q] for q in kept}, {q: answers[q] for q in kept}

    def queries(self) -> dict[str, str]:
        return self._questions()[0]

    def documents(self) -> list[Document]:
        from seedr.data.corpus import read_corpus

        if not hasattr(self, "_documents"):  # read once: every condition's run is scored against them
            documents = read_corpus(self.config.passages)  # files, folders or globs (seedr.data.inputs)
            self._documents = list(itertools.islice(documents, self.config.max_passages))
        return self._documents

    def per_query(self, run: Run) -> dict[str, dict[str, float]]:
        from seedr.evaluation.qa_coverage import coverage_per_question, first_hit_ranks

        ks = [int(metric[4:]) for metric in self.metrics]
        collection = {document.id: document for document in self.documents()}
        first_hits = first_hit_ranks(run, collection, self._questions()[1], max(ks), self.config.include_title)
        return coverage_per_question(first_hits, ks)

    def chance(self, depth: int = 100) -> dict[str, float | None]:
        from seedr.evaluation.chance import coverage_chance
        from seedr.evaluation.qa_coverage import answer_passage_counts

        counts = answer_passage_counts(self.documents(), self._questions()[1], self.config.include_title)
        cutoffs = {metric: min(int(metric[4:]), depth) for metric in self.metrics}  # a run holds `depth` ranks
        levels = coverage_chance(sorted(set(cutoffs.values())), len(self.documents()), counts)
        return {metric: levels[f"Top-{k}"] for metric, k in cutoffs.items()}


__all__ = ["TASKS", "FuseConfig", "QaTask", "QrelsTask", "ReqaTask", "RetrievalTask", "RetrieveConfig", "fuses"]
