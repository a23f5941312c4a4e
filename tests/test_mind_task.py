"""MIND as an experiment's task (``kind: mind``, SEED-Encoder sec. 4.4): each impression's candidates
reranked by the user's clicked titles, scored by MIND's official metrics as ``seedr evaluate --mind`` scores
the same runs; on small files in MIND's real layout (MIND itself is not available on this machine)."""

from __future__ import annotations

import json

import pytest

from seedr.data.runs import read_trec_run

NEWS = "".join(f"{news}\t{category}\t{category}\t{title}\t{abstract}\t"
               f"https://assets.msn.com/labs/mind/{news}.html\t[]\t[]\n"
               for news, category, title, abstract in [
                   ("N1", "sports", "PGA Tour winners", "A gallery of recent winners on the PGA Tour."),
                   ("N2", "sports", "Golf's longest drives", "The longest drives of the golf season."),
                   ("N3", "lifestyle", "The royals' favourite jackets", "Shop what the royals wear."),
                   ("N4", "foodanddrink", "Dollar General's new store", ""),
                   ("N5", "sports", "A golf major on the PGA Tour", "The PGA Tour's major, hole by hole."),
                   ("N6", "lifestyle", "Prince Charles at the palace", "The royals' week at the palace.")])
BEHAVIORS = ("1\tU1\t11/11/2019 9:05:58 AM\tN1 N2\tN5-1 N3-0 N4-0\n"
             "2\tU2\t11/12/2019 6:11:30 PM\tN3\tN6-1 N5-0 N4-0\n"
             "3\tU3\t11/13/2019 7:01:48 AM\t\tN6-0 N1-1\n"  # no history: left out of the run, scored all tied
             "4\tU4\t11/14/2019 8:15:00 AM\tN2 N6\tN5-0 N1-1 N3-1\n"
             "5\tU5\t11/15/2019 8:55:22 AM\tN1\tN2 N3\n")  # unlabelled (MIND's test set): not scored

EXPERIMENT = """\
title: Tiny MIND
variables: {data: ""}
tasks:
  mind:
    kind: mind
    news: "{data}/news.tsv"
    behaviors: "{data}/behaviors.tsv"
    metrics: [AUC, MRR, nDCG@5, nDCG@10]
defaults:
  retrieve: {max_length: 64}
conditions:
  bm25: {retrieve: bm25}
  minilm: {retrieve: {model: minilm}}
baseline: bm25
resamples: 200
"""


def test_an_experiment_reranks_mind_impressions_and_scores_them_as_evaluate_does(tmp_path):
    import seedr
    from seedr.experiments.mind import MindNewsTask
    from seedr.experiments.runner import run_experiment
    from seedr.experiments.spec import load_experiment

    data = tmp_path / "mind"
    data.mkdir()
    (data / "news.tsv").write_text(NEWS)
    (data / "behaviors.tsv").write_text(BEHAVIORS)
    path = tmp_path / "experiments" / "mind.yaml"
    path.parent.mkdir()
    path.write_text(EXPERIMENT)
    experiment = load_experiment(path, "cpu", [f"data={data}"])
    task = MindNewsTask("mind", experiment.tasks["mind"].settings, experiment.tasks["mind"].metrics, "mind")
    assert task.queries() == {"1": "Golf's longest drives [SEP] PGA Tour winners",  # most recent first
                              "2": "The royals' favourite jackets", "4": "Prince Charles at the palace [SEP] "
                                                                         "Golf's longest drives"}
    # the candidates shown, each once
    assert [document.id for document in task.documents()] == ["N5", "N3", "N4", "N6", "N1"]
    assert task.chance()["AUC"] == 0.5

    outcome = run_experiment(experiment, tmp_path / "out")
    systems = outcome.results["tasks"]["mind"]["systems"]
    assert set(systems) == {"bm25", "minilm"}
    for folder in (tmp_path / "out" / "retrieval").iterdir():
        settings = json.loads((folder / "settings.json").read_text())
        run = read_trec_run(folder / "run.trec")
        assert set(run) == {"1", "2", "4"} and set(run["1"]) == {"N5", "N3", "N4"}  # each impression's own
        evaluation = seedr.evaluate([folder / "run.trec"], mind=data / "behaviors.tsv", show_progress=False)
        name = "minilm" if settings["model"] else "bm25"
        assert {metric: systems[name][metric]["mean"] for metric in evaluation.metrics["run"]} == \
            pytest.approx(evaluation.metrics["run"]), name
        if settings["model"]:
            assert (folder / "embeddings" / "manifest.json").is_file()
            assert (folder / "users" / "manifest.json").is_file()
    assert 0 <= systems["minilm"]["AUC"]["mean"] <= 1
    assert set(systems["minilm"]) >= {"AUC", "MRR", "nDCG@5", "nDCG@10"}


def test_a_mind_task_refuses_a_metric_mind_does_not_report(tmp_path):
    from seedr.experiments.spec import load_experiment

    path = tmp_path / "experiments" / "bad.yaml"
    path.parent.mkdir()
    path.write_text(EXPERIMENT.replace("[AUC, MRR, nDCG@5, nDCG@10]", "[AUC, R@10]"))
    (tmp_path / "news.tsv").write_text(NEWS)
    (tmp_path / "behaviors.tsv").write_text(BEHAVIORS)
    refused = r"bad\.yaml.*MIND reports AUC, MRR, nDCG@5, nDCG@10; not \['R@10'\]"
    with pytest.raises(ValueError, match=refused):
        load_experiment(path, "cpu", [f"data={tmp_path}"])
