"""Paired significance tests on real per-query scores (BM25 on SciFact) and the comparison table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from seedr.data.corpus import read_corpus
from seedr.data.queries import read_qrels, read_queries
from seedr.data.runs import rank_documents
from seedr.evaluation.compare import BETTER, WORSE, comparison_table
from seedr.evaluation.metrics import per_query
from seedr.evaluation.significance import align, compare_runs, paired_ttest, permutation_test
from seedr.retrieval.bm25 import BM25Index


def reverse_top10(run):
    """The same documents, the top 10 of each ranking in reverse order: a clearly worse system."""
    reversed_run = {}
    for qid, scores in run.items():
        ranked = rank_documents(scores)
        top = ranked[:10]
        reversed_run[qid] = {doc: score for (doc, _), (_, score) in zip(top[::-1], top)} | dict(ranked[10:])
    return reversed_run


@pytest.fixture(scope="module")
def systems(shared_data: Path):
    folder = shared_data / "scifact"
    qrels = read_qrels(folder / "qrels" / "test.tsv")
    queries = read_queries(folder / "queries.jsonl")
    queries = {qid: queries[qid] for qid in qrels}
    corpus = list(read_corpus(folder / "corpus.jsonl"))
    anserini = BM25Index.build(corpus).search(queries, k=100)               # k1=0.9, b=0.4
    elastic = BM25Index.build(corpus, k1=1.2, b=0.75).search(queries, k=100)  # BEIR's parameters
    metrics = ["nDCG@10", "MRR@10"]
    return {"bm25": per_query(anserini, qrels, metrics),
            "bm25-es": per_query(elastic, qrels, metrics),
            "bm25-top10-reversed": per_query(reverse_top10(anserini), qrels, metrics)}


@pytest.mark.parametrize("test", ["permutation", "ttest"])
def test_a_clearly_worse_run_is_significant(systems, test):
    ndcg = {name: by_metric["nDCG@10"] for name, by_metric in systems.items()}
    comparison = compare_runs(ndcg, "bm25", test)
    worse = comparison.systems["bm25-top10-reversed"]
    assert worse.delta < -0.2 and worse.p_value < 0.05 and worse.significant
    assert comparison.systems["bm25"].p_value is None and comparison.queries == 300


@pytest.mark.parametrize("test", ["permutation", "ttest"])
def test_bm25_parameter_settings_do_not_differ_significantly(systems, test):
    """Anserini's (0.9, 0.4) and Elasticsearch's (1.2, 0.75) BM25 differ by noise on SciFact (p ≈ 0.5)."""
    comparison = compare_runs({name: systems[name]["nDCG@10"] for name in ("bm25", "bm25-es")}, "bm25", test)
    other = comparison.systems["bm25-es"]
    assert abs(other.delta) < 0.01 and other.p_value > 0.05 and not other.significant


def test_permutation_test_is_exact_for_few_queries_and_seeded_otherwise(systems):
    # five queries, all improved: 2 of the 2^5 sign patterns are as extreme -> p = 1/16
    assert permutation_test(np.ones(5), np.zeros(5)) == pytest.approx(2 / 32)
    _, scores = align({name: by_metric["nDCG@10"] for name, by_metric in systems.items()})
    first = permutation_test(scores["bm25-es"], scores["bm25"], n_resamples=2000, seed=3)
    assert first == permutation_test(scores["bm25-es"], scores["bm25"], n_resamples=2000, seed=3)
    assert permutation_test(scores["bm25"], scores["bm25"]) == 1.0


def test_ttest_is_scipys_paired_ttest(systems):
    _, scores = align({name: by_metric["MRR@10"] for name, by_metric in systems.items()})
    expected = stats.ttest_rel(scores["bm25-es"], scores["bm25"]).pvalue
    assert paired_ttest(scores["bm25-es"], scores["bm25"]) == pytest.approx(expected)
    assert paired_ttest(scores["bm25"], scores["bm25"]) == 1.0


def test_queries_are_aligned_and_missing_ones_score_zero():
    qids, scores = align({"a": {"q1": 0.5, "q2": 1.0}, "b": {"q2": 0.25, "q3": 1.0}})
    assert qids == ["q1", "q2", "q3"]
    assert scores["a"].tolist() == [0.5, 1.0, 0.0] and scores["b"].tolist() == [0.0, 0.25, 1.0]
    with pytest.raises(KeyError, match="baseline 'c'"):
        compare_runs({"a": {"q1": 1.0}}, "c")
    with pytest.raises(KeyError, match="unknown significance test"):
        compare_runs({"a": {"q1": 1.0}}, "a", test="wilcoxon-typo")


def test_comparison_table_as_markdown_and_json(systems):
    table = comparison_table(systems, baseline="bm25-top10-reversed", test="permutation")
    markdown = table.to_markdown(digits=3)
    lines = markdown.splitlines()
    assert lines[0] == "| system | nDCG@10 | MRR@10 |"
    assert lines[2].startswith("| bm25 | ") and lines[2].count(BETTER) == 2  # better than the baseline
    assert "(baseline)" in lines[4] and BETTER not in lines[4] and WORSE not in lines[4]
    assert "paired randomisation test" in markdown
    data = json.loads(json.dumps(table.to_dict()))
    assert data["systems"]["bm25"]["nDCG@10"]["significant"] is True
    assert data["systems"]["bm25-es"]["nDCG@10"]["p_value"] < 0.05  # also better than the reversed run
    assert data["systems"]["bm25-top10-reversed"]["nDCG@10"]["p_value"] is None
    worse = comparison_table(systems, baseline="bm25").to_markdown()
    assert WORSE in worse.splitlines()[4]


def test_console_table_shows_each_difference_and_its_p_value(systems):
    from rich.console import Console

    table = comparison_table(systems, baseline="bm25-top10-reversed", test="ttest")
    console = Console(width=200, record=True)
    console.print(table.to_rich())
    text = console.export_text()
    for system in ("bm25", "bm25-es"):
        for metric in ("nDCG@10", "MRR@10"):
            result = table.comparisons[metric].systems[system]
            assert f"{result.delta:+.4f} p={result.p_value:.2g}" in text
    assert text.count(" p=") == 4  # none for the baseline itself
    assert "difference to bm25-top10-reversed and the p-value" in " ".join(text.split())


def test_chunked_permutation_test_equals_drawing_all_resamples_at_once(systems):
    _, scores = align({name: by_metric["nDCG@10"] for name, by_metric in systems.items()})
    for system in ("bm25-es", "bm25-top10-reversed"):
        at_once = permutation_test(scores[system], scores["bm25"], n_resamples=3000, seed=7, chunk=3000)
        for chunk in (1, 7, 1000, None):  # None: the default chunk for 300 queries
            assert permutation_test(scores[system], scores["bm25"], n_resamples=3000, seed=7,
                                    chunk=chunk) == at_once


def test_chunked_permutation_test_keeps_memory_flat(systems):
    import tracemalloc

    _, scores = align({name: by_metric["nDCG@10"] for name, by_metric in systems.items()})
    system, baseline = np.tile(scores["bm25-es"], 4), np.tile(scores["bm25"], 4)  # 1,200 paired values

    def peak(chunk: int) -> int:
        tracemalloc.start()
        permutation_test(system, baseline, n_resamples=5000, seed=1, chunk=chunk)
        _, highest = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return highest

    assert peak(100) * 10 < peak(5000)  # 5000 × 1200 resampled values at once: about 100 MB
