"""Every shipped experiment, at every scale it declares, fine-tunes and scores a pre-trained condition
through the vector its objective trained (SEED-Encoder's [CLS] bottleneck, Contriever's mean-pooled
crops, ...), unless the condition says in words why not (``pooling_departure``).

Resolution only, no training: each condition's chain is followed as the runner chains it (a step starts
from the previous product, or from the condition its settings name) — pre-training (the pooling its
objective trains, as the saved encoder records it: ``Objective.pooling`` of its resolved options) →
fine-tuning (its resolved ``pooling``; null: the model's own) → retrieval (the same, for the last model).
The chain is followed here, apart from the rule the experiments apply (``seedr.experiments.seed_pooling``),
so that this test checks what the rule makes of every file rather than repeating it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from seedr.config.loading import from_dict, merge_settings
from seedr.objectives import OBJECTIVES
from seedr.experiments.files import experiment_names, experiment_path, read_experiment_file
from seedr.experiments.spec import SCALES, load_experiment
from seedr.experiments.steps import build_step, condition_references
from seedr.io import DataError
from seedr.objectives import OBJECTIVES


def _scales(name: str) -> list[str]:
    """The scales an experiment file declares (``cpu`` always: it is every file's default)."""
    declared = read_experiment_file(experiment_path(name)).get("scales") or {}
    return ["cpu", *(scale for scale in SCALES if scale != "cpu" and scale in declared)]


CASES = [(name, scale) for name in experiment_names() for scale in _scales(name)]


def _trained(step: Any) -> tuple[str, str] | None:
    """``(pooling, objective name)`` of the vector a pre-training step's objective trains; None where it
    trains none (MLM)."""
    config = step.config()
    options_class = OBJECTIVES.options(config.objective_name)
    if not options_class.trained_representation:
        return None
    options = from_dict(options_class, config.objective, "objective")
    # the objective's own rule for how the encoder it saves pools, read without building it (no encoder)
    return OBJECTIVES.get(config.objective_name).pooling.fget(SimpleNamespace(config=options)), config.objective_name


def _departures(experiment: Any) -> list[str]:
    """Where a condition fine-tunes or retrieves a pre-trained seed through another vector than the one its
    objective trained, without saying why (``pooling_departure``)."""
    found, seeds = [], {}  # condition → (pooling, objective) of the seed its last model descends from
    for condition in experiment.conditions.values():
        said = getattr(condition, "pooling_departure", None)
        seed = None
        for index, spec in enumerate(condition.steps):
            if spec.kind == "diagnose":  # it makes no model: the chain goes on from the one before
                continue
            where = f"{condition.name}.steps[{index}] ({spec.kind})"
            step = build_step(spec.kind, spec.settings, where)
            named = step.given_model()
            if named is not None:  # a step that names its model starts from it, not from the step before
                seed = seeds.get(condition_references(named)[0]) if condition_references(named) else None
            if spec.kind == "pretrain":
                seed = _trained(step)
            elif spec.kind == "finetune":
                pooling = step.config().pooling
                if seed is not None and pooling not in (None, seed[0]) and not said:
                    found.append(f"{experiment.name}: {where}: fine-tunes the {seed[1]} seed through {pooling}, "
                                 f"not the {seed[0]} its objective trained")
            elif spec.kind != "average":  # a weight average pools as what it averages; others make another
                seed = None
        seeds[condition.name] = seed
        if seed is not None and isinstance(condition.retrieve, dict) and not said:
            pooling = merge_settings(condition.retrieve).get("pooling")
            if pooling not in (None, seed[0]):
                found.append(f"{experiment.name}: {condition.name}.retrieve: scores the {seed[1]} seed through "
                             f"{pooling}, not the {seed[0]} it was trained through")
    return found


@pytest.mark.parametrize(("name", "scale"), CASES, ids=[f"{name}-{scale}" for name, scale in CASES])
def test_a_pretrained_condition_keeps_the_vector_its_objective_trained(name, scale):
    assert _departures(load_experiment(name, scale)) == []


def _written(tmp_path, condition: str, **extra: Any) -> Any:
    """``pretraining_objectives`` written elsewhere with ``extra`` keys on its condition ``condition``."""
    raw = yaml.safe_load(experiment_path("pretraining_objectives").read_text(encoding="utf-8"))
    raw["conditions"][condition].update(extra)
    path = tmp_path / "pretraining_objectives.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def _poolings(condition: Any) -> tuple[Any, Any]:
    """The pooling a condition's last (fine-tuning) step and its retrieval are set to."""
    fine_tuning = merge_settings(condition.steps[-1].settings).get("pooling")
    return fine_tuning, merge_settings(condition.retrieve)["pooling"]


def test_a_seed_is_fine_tuned_and_scored_as_trained_unless_the_file_says_why_not(tmp_path):
    """Contriever's seed (mean-pooled crops) takes its mean over the shared block's [CLS] (fine-tuning and
    retrieval alike), a [CLS]-trained seed keeps [CLS], and a condition that says why keeps its settings'."""
    experiment = load_experiment("pretraining_objectives")
    assert _poolings(experiment.conditions["contriever-s1"]) == ("mean", "mean")
    assert _poolings(experiment.conditions["seed-s1"]) == ("cls", "cls")
    why = "scored as the other seeds are, through [CLS]"
    departing = load_experiment(_written(tmp_path, "contriever-s{seed}", pooling_departure=why))
    contriever = departing.conditions["contriever-s1"]
    assert _poolings(contriever) == ("cls", "cls") and contriever.pooling_departure == why
    assert _departures(departing) == []  # said in words: no departure unexplained


@pytest.mark.parametrize("departure", ["", "  ", 3, ["why"]])
def test_a_pooling_departure_is_words(tmp_path, departure):
    with pytest.raises(DataError, match="says in words why"):
        load_experiment(_written(tmp_path, "contriever-s{seed}", pooling_departure=departure))


def test_a_pooling_departure_must_explain_a_departure(tmp_path):
    """On a condition that pools as its seed was trained, or has no seed (BM25), the note says nothing."""
    for condition in ("seed-s{seed}", "bm25"):
        with pytest.raises(ValueError, match="no departure to explain"):
            load_experiment(_written(tmp_path, condition, pooling_departure="it keeps [CLS]"))
