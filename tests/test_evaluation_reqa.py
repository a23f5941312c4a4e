"""ReQA-SQuAD with BM25 on a few real SQuAD dev articles."""

from __future__ import annotations

import pytest

from seedr.data.qa import read_squad, reqa_candidates
from seedr.evaluation.reqa import REQA_METRICS, evaluate_reqa, lexical_documents, reqa_per_query
from seedr.retrieval.bm25 import BM25Index


@pytest.fixture(scope="module")
def reqa(shared_data):
    articles = read_squad(shared_data / "squad" / "squad-dev-v1.1.json.gz")[:3]
    candidates, questions, qrels = reqa_candidates(articles)
    run = BM25Index.build(lexical_documents(candidates)).search(questions, k=100)
    return candidates, questions, qrels, run


def test_bm25_recall_is_monotone_and_far_above_chance(reqa):
    candidates, _, qrels, run = reqa
    metrics = evaluate_reqa(run, qrels)
    assert list(metrics) == ["R@1", "R@5", "R@10", "R@50", "R@100", "MRR"]
    recalls = [metrics[f"R@{k}"] for k in (1, 5, 10, 50, 100)]
    assert recalls == sorted(recalls)
    gold_per_question = sum(len(docs) for docs in qrels.values()) / len(qrels)
    chance_at_1 = gold_per_question / len(candidates)
    assert metrics["R@1"] > 50 * chance_at_1
    assert metrics["R@1"] <= metrics["MRR"] <= metrics["R@100"]  # the run is 100 deep


def test_recall_counts_a_question_once_whatever_its_gold_count(reqa):
    _, _, qrels, _ = reqa
    qid = next(q for q, docs in qrels.items() if len(docs) > 1)  # answers in two sentences
    gold = sorted(qrels[qid])
    one_gold_first = {qid: {gold[0]: 2.0, "elsewhere": 1.0}}
    values = evaluate_reqa(one_gold_first, {qid: qrels[qid]})
    assert values["R@1"] == 1.0 and values["MRR"] == 1.0  # not 1 / len(gold), as IR recall would give


def test_unanswered_questions_are_misses(reqa):
    _, _, qrels, run = reqa
    dropped = sorted(run)[:10]
    partial = {qid: docs for qid, docs in run.items() if qid not in dropped}
    per_question = reqa_per_query(partial, qrels)
    assert set(per_question) == set(REQA_METRICS)
    assert all(per_question["R@100"][qid] == 0.0 for qid in dropped)
    assert evaluate_reqa(partial, qrels)["R@100"] < evaluate_reqa(run, qrels)["R@100"]
