"""MIND impression metrics against values worked out by hand (and sklearn's AUC), on a behaviors.tsv
written in MIND's format (MIND itself is not available here)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from seedr.data.mind import read_behaviors
from seedr.evaluation.mind import MIND_METRICS, auc_score, evaluate_impressions, impression_metrics

BEHAVIORS = (
    "1\tU13740\t11/11/2019 9:05:58 AM\tN55189 N42782 N34694\tN55689-1 N35729-0 N20678-0 N39317-1 N58114-0\n"
    "2\tU91836\t11/12/2019 6:11:30 PM\t\tN20678-0 N39317-1\n"
    "3\tU73700\t11/14/2019 7:01:48 AM\tN10732\tN50014-0 N23877-1 N35389-0 N49712-0 N16844-1 N59685-0\n"
    "4\tU34670\t11/11/2019 5:28:05 AM\tN45729 N2203\t"
    "N35729-0 N33632-0 N49685-0 N27581-0 N51048-0 N47020-1 N46069-0\n"
    "5\tU8125\t11/15/2019 8:55:22 AM\tN10078\tN50014 N23877\n"  # test-set style: no labels, skipped
)

SCORES = {
    "1": [0.9, 0.8, 0.1, 0.3, 0.5],        # clicks at ranks 1 and 4
    "2": [0.2, 0.7],                        # the click first
    "3": [0.3, 0.2, 0.9, 0.1, 0.4, 0.8],   # clicks at ranks 3 and 5
    "4": [0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1],  # the click at rank 6 of 7
    "5": [0.5, 0.4],
}

log2 = math.log2
EXPECTED = {  # worked by hand from the definitions of msnews/MIND evaluate.py
    "1": {"AUC": 4 / 6, "MRR": (1 + 1 / 4) / 2,
          "nDCG@5": (1 + 1 / log2(5)) / (1 + 1 / log2(3)), "nDCG@10": (1 + 1 / log2(5)) / (1 + 1 / log2(3))},
    "2": {"AUC": 1.0, "MRR": 1.0, "nDCG@5": 1.0, "nDCG@10": 1.0},
    "3": {"AUC": 3 / 8, "MRR": (1 / 3 + 1 / 5) / 2,
          "nDCG@5": (1 / log2(4) + 1 / log2(6)) / (1 + 1 / log2(3)),
          "nDCG@10": (1 / log2(4) + 1 / log2(6)) / (1 + 1 / log2(3))},
    "4": {"AUC": 1 / 6, "MRR": 1 / 6, "nDCG@5": 0.0, "nDCG@10": 1 / log2(7)},
}


@pytest.fixture()
def impressions(tmp_path):
    path = tmp_path / "behaviors.tsv"
    path.write_text(BEHAVIORS)
    return list(read_behaviors(path))


def test_per_impression_values_match_hand_computation(impressions):
    values = impression_metrics(SCORES, impressions)
    assert set(values) == set(MIND_METRICS)
    for impression_id, expected in EXPECTED.items():
        for metric, value in expected.items():
            assert values[metric][impression_id] == pytest.approx(value, abs=1e-12), (impression_id, metric)
    assert "5" not in values["AUC"]  # unlabelled


def test_means_over_labelled_impressions(impressions):
    metrics = evaluate_impressions(SCORES, impressions)
    assert metrics["impressions"] == 4
    for metric in MIND_METRICS:
        assert metrics[metric] == pytest.approx(np.mean([EXPECTED[i][metric] for i in EXPECTED]))


def test_auc_equals_sklearn_including_ties(impressions):
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    tied = {**SCORES, "3": [0.4, 0.2, 0.4, 0.2, 0.4, 0.8]}
    for impression in impressions[:4]:
        labels, scores = np.array(impression.labels), np.array(tied[impression.id])
        expected = sklearn_metrics.roc_auc_score(labels, scores)
        assert auc_score(labels, scores) == pytest.approx(expected, abs=1e-12)


def test_missing_scores_count_as_all_tied_and_bad_lengths_fail(impressions):
    without_first = {k: v for k, v in SCORES.items() if k != "1"}
    assert impression_metrics(without_first, impressions)["AUC"]["1"] == 0.5
    with pytest.raises(ValueError, match="impression '2': 3 scores for 2 items"):
        evaluate_impressions({**SCORES, "2": [0.1, 0.2, 0.3]}, impressions)


def test_auc_needs_both_classes(tmp_path):
    path = tmp_path / "behaviors.tsv"
    path.write_text("9\tU1\t11/11/2019 9:05:58 AM\t\tN1-1 N2-1\n")
    with pytest.raises(ValueError, match="impression '9'.*all clicked"):
        evaluate_impressions({"9": [0.3, 0.4]}, read_behaviors(path))


# ------------------------------------------------------------------ seedr evaluate --mind


def _rerank_run(impressions, scores):
    """A TREC run that reranks each impression: query id the impression's, documents its candidates."""
    return {impression.id: dict(zip(impression.candidates, scores[impression.id]))
            for impression in impressions}


