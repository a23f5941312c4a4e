"""An experiment whose seeds ran apart — one lease each, as the GPU pack runs them — combined
(``seedr.experiments.record.combine``) is judged exactly as the same experiment run whole: its groups' means,
seed spreads, p-values and claims are the whole run's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from seedr.experiments.record.combine import combine_seed_runs
from seedr.experiments.runner import experiment_scores, run_experiment
from seedr.experiments.spec import load_experiment
from seedr.modeling.encoder import save_encoder
from tests.helpers import bm25_experiment, tiny_bert

EXPERIMENT = bm25_experiment(
    "seeds that ran apart", metrics="nDCG@10, R@100", resamples=200,
    conditions=("  bm25: {retrieve: bm25}\n"
                '  "tiny-s{seed}":\n'
                '    grid: {seed: "{seeds}"}\n'
                '    retrieve: {model: "{models}/s{seed}", pooling: cls, normalize: false, max_length: 64}\n'
                '  "mean-s{seed}":\n'
                '    grid: {seed: "{seeds}"}\n'
                '    retrieve: {model: "{models}/s{seed}", pooling: mean, normalize: true, max_length: 64}\n'),
).replace('variables: {data: ""}', 'variables: {data: "", models: "", seeds: [1, 2, 3]}') + """\
groups:
  tiny: ["tiny-s*"]
  mean: ["mean-s*"]
claims:
  - {claim: "mean pooling beats [CLS] (three seeds)", condition: mean, against: tiny, task: scifact,
     metric: nDCG@10, expect: higher}
  - {claim: "BM25 beats [CLS] pooling", condition: bm25, against: tiny, task: scifact, metric: R@100}
"""


@pytest.fixture(scope="module")
def models(tokenizer, tmp_path_factory) -> Path:
    """Three tiny encoders that differ only by the seed of their random weights: three "training seeds"."""
    folder = tmp_path_factory.mktemp("models")
    for seed in (1, 2, 3):
        torch.manual_seed(seed)
        save_encoder(tiny_bert(tokenizer), tokenizer, folder / f"s{seed}")
    return folder


def _load(path: Path, data: Path, models: Path, seeds: str):
    return load_experiment(path, "cpu", [f"data={data}", f"models={models}", f"seeds={seeds}"])


def test_seeds_run_apart_combine_into_the_whole_run(tmp_path, scifact_slice, models):
    path = tmp_path / "apart.yaml"
    path.write_text(EXPERIMENT)
    whole = run_experiment(_load(path, scifact_slice, models, "[1, 2, 3]"), tmp_path / "whole").results

    runs = []
    for seeds in ("[1]", "[2, 3]"):  # a lease with one seed, another with two
        experiment = _load(path, scifact_slice, models, seeds)
        out = tmp_path / f"apart-{len(runs)}"
        results = run_experiment(experiment, out).results
        per_query = json.loads(json.dumps(experiment_scores(experiment, out)))  # as per_query.json carries it
        runs.append({"results": results, "per_query": per_query})
    combined = combine_seed_runs(_load(path, scifact_slice, models, "[1, 2, 3]"), runs)

    assert combined["tasks"]["scifact"]["systems"] == whole["tasks"]["scifact"]["systems"]
    assert combined["seed_spread"] == whole["seed_spread"]
    assert combined["claims"] == whole["claims"] and combined["figures"] == whole["figures"]
    assert len(combined["combined_from"]) == 2 and combined["seed_spread"]["scifact"]["mean"]["nDCG@10"]["seeds"] == 3


def test_a_system_scored_differently_by_two_runs_is_refused(tmp_path, scifact_slice, models):
    path = tmp_path / "apart.yaml"
    path.write_text(EXPERIMENT)
    experiment = _load(path, scifact_slice, models, "[1]")
    results = run_experiment(experiment, tmp_path / "one").results
    per_query = experiment_scores(experiment, tmp_path / "one")
    changed = json.loads(json.dumps(per_query))
    first_query = next(iter(changed["scifact"]["tiny-s1"]["nDCG@10"]))
    changed["scifact"]["tiny-s1"]["nDCG@10"][first_query] += 0.5
    with pytest.raises(ValueError, match="tiny-s1"):
        combine_seed_runs(experiment, [{"results": results, "per_query": per_query},
                                       {"results": results, "per_query": changed}])


def test_the_gpu_pack_combines_the_leases_of_a_split_experiment(tmp_path, scifact_slice, models):
    """``python gpu/pack.py combine NAME``: the leases recorded for the jobs that combine into NAME (each
    folder as ``record`` files it: results.json, per_query.json, lease.json), judged as one run."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
    import pack

    path = tmp_path / "apart.yaml"
    path.write_text(EXPERIMENT)
    variables = [f"data={scifact_slice}", f"models={models}"]
    whole = run_experiment(_load(path, scifact_slice, models, "[1, 2]"), tmp_path / "whole").results
    queue = "jobs:\n"
    for seed in (1, 2):
        experiment = _load(path, scifact_slice, models, f"[{seed}]")
        results = run_experiment(experiment, tmp_path / f"work-{seed}").results
        lease = tmp_path / "gpu" / f"apart_{seed}" / "2026-11-28-NVIDIA-H100"
        lease.mkdir(parents=True)
        (lease / "results.json").write_text(json.dumps(results))
        (lease / "per_query.json").write_text(json.dumps(experiment_scores(experiment, tmp_path / f"work-{seed}")))
        (lease / "lease.json").write_text(json.dumps({"experiment": str(path), "scale": "cpu", "seeds": [seed],
                                                      "settings": [f"seeds=[{seed}]", *variables], "tiny": False}))
        queue += (f"  - {{name: apart_{seed}, goal: g, experiment: {path}, combine: apart, done: false,\n"
                  f"     runs: [{{date: 2026-11-28, run_on: NVIDIA H100, exit: 0, folder: {lease}}}]}}\n")
    (tmp_path / "queue.yaml").write_text(queue)
    target = pack.combine("apart", tmp_path / "gpu", tmp_path / "queue.yaml")
    combined = json.loads((target / "results.json").read_text())
    assert combined["claims"] == whole["claims"] and combined["seed_spread"] == whole["seed_spread"]
    report = (target / "report.md").read_text()
    assert "apart_1" in report and "NVIDIA H100" in report and "mean pooling beats [CLS]" in report

    lines = (tmp_path / "queue.yaml").read_text().splitlines()
    (tmp_path / "queue.yaml").write_text("\n".join(lines[:3]) + "\n  - {name: apart_3, goal: g, experiment: x, "
                                         "combine: apart, done: false, runs: []}\n")
    with pytest.raises(SystemExit, match="apart_3 to go"):
        pack.combine("apart", tmp_path / "gpu", tmp_path / "queue.yaml")
