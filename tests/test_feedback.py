"""Pseudo-relevance feedback (#67): RM3 over BM25 as Anserini computes it, and dense Rocchio, each checked
against its formula and against the search it reduces to when the feedback weighs nothing."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

from seedr.data.corpus import read_corpus
from seedr.data.queries import read_queries
from seedr.retrieval.bm25 import TERM_COUNTS, BM25Index
from seedr.retrieval.faiss_index import DenseIndex
from seedr.retrieval.feedback import RM3, Rocchio, dense_feedback, rm3_query


def test_rm3_weights_are_the_score_weighted_term_model_interpolated_with_the_query():
    # two feedback documents: d0 = {a: 1, b: 3}, d1 = {b: 1, c: 1}; scores 2 and 1
    counts = scipy.sparse.csr_matrix(np.array([[1, 3, 0, 0], [0, 1, 1, 0]], dtype=np.float32))
    vocabulary = ["a", "b", "c", "d" * 21]
    weights = rm3_query([3, 0], np.array([0, 1]), np.array([2.0, 1.0]), counts, vocabulary,
                        RM3(documents=2, terms=2, original_weight=0.5))
    # model: a 2 * 1/4 = 0.5, b 2 * 3/4 + 1/2 = 2.0, c 1/2 = 0.5; the two heaviest: b, then a (ties by id)
    expansion = {1: 2.0 / 2.5, 0: 0.5 / 2.5}
    assert weights == pytest.approx({3: 0.25, 0: 0.25 + 0.5 * expansion[0], 1: 0.5 * expansion[1]})


def test_rm3_leaves_out_terms_longer_than_anserini_keeps():
    counts = scipy.sparse.csr_matrix(np.array([[1, 1]], dtype=np.float32))
    weights = rm3_query([0], np.array([0]), np.array([1.0]), counts, ["a", "x" * 21], RM3(original_weight=0.0))
    assert weights == {0: 1.0}


@pytest.fixture(scope="module")
def scifact_bm25(scifact_slice):
    return BM25Index.build(read_corpus(scifact_slice / "corpus.jsonl")), read_queries(scifact_slice / "queries.jsonl")


def test_rm3_with_the_whole_weight_on_the_query_ranks_as_bm25(scifact_bm25):
    index, queries = scifact_bm25
    plain = index.search(queries, k=10)
    kept = index.search_rm3(queries, k=10, feedback=RM3(original_weight=1.0))
    assert {qid: list(ranking) for qid, ranking in kept.items()} == {qid: list(ranking) for qid, ranking in plain.items()}


def test_rm3_expands_the_query_and_survives_a_save(scifact_bm25, tmp_path):
    index, queries = scifact_bm25
    expanded = index.search_rm3(queries, k=10)
    assert expanded != index.search(queries, k=10)
    index.save(tmp_path / "bm25")
    assert (tmp_path / "bm25" / TERM_COUNTS).is_file()
    assert BM25Index.load(tmp_path / "bm25").search_rm3(queries, k=10) == expanded
    (tmp_path / "bm25" / TERM_COUNTS).unlink()  # an index an older seedr saved
    older = BM25Index.load(tmp_path / "bm25")
    assert older.search(queries, k=10) == index.search(queries, k=10)
    with pytest.raises(ValueError, match="holds no term counts"):
        older.search_rm3(queries, k=10)


@pytest.mark.parametrize("factory", ["Flat", "IVF2,Flat"])
def test_dense_rocchio_moves_the_query_to_the_mean_of_its_top_documents(factory):
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((64, 8)).astype(np.float32)
    ids = [f"d{position}" for position in range(64)]
    index = DenseIndex.build(vectors, ids, factory=factory)
    index.set_search_parameters(**({"nprobe": 2} if factory != "Flat" else {}))
    queries = rng.standard_normal((3, 8)).astype(np.float32)
    settings = Rocchio(depth=4, alpha=1.0, beta=0.5)
    run = dense_feedback(index.search, index.vectors, ["q0", "q1", "q2"], queries, 5, settings)
    _, first = index.search(queries, 4)
    for row, qid in enumerate(["q0", "q1", "q2"]):
        moved = queries[row] + 0.5 * vectors[[ids.index(doc) for doc in first[row]]].mean(axis=0)
        expected = np.argsort(-(vectors @ moved), kind="stable")[:5]
        assert list(run[qid]) == [ids[position] for position in expected]
    unmoved = dense_feedback(index.search, index.vectors, ["q0"], queries[:1], 5, Rocchio(beta=0.0))
    scores, plain = index.search(queries[:1], 5)
    assert list(unmoved["q0"]) == plain[0]


@pytest.mark.parametrize("settings", [dict(depth=0), dict(alpha=-1.0), dict(alpha=0.0, beta=0.0)])
def test_rocchio_refuses_settings_that_mean_nothing(settings):
    with pytest.raises(ValueError, match="Rocchio needs"):
        Rocchio(**settings)
