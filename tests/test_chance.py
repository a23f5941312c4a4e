"""Chance levels (``seedr.evaluation.chance``): the closed forms equal the mean of the metrics, as seedr
computes them, over every ranking of a small pool; DPR's answer coverage counts the same passages as
``has_answer``; a QA task's chance level is what a random top k covers."""

from __future__ import annotations

import gzip
import itertools
import json
import math

import pytest

from seedr.data.answers import has_answer
from seedr.evaluation.chance import chance_levels, coverage_chance, hit_probability
from seedr.evaluation.metrics import per_query
from seedr.evaluation.qa_coverage import answer_passage_counts

POOL = ["d1", "d2", "d3", "d4", "d5", "d6"]
#: graded judgments, a judged document outside the pool (it counts in recall's and nDCG's ideal, as in
#: trec_eval, but no ranking can retrieve it), a query with no relevant document
QRELS = {"q1": {"d2": 1}, "q2": {"d1": 2, "d4": 1, "d6": 1}, "q3": {"d3": 1, "gone": 2}, "q4": {"d5": 0}}


def _mean_over_every_ranking(metrics: list[str], depth: int) -> dict[str, float]:
    """Each metric's mean over the queries of QRELS and every ranking of POOL cut to ``depth``."""
    run, qrels = {}, {}
    for number, ranking in enumerate(itertools.permutations(POOL)):
        for qid, judged in QRELS.items():
            run[f"{qid}#{number}"] = {doc: float(len(POOL) - rank) for rank, doc in enumerate(ranking[:depth])}
            qrels[f"{qid}#{number}"] = judged
    values = per_query(run, qrels, metrics)
    return {metric: sum(by_query.values()) / len(by_query) for metric, by_query in values.items()}


@pytest.mark.parametrize("depth", [6, 4])
def test_closed_forms_are_the_mean_over_every_ranking(depth):
    metrics = ["nDCG@3", "nDCG@10", "R@2", "R@5", "MRR@3", "RR", "P@2", "Success@1", "Success@3", "R(rel=2)@3"]
    exact = _mean_over_every_ranking(metrics, depth)
    levels = chance_levels(metrics, POOL, QRELS, depth=depth)
    assert levels == pytest.approx(exact, abs=1e-12)
    assert levels["RR"] > 0 and levels["nDCG@3"] > 0


def test_metrics_without_a_closed_form_have_no_chance_level():
    assert chance_levels(["MAP", "nDCG@10"], POOL, QRELS)["MAP"] is None


def test_hit_probability_is_the_hypergeometric_miss():
    for pool, relevant, k in [(10, 1, 3), (10, 4, 3), (10_000, 37, 100), (7, 7, 1), (5, 0, 2), (5, 2, 9)]:
        k_ = min(k, pool)
        expected = 1 - math.comb(pool - relevant, k_) / math.comb(pool, k_)
        assert hit_probability(pool, relevant, k) == pytest.approx(expected, abs=1e-12)


@pytest.fixture(scope="module")
def squad_pool(shared_data):
    """Real questions and paragraphs: the first 40 paragraphs of SQuAD dev and their questions."""
    with gzip.open(shared_data / "squad" / "squad-dev-v1.1.json.gz", "rt", encoding="utf-8") as stream:
        data = json.load(stream)["data"]
    paragraphs = [paragraph for article in data for paragraph in article["paragraphs"]][:40]
    questions = {qa["id"]: (qa["question"], [answer["text"] for answer in qa["answers"]])
                 for paragraph in paragraphs for qa in paragraph["qas"]}
    return paragraphs, dict(list(questions.items())[:120])


def test_answer_passage_counts_match_has_answer(squad_pool):
    from seedr.data.records import Document

    paragraphs, questions = squad_pool
    passages = [Document(f"p{index}", paragraph["context"]) for index, paragraph in enumerate(paragraphs)]
    answers = {qid: found for qid, (_, found) in questions.items()}
    answers["none"] = ["a phrase no SQuAD paragraph holds, zyxxyz"]
    counts = answer_passage_counts(passages, answers)
    assert counts == {qid: sum(has_answer(found, passage.text) for passage in passages)
                      for qid, found in answers.items()}
    assert counts["none"] == 0 and max(counts.values()) > 1  # some answers are in several paragraphs


def test_qa_task_chance_is_what_a_random_top_k_covers(squad_pool, tmp_path):
    """A QA task (NQ-open format, a passage pool) on real SQuAD questions and paragraphs: its chance
    level per Top-k is the mean over questions of 1 − C(N−a, k)/C(N, k), a its answer passages."""
    from seedr.experiments.tasks import TASKS

    paragraphs, questions = squad_pool
    with open(tmp_path / "questions.jsonl", "w") as stream:
        for qid, (question, found) in questions.items():
            stream.write(json.dumps({"id": qid, "question": question, "answer": found}) + "\n")
    with open(tmp_path / "passages.jsonl", "w") as stream:
        for index, paragraph in enumerate(paragraphs):
            stream.write(json.dumps({"_id": f"p{index}", "title": "", "text": paragraph["context"]}) + "\n")
    task = TASKS.get("qa")("squad-qa", {"questions": str(tmp_path / "questions.jsonl"),
                                        "passages": [str(tmp_path / "passages.jsonl")], "max_passages": 30},
                           ["Top-1", "Top-5", "Top-200"], "test")
    levels = task.chance(depth=20)
    pool = [paragraph["context"] for paragraph in paragraphs[:30]]
    held = [sum(has_answer(found, text) for text in pool) for _, found in questions.values()]

    def covered(k):
        return sum(1 - math.comb(30 - a, k) / math.comb(30, k) if 30 - a >= k else 1.0 for a in held) / len(held)

    assert levels["Top-1"] == pytest.approx(covered(1))
    assert levels["Top-5"] == pytest.approx(covered(5))
    assert levels["Top-200"] == pytest.approx(covered(20))  # a run holds 20 ranks: Top-200 is Top-20
    assert coverage_chance([5], 30, dict(enumerate(held)))["Top-5"] == pytest.approx(covered(5))