def test_evaluate_scores_runs_that_rerank_impressions_both_ways(tmp_path, impressions):
    """``seedr evaluate RUN --mind behaviors.tsv`` and ``seedr.evaluate(..., mind=...)``: the official
    scorer's means over the labelled impressions, each run tested against the baseline as for any task."""
    import json

    from typer.testing import CliRunner

    import seedr
    from seedr.cli import app
    from seedr.data.runs import write_trec_run

    behaviors = tmp_path / "behaviors.tsv"
    write_trec_run(tmp_path / "model.trec", _rerank_run(impressions, SCORES), tag="model")
    reversed_scores = {key: [-value for value in values] for key, values in SCORES.items()}
    write_trec_run(tmp_path / "reversed.trec", _rerank_run(impressions, reversed_scores), tag="reversed")
    result = CliRunner().invoke(app, ["evaluate", str(tmp_path / "model.trec"),
                                      str(tmp_path / "reversed.trec"), "--mind", str(behaviors),
                                      "--resamples", "100", "--json", str(tmp_path / "mind.json")])
    assert result.exit_code == 0, result.output
    recorded = json.loads((tmp_path / "mind.json").read_text())
    assert recorded["mode"] == "mind" and recorded["impressions"] == 4
    expected = evaluate_impressions(SCORES, impressions)
    reversed_expected = evaluate_impressions(reversed_scores, impressions)
    systems = recorded["comparison"]["systems"]
    for metric in MIND_METRICS:
        assert systems["model"][metric]["mean"] == pytest.approx(expected[metric], abs=1e-12), metric
        assert systems["reversed"][metric]["mean"] == pytest.approx(reversed_expected[metric], abs=1e-12), \
            metric
    assert "left_out" not in recorded  # impressions of 2 to 7 candidates: nDCG@10 is over each one's own

    alone = seedr.evaluate([tmp_path / "model.trec"], mind=behaviors, show_progress=False)
    assert alone.metrics["model"] == pytest.approx({metric: expected[metric] for metric in MIND_METRICS})


def test_a_candidate_the_run_leaves_out_ranks_last(tmp_path, impressions):
    import seedr
    from seedr.data.runs import write_trec_run

    ranked = _rerank_run(impressions, SCORES)
    del ranked["4"]["N47020"]  # impression 4's click, scored 0.2 of 7: now below all six others
    write_trec_run(tmp_path / "run.trec", ranked)
    last = {**SCORES, "4": [0.7, 0.6, 0.5, 0.4, 0.3, -1.0, 0.1]}
    evaluation = seedr.evaluate([tmp_path / "run.trec"], mind=tmp_path / "behaviors.tsv", show_progress=False)
    assert evaluation.metrics["run"]["AUC"] == pytest.approx(evaluate_impressions(last, impressions)["AUC"])
    with pytest.raises(ValueError, match="give exactly one of"):
        seedr.evaluate([tmp_path / "run.trec"], mind=tmp_path / "behaviors.tsv", qrels=tmp_path / "qrels.tsv")
