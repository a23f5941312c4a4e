"""MIND news recommendation as an experiment's task (``kind: mind``), as SEED-Encoder evaluates it (Lu et al.,
EMNLP 2021, sec. 4.4): each impression's pre-given candidate news reranked by the dot product of the user's
embedding and each candidate's, scored by MIND's official AUC, MRR, nDCG@5 and nDCG@10
(``seedr.evaluation.mind``, what ``seedr evaluate --mind`` reports).

A candidate is its title and abstract ("title and snippet": ``NewsItem.as_document``, encoded as the model
encodes a titled document); a user is the titles of the news they clicked, most recent first with [SEP]
between them, so that the encoder's length keeps "as many recent titles as possible". Both sides are
encoded by ``seedr encode`` (``seedr.pipeline.encode``). A user without history has no embedding: the
impression is left out of the run, which the official scorer scores as all tied.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

import numpy as np

from seedr.data.mind import NewsItem, read_news
from seedr.data.records import Document, Run
from seedr.evaluation.mind import MindTask
from seedr.experiments.tasks import TASKS, RetrievalTask, RetrieveConfig
from seedr.pipeline import encode as encoding
from seedr.pipeline import search as searching
from seedr.pipeline.encode import EncodeConfig
from seedr.pipeline.search import SearchConfig

#: Between the clicked titles of a user's history (the paper's [SEP] tokens).
SEPARATOR = " [SEP] "


@dataclasses.dataclass
class MindTaskConfig:
    news: str = ""  # news.tsv
    behaviors: str = ""  # behaviors.tsv with click labels (MIND dev)
    max_impressions: int | None = None  # the first N labelled impressions, for CPU budgets


@TASKS.register("mind")
class MindNewsTask(RetrievalTask):
    """MIND's impressions reranked by a condition's encoder (or BM25, the user's titles as the query)."""

    config_class = MindTaskConfig

    def _make_evaluation(self) -> MindTask:
        return MindTask(self.config.behaviors, self.metrics, max_impressions=self.config.max_impressions)

    @functools.cached_property
    def news(self) -> dict[str, NewsItem]:
        return read_news(self.config.news)

    def documents(self) -> list[Document]:
        """The candidates of the impressions scored, each once."""
        shown = dict.fromkeys(news for impression in self.evaluation.impressions
                              for news in impression.candidates)
        return [self.news[news].as_document() for news in shown]

    @functools.cached_property
    def users(self) -> dict[str, str]:
        """Each impression's user: their clicked titles, most recent first (none without a history)."""
        return {impression.id: SEPARATOR.join(self.news[news].title for news in reversed(impression.history))
                for impression in self.evaluation.impressions if impression.history}

    def queries(self) -> dict[str, str]:
        return self.users

    def dense_run(self, model: str, retrieve: RetrieveConfig, folder: Path) -> Run:
        """Encode the candidates and the users (``seedr encode``), and score each impression's candidates by
        their dot product with its user."""
        candidates = [{"_id": document.id, "title": document.title, "text": document.text}
                      for document in self.documents()]
        news = self._encoded(model, retrieve, folder / "embeddings", candidates, retrieve.title,
                             retrieve.max_length)
        users = self._encoded(model, retrieve, folder / "users", [
            {"_id": impression, "text": text} for impression, text in self.queries().items()],
            "none", retrieve.query_max_length or retrieve.max_length)
        return self._rerank(lambda impression, candidates: (news[candidates] @ users[[impression]].T)[:, 0])

    @staticmethod
    def _encoded(model: str, retrieve: RetrieveConfig, out: Path, rows: list[dict[str, str]],
                 title: str | None, max_length: int | None) -> Any:
        """``rows`` encoded into ``out`` (resumed when there), as a lookup of vectors by id."""
        encoding.run(EncodeConfig(model=model, corpus=rows, out=out, pooling=retrieve.pooling,
                                  normalize=retrieve.normalize, max_length=max_length, title=title,
                                  batch_size=retrieve.batch_size,
                                  compute_dtype=retrieve.compute_dtype or "float32"))
        ids, vectors = encoding.vectors(out)
        positions = {identifier: position for position, identifier in enumerate(ids)}
        return _Vectors(positions, np.asarray(vectors))

    def bm25_run(self, k: int) -> Run:
        """BM25 over the candidates with the user's titles as the query: every candidate scored (the pool is
        all of them, so ``k`` does not cut a ranking an impression's candidates are taken from)."""
        documents = self.documents()
        search = SearchConfig(queries=self.queries(), bm25=True, k=len(documents))  # seedr search --bm25
        ranked = searching.bm25_search(documents, search.queries, search)[1]
        return {impression.id: {news: ranked[impression.id].get(news, 0.0) for news in impression.candidates}
                for impression in self.evaluation.impressions if impression.id in ranked}

    def _rerank(self, score: Any) -> Run:
        return {impression.id: dict(zip(impression.candidates, map(float, score(impression.id,
                                                                                impression.candidates))))
                for impression in self.evaluation.impressions if impression.id in self.users}

    def chance(self, depth: int = 100) -> dict[str, float | None]:
        """AUC's chance level is 1/2 (a random order puts a click above a non-click half the time); the
        others' depend on each impression's clicks and size, without a closed form here."""
        return {metric: 0.5 if metric == "AUC" else None for metric in self.metrics}


@dataclasses.dataclass(frozen=True)
class _Vectors:
    """Embeddings looked up by id: ``vectors[["N1", "N2"]]`` is their rows."""

    positions: dict[str, int]
    vectors: np.ndarray

    def __getitem__(self, ids: list[str]) -> np.ndarray:
        return self.vectors[[self.positions[identifier] for identifier in ids]]


__all__ = ["MindNewsTask", "MindTaskConfig"]
