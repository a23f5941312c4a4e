"""Pseudo-relevance feedback: each query moved toward its own first-pass top documents, at search time, with no
training and no label — one of the field's answers to a corpus without labels (#67).

- **Dense Rocchio** (Rocchio, 1971, over dense vectors as in Li et al., "Pseudo Relevance Feedback with Deep
  Language Models and Dense Retrievers: Successes and Pitfalls", TOIS 2023, eq. 2):
  ``q' = alpha * q + beta * mean(d_1 .. d_depth)`` over the vectors of the ``depth`` documents the query ranked
  first, then searched again.
- **RM3** for BM25 (Abdul-Jaleel et al., "UMass at TREC 2004", the relevance model of Lavrenko & Croft, SIGIR
  2001, interpolated with the query), as Anserini runs it (``RM3Reranker``): each of the ``documents`` top
  documents' term distribution ``P(t|d) = tf(t, d) / |d|`` weighted by its first-pass score, summed, cut to its
  ``terms`` heaviest terms and L1-normalised; interpolated with the query's own term distribution
  (``original_weight``: Anserini's ``originalQueryWeight``, default 0.5; ``fbDocs`` 10, ``fbTerms`` 10), and the
  weighted query scored by BM25 again: ``score(d) = sum_t w_t * bm25(t, d)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse

from seedr.data.records import Run
from seedr.data.runs import run_from_topk

#: Anserini's RM3 filter: a feedback term longer than this is left out (``RM3Reranker``'s ``filterTerms``).
LONGEST_FEEDBACK_TERM = 20


@dataclass(frozen=True)
class Rocchio:
    """Dense Rocchio's settings (module docstring).

    Attributes:
        depth: first-pass documents whose vectors are averaged.
        alpha: the query's own weight.
        beta: the feedback documents' weight.
    """

    depth: int = 3
    alpha: float = 1.0
    beta: float = 0.5

    def __post_init__(self) -> None:
        if self.depth < 1 or self.alpha < 0 or self.beta < 0 or self.alpha + self.beta <= 0:
            raise ValueError(f"Rocchio needs depth at least 1 and non-negative weights, not both 0: {self}")


def rocchio_queries(query_vectors: np.ndarray, feedback_centroids: np.ndarray, settings: Rocchio) -> np.ndarray:
    """``alpha * q + beta * centroid`` for each query: ``query_vectors`` and ``feedback_centroids`` (Q, H), the
    latter the mean vector of each query's first-pass top documents."""
    return settings.alpha * query_vectors + settings.beta * feedback_centroids


def dense_feedback(search: Callable[[np.ndarray, int], tuple[np.ndarray, list[list[str]]]],
                   vectors_of: Callable[[list[str]], np.ndarray], qids: list[str], query_vectors: np.ndarray,
                   k: int, settings: Rocchio) -> Run:
    """Search, move each query by Rocchio toward its top ``settings.depth`` documents, search again.

    ``search(vectors, k)`` is a dense index's search (``DenseIndex.search``: scores and ids, best first, ``""``
    where fewer were found); ``vectors_of(ids)`` gives the indexed vectors of documents."""
    _, first_ids = search(query_vectors, settings.depth)
    centroids = np.stack([vectors_of([doc for doc in ids if doc]).mean(axis=0) for ids in first_ids])
    scores, ids = search(rocchio_queries(query_vectors, centroids, settings).astype(np.float32), k)
    return run_from_topk(qids, scores, ids)


@dataclass(frozen=True)
class RM3:
    """RM3's settings, Anserini's defaults (module docstring).

    Attributes:
        documents: first-pass documents the relevance model is estimated from (``fbDocs``).
        terms: expansion terms kept (``fbTerms``).
        original_weight: the original query's share of the interpolated query (``originalQueryWeight``).
    """

    documents: int = 10
    terms: int = 10
    original_weight: float = 0.5

    def __post_init__(self) -> None:
        if self.documents < 1 or self.terms < 1 or not 0 <= self.original_weight <= 1:
            raise ValueError(f"RM3 needs documents and terms at least 1 and original_weight in [0, 1]: {self}")


def rm3_query(query_terms: list[int], top_positions: np.ndarray, top_scores: np.ndarray,
              term_counts: scipy.sparse.csr_matrix, vocabulary: list[str], settings: RM3) -> dict[int, float]:
    """The interpolated RM3 query ``{term id: weight}`` of one query (module docstring).

    ``query_terms``: the query's term ids (repeats count); ``top_positions``, ``top_scores``: its first-pass
    documents (rows of ``term_counts``, documents × terms, raw counts) and their scores; ``vocabulary``: each
    term id's text, for Anserini's filter of long terms."""
    model: dict[int, float] = {}
    for position, score in zip(top_positions[:settings.documents], top_scores[:settings.documents], strict=True):
        row = term_counts.getrow(int(position))
        length = row.sum()
        if length == 0:
            continue
        for term, count in zip(row.indices, row.data, strict=True):
            if len(vocabulary[term]) <= LONGEST_FEEDBACK_TERM:
                model[int(term)] = model.get(int(term), 0.0) + float(score) * float(count) / float(length)
    kept = sorted(model.items(), key=lambda item: (-item[1], item[0]))[:settings.terms]
    total = sum(weight for _, weight in kept)
    expansion = {term: weight / total for term, weight in kept} if total > 0 else {}
    original: dict[int, float] = {}
    for term in query_terms:
        original[term] = original.get(term, 0.0) + 1.0 / len(query_terms)
    weights = {term: settings.original_weight * weight for term, weight in original.items()}
    for term, weight in expansion.items():
        weights[term] = weights.get(term, 0.0) + (1 - settings.original_weight) * weight
    return weights


__all__ = ["RM3", "Rocchio", "dense_feedback", "rm3_query", "rocchio_queries"]
