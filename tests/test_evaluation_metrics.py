"""Our metrics (through ir_measures) against pytrec_eval called directly, on a real BM25 run of SciFact."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from seedr.data.corpus import read_corpus
from seedr.data.queries import read_qrels, read_queries
from seedr.data.runs import truncate_run
from seedr.evaluation.metrics import DEFAULT_METRICS, evaluate_run, per_query, query_counts, rank_scores
from seedr.retrieval.bm25 import BM25Index

# our name -> (pytrec_eval measure, its result key, cut-off applied to the run first: trec_eval has no RR@k)
TREC_EVAL = {"MRR@10": ("recip_rank", "recip_rank", 10), "MRR@100": ("recip_rank", "recip_rank", 100),
             **{f"R@{k}": (f"recall.{k}", f"recall_{k}", None) for k in (5, 10, 20, 50, 100, 1000)},
             "nDCG@10": ("ndcg_cut.10", "ndcg_cut_10", None), "MAP": ("map", "map", None)}


@pytest.fixture(scope="module")
def scifact(shared_data: Path):
    folder = shared_data / "scifact"
    qrels = read_qrels(folder / "qrels" / "test.tsv")
    queries = read_queries(folder / "queries.jsonl")
    run = BM25Index.build(read_corpus(folder / "corpus.jsonl")).search({q: queries[q] for q in qrels}, k=1000)
    return run, qrels


def reference(run, qrels, name):
    measure, key, cut = TREC_EVAL[name]
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {measure})
    results = evaluator.evaluate(truncate_run(run, cut) if cut else run)
    return {qid: values[key] for qid, values in results.items()}


def test_every_default_metric_equals_pytrec_eval_per_query(scifact):
    run, qrels = scifact
    ours = per_query(run, qrels)
    ranked = rank_scores(run)  # our tie order, made explicit so trec_eval cannot apply its own
    assert list(ours) == list(DEFAULT_METRICS)
    for name in DEFAULT_METRICS:
        expected = reference(ranked, qrels, name)
        assert set(ours[name]) == set(qrels)
        for qid in qrels:
            assert ours[name][qid] == pytest.approx(expected[qid], abs=1e-6), (name, qid)
        mean = np.mean(list(expected.values()))
        assert evaluate_run(run, qrels, [name])[name] == pytest.approx(mean, abs=1e-6)


def test_runs_without_ties_need_no_reranking(scifact):
    run, qrels = scifact
    untied = {qid: scores for qid, scores in truncate_run(run, 100).items()
              if len(set(scores.values())) == len(scores)}
    assert len(untied) > 100
    sub_qrels = {qid: qrels[qid] for qid in untied}
    for name in ("nDCG@10", "MAP", "R@100"):
        expected = reference(untied, sub_qrels, name)
        assert per_query(untied, sub_qrels, [name])[name] == pytest.approx(expected, abs=1e-6)


def test_ties_are_broken_the_same_way_for_every_metric():
    qrels = {"q": {"b": 1}}
    run = {"q": {"a": 1.0, "b": 1.0}}  # tied: "a" ranks first (ids ascending)
    values = evaluate_run(run, qrels, ["MRR@10", "nDCG@10", "AP", "R@1"])
    assert values["MRR@10"] == pytest.approx(0.5)
    assert values["AP"] == pytest.approx(0.5)
    assert values["nDCG@10"] == pytest.approx(1 / np.log2(3))
    assert values["R@1"] == 0.0


def test_queries_missing_from_the_run_count_as_zero(scifact):
    run, qrels = scifact
    dropped = sorted(qrels)[:30]
    partial = {qid: scores for qid, scores in run.items() if qid not in dropped}
    partial["not-judged"] = {"4983": 1.0}
    full = per_query(run, qrels, ["nDCG@10"])["nDCG@10"]
    mean = evaluate_run(partial, qrels, ["nDCG@10"])["nDCG@10"]
    assert mean == pytest.approx(sum(v for q, v in full.items() if q not in dropped) / len(qrels))
    assert query_counts(partial, qrels) == {"judged": 300, "evaluated": 270, "missing_from_run": 30,
                                            "unjudged_in_run": 1}


def test_aliases_and_relevance_levels():
    qrels = {"q": {"a": 1, "b": 2}}
    run = {"q": {"a": 2.0, "b": 1.0, "c": 0.5}}
    values = evaluate_run(run, qrels, ["MRR@10", "RR@10", "Recall@1", "R(rel=2)@1", "MAP", "nDCG@3"])
    assert values["MRR@10"] == values["RR@10"] == 1.0
    assert values["Recall@1"] == 0.5
    assert values["R(rel=2)@1"] == 0.0  # only "b" is relevant at grade 2, and it is second
    ideal = 2 / np.log2(2) + 1 / np.log2(3)  # trec_eval's nDCG: the grade is the gain
    assert values["nDCG@3"] == pytest.approx((1 / np.log2(2) + 2 / np.log2(3)) / ideal)
    with pytest.raises(ValueError, match="unknown metric"):
        evaluate_run(run, qrels, ["Precision at ten"])


def test_metrics_deeper_than_the_run_are_named():
    from seedr.evaluation.metrics import deeper_than, run_depth

    run = {"q1": {f"d{i}": float(-i) for i in range(100)}, "q2": {"d1": 1.0}}
    assert run_depth(run) == 100 and run_depth({}) == 0
    assert deeper_than(["MRR@10", "R@100", "R@1000", "nDCG@1000", "MAP", "R(rel=2)@1000"], 100) == \
        ["R@1000", "nDCG@1000", "R(rel=2)@1000"]
