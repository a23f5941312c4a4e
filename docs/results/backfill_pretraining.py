"""Give the experiments recorded before their results.json kept each condition's pre-training
(``seedr.experiments.record.pretraining.pretraining_record``: steps, batch and length, from each run's
config.yaml)
that record, where a ``flops_budget`` set the steps (the experiment's variables do not say them).

No step is run: each condition's pre-training step is planned from the recorded experiment's file, and
the steps its budget bought are counted as the run counted them when it started
(``seedr.training.compute_budget.budget_steps``, which ``apply_flops_budget`` writes into the run's
config.yaml), at the shape of the model it starts from. Then the claims page is regenerated.

It ran once, at commit 2825d72, with the counts those runs were sized by. #66 then changed the counts
(attention over the sequence, padded batches, coCondenser's real spans: ``tests/test_measured_compute.py``),
so run again it would not give those runs' steps: the records it filled keep what it wrote, and records
made since keep their steps themselves.

    PYTHONPATH=$PWD nice -n 19 .venv/bin/python docs/results/backfill_pretraining.py
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from seedr.experiments.record.claims_page import update_claims_page
from seedr.experiments.sizing import made_shape
from seedr.experiments.runner import planned_chains
from seedr.experiments.spec import load_experiment
from seedr.io import atomic_write, json_text
from seedr.modeling.folders import encoder_shape, resolve_model_path
from seedr.training.compute_budget import budget_steps

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"


def budgeted_pretraining(name: str, scale: str) -> dict[str, dict[str, int]]:
    """Each condition's pre-training steps, batch and length, where a FLOPs budget sets its steps."""
    experiment = load_experiment(name, scale)
    recorded = {}
    with tempfile.TemporaryDirectory() as work:
        for condition, chained in planned_chains(experiment, work).items():
            for step, _ in chained:
                if step.kind != "pretrain":
                    continue
                config = step.config()
                if config.flops_budget is None:
                    continue
                shape = made_shape(step, lambda model: encoder_shape(resolve_model_path(model)))
                recorded[condition] = {"steps": budget_steps(config, step.objective_config(config), shape),
                                       "batch": config.train.global_batch_size or config.train.batch_size,
                                       "length": config.data.max_seq_length}
    return recorded


def main() -> None:
    for path in sorted(RESULTS.glob("*/results.json")):
        results = json.loads(path.read_text(encoding="utf-8"))
        if "pretraining" in results or "flops_budget" not in (results.get("variables") or {}):
            continue
        results["pretraining"] = budgeted_pretraining(results["experiment"], results["scale"])
        with atomic_write(path) as stream:
            stream.write(json_text(results))
        print(f"{path.parent.name}: {len(results['pretraining'])} pre-trainings recorded")
    update_claims_page(ROOT / "docs" / "claims.md", RESULTS)


if __name__ == "__main__":
    main()
