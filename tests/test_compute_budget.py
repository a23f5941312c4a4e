"""Pre-training at equal compute (#54): a FLOPs budget buys each objective its own steps, an experiment
step is keyed on the budget, and no claim says "equal compute" of runs at equal steps."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from seedr.config.loading import from_dict, identity, parse_yaml
from seedr.config.settings import MAX_STEPS, DataConfig, PretrainConfig, TrainConfig
from seedr.experiments.spec import load_experiment
from seedr.modeling.folders import encoder_shape
from seedr.objectives import OBJECTIVES
from seedr.training.compute_budget import apply_flops_budget, budget_steps, flops_per_step


def _config(objective: str, budget: float | None, **train) -> PretrainConfig:
    return PretrainConfig(objective_name=objective, flops_budget=budget, data=DataConfig(max_seq_length=64),
                          train=TrainConfig(batch_size=32, max_steps=1000, warmup_ratio=0.1, **train))


def _options(config: PretrainConfig):
    return from_dict(OBJECTIVES.get(config.objective_name).config_class, config.objective, "objective")


def test_a_budget_buys_each_objective_the_steps_it_costs():
    shape = encoder_shape("seedr-base")
    mlm, seed = _config("mlm", None), _config("seed", None)
    mlm_step, seed_step = flops_per_step(mlm, _options(mlm), shape), flops_per_step(seed, _options(seed), shape)
    # a step is 6 × batch × the objective's multiply-adds per example (Kaplan et al.'s C ≈ 6N)
    per_example = OBJECTIVES.get("mlm").multiply_adds_per_example(_options(mlm), 64, shape, batch_size=32)
    assert mlm_step == pytest.approx(6 * 32 * per_example)
    assert 2.0 < seed_step / mlm_step < 2.6  # SEED's decoder: about 2.2 MLM steps (bench/flops.py)
    budget = 100 * mlm_step
    configs = {name: _config(name, budget) for name in ("mlm", "seed", "contriever")}
    lines = {name: apply_flops_budget(config, _options(config), shape) for name, config in configs.items()}
    assert configs["mlm"].train.max_steps == 100
    assert configs["seed"].train.max_steps == math.floor(budget / seed_step) < 50
    assert configs["contriever"].train.max_steps > 100  # two short crops cost less than one text
    for name, config in configs.items():  # never over the budget, and within one step of it
        spent = config.train.max_steps * flops_per_step(config, _options(config), shape)
        assert budget - flops_per_step(config, _options(config), shape) < spent <= budget * (1 + 1e-12)
        assert lines[name].startswith(f"compute budget: {budget:.3g} FLOPs = {config.train.max_steps} steps of {name}")
    assert apply_flops_budget(_config("mlm", None), _options(mlm), shape) is None  # no budget: nothing changes


def test_a_budget_that_buys_no_step_or_less_than_its_warm_up_is_refused():
    shape = encoder_shape("seedr-base")
    config = _config("seed", 1e9)
    with pytest.raises(ValueError, match="buys no step of seed"):
        budget_steps(config, _options(config), shape)
    config = _config("mlm", 10 * flops_per_step(_config("mlm", None), _options(_config("mlm", None)), shape),
                     warmup_steps=20)
    with pytest.raises(ValueError, match="warm up by train.warmup_ratio"):
        apply_flops_budget(config, _options(config), shape)
    with pytest.raises(ValueError, match="flops_budget must be a positive"):
        PretrainConfig(flops_budget=0)


def test_an_unbudgeted_key_is_what_it_was_and_a_budgeted_one_is_keyed_on_the_budget():
    """No finished step is recomputed because budgets exist; under a budget the steps it buys are not part
    of the key (max_steps is a placeholder), the budget is."""
    plain = identity(_config("mlm", None))
    assert "flops_budget" not in plain and plain["train"]["max_steps"] == 1000
    budgeted = identity(_config("mlm", 4e12))
    assert budgeted["flops_budget"] == 4e12 and "max_steps" not in budgeted["train"]
    other_placeholder = _config("mlm", 4e12)
    other_placeholder.train.max_steps = 7
    assert identity(other_placeholder) == budgeted


def test_a_pretraining_run_under_a_budget_records_the_steps_it_took(wiki_shard, tmp_path):
    from typer.testing import CliRunner

    from seedr.cli import app

    shape = encoder_shape("seedr-base")
    probe = PretrainConfig(objective_name="seed", data=DataConfig(max_seq_length=48), train=TrainConfig(batch_size=4))
    budget = 3.5 * flops_per_step(probe, _options(probe), shape)  # buys 3 steps
    arguments = ["pretrain", "--config", "seed", "--model", "seedr-base", "--corpus", str(wiki_shard),
                 "--out", str(tmp_path / "run")]
    for key, value in {"data.max_documents": 10, "data.max_seq_length": 48, "train.batch_size": 4,
                       "train.global_batch_size": 4, "train.warmup_ratio": 0.1, "train.warmup_steps": "null",
                       "train.log_every": 1, "flops_budget": budget}.items():
        arguments += ["--set", f"{key}={value}"]
    result = CliRunner().invoke(app, arguments, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"compute budget: {budget:.3g} FLOPs = 3 steps of seed" in result.output
    recorded = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert recorded["flops_budget"] == pytest.approx(budget) and recorded["train"]["max_steps"] == 3
    assert json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[-1])["step"] == 3


def test_claims_say_the_budget_their_runs_had(tmp_path):
    """"equal compute" or "equal FLOPs" of runs at equal steps is refused, as is "equal steps" of runs
    at equal FLOPs; the shipped comparison at equal FLOPs says so."""
    experiment = load_experiment("pretraining_objectives")
    assert {experiment.conditions[name].steps[0].settings["flops_budget"]
            for name in experiment.conditions if name.startswith(("mlm-", "seed-", "cpdae-"))} == {"4.255e12"}
    source = yaml.safe_load(load_experiment("seed_vs_mlm").path.read_text())
    for wrong in ("SEED-Encoder beats MLM at equal compute", "SEED-Encoder beats MLM at equal FLOPs"):
        source["claims"][0]["claim"] = wrong
        path = tmp_path / "seed_vs_mlm.yaml"
        path.write_text(yaml.safe_dump(source))
        with pytest.raises(ValueError, match="says 'equal (compute|flops)', but 'seed' and 'mlm' pre-train at "
                                             "400 steps"):
            load_experiment(path)
    source = yaml.safe_load(experiment.path.read_text())
    source["claims"][0]["claim"] = "CPDAE beats SEED-Encoder at equal steps"
    path = tmp_path / "pretraining_objectives.yaml"
    path.write_text(yaml.safe_dump(source))
    with pytest.raises(ValueError, match="says 'equal steps', but 'cpdae' and 'seed' pre-train at 4.255e"):
        load_experiment(path)


def test_a_budget_or_a_step_count_no_run_could_finish_is_refused_in_one_line():
    # the seed recipe's 1e30 FLOPs bought 3.8e20 steps: past an int64, and an ETA of 1e17 hours
    shape = encoder_shape("seedr-base")
    config = _config("seed", 1e30)
    refused = r"buys 1(\.\d+)?e\+19 steps of seed .* than the 1,000,000,000 a run may take \(MAX_STEPS\): give"
    with pytest.raises(ValueError, match=refused):
        budget_steps(config, _options(config), shape)
    ceiling = MAX_STEPS * flops_per_step(config, _options(config), shape)
    assert budget_steps(_config("seed", ceiling), _options(config), shape) == MAX_STEPS  # the ceiling runs
    with pytest.raises(ValueError, match=r"train.max_steps must be at most 1,000,000,000 \(MAX_STEPS\)"):
        TrainConfig(max_steps=MAX_STEPS + 1)


@pytest.mark.parametrize(("value", "said"), [("inf", "'inf' is not a finite number"),
                                             ("nan", "'nan' is not a finite number"),
                                             (".inf", "inf is not a finite number"),
                                             ("1e400", "'1e400' is not a finite number"),
                                             ("-1", "must be a positive number"),
                                             ("0", "must be a positive number")])
def test_an_impossible_budget_is_told_what_is_wrong_with_it(value, said):
    with pytest.raises(ValueError, match="flops_budget") as refused:
        from_dict(PretrainConfig, {"flops_budget": parse_yaml(value)})
    assert said in str(refused.value) and "fits none of" not in str(refused.value)
