"""Checking a resolved experiment before anything runs: every step's settings against its stage's
config, tasks, conditions and their references, groups, the baseline, claims, the case study, and
that every model named can be loaded here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seedr.config.loading import from_dict, merge_settings
from seedr.experiments.steps.base import build_step, condition_references
from seedr.experiments.fusion import FusionCondition, fuses
from seedr.experiments.mind import MindNewsTask  # noqa: F401 (registers the task kind ``mind``)
from seedr.experiments.tasks import TASKS, RetrieveConfig
from seedr.modeling.folders import BUILTIN_MODELS
from seedr.pipeline.evaluate import left_out

#: Documents a query of every BM25 run of an experiment (its BM25 conditions' and each task's reference).
BM25_DEPTH = 100

#: Settings that name a model or tokenizer to load, where an experiment's steps and retrievals take one.
MODEL_SETTINGS = ("model", "model.init", "model.tokenizer", "negative_options.model")


def _flatten(settings: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested settings as dotted keys (``{"model": {"init": x}}`` → ``{"model.init": x}``)."""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _check_models_reachable(settings: dict[str, Any], where: str) -> None:
    """Refuse a model or tokenizer that this install cannot reach — neither a built-in name (``minilm``,
    ``seedr-base``) nor an existing folder — when the file is read, at every scale (a paper scale is only
    validated, so this is where it learns that ``models/x`` exists only in some checkout). Placeholders
    (``{conditions.X}``) and a step's own chain are filled at run time and not checked here."""
    for key, value in _flatten(merge_settings(settings)).items():
        if key not in MODEL_SETTINGS or not isinstance(value, str) or "{" in value or value in BUILTIN_MODELS:
            continue
        if not Path(value).expanduser().is_dir():
            raise ValueError(f"{where}: {key}: {value!r} is neither a built-in model "
                             f"({', '.join(sorted(BUILTIN_MODELS))}) nor a folder here")


def validate(experiment: Any) -> None:
    """Check every step, retrieval and task of a resolved experiment; raise on the first problem."""
    where = str(experiment.path)
    for name, step in experiment.setup.items():
        build_step(step.kind, step.settings, f"{where}: setup.{name}").validate()
    for name, task in experiment.tasks.items():
        TASKS.get(task.kind)(name, task.settings, task.metrics, f"{where}: tasks.{name}").validate()
    earlier: list[str] = []
    for condition in experiment.conditions.values():
        for index, step in enumerate(condition.steps):
            at = f"{where}: conditions.{condition.name}.steps[{index}]"
            build_step(step.kind, step.settings, at).validate()
            for name in condition_references(step.settings):  # conditions run in the file's order
                other = experiment.conditions.get(name)
                if name not in earlier or other is None or not any(
                        build_step(s.kind, s.settings, at).product(Path()) for s in other.steps):
                    raise ValueError(f"{at}: {{conditions.{name}}} is not a condition defined before "
                                     f"{condition.name!r} whose steps produce a model")
        earlier.append(condition.name)
        if fuses(condition.retrieve):
            _validate_fusion(experiment, condition, from_dict(FusionCondition, condition.retrieve,
                                                              f"{where}: conditions.{condition.name}.retrieve"))
        elif condition.retrieve not in ("bm25", "none"):
            retrieve = from_dict(RetrieveConfig, merge_settings(condition.retrieve),
                                 f"{where}: conditions.{condition.name}.retrieve")
            if not condition.steps and not retrieve.model:
                raise ValueError(f"{where}: conditions.{condition.name} has no steps: its retrieve needs a model "
                                 "(or retrieve: bm25)")
    _check_depths(experiment)
    retrieving = {name for name, condition in experiment.conditions.items() if condition.retrieve != "none"}
    if retrieving and not experiment.tasks:
        raise ValueError(f"{where}: conditions retrieve but there are no tasks to evaluate them on")
    diagnosing = {name for name, condition in experiment.conditions.items()
                  if any(step.kind == "diagnose" for step in condition.steps)}
    systems = retrieving | set(experiment.groups)

    def evaluated_on(system: str) -> set[str]:
        """The tasks a condition or group is scored on (a group: those all its members share)."""
        members = experiment.groups.get(system, [system])
        return {task for task in experiment.tasks
                if all(experiment.conditions[member].evaluates(task) for member in members)}

    for group, members in experiment.groups.items():
        missing = sorted(set(members) - retrieving)
        if missing:
            raise ValueError(f"{where}: groups.{group} names unknown condition(s) {missing}")
        if len({frozenset(evaluated_on(member)) for member in members}) > 1:
            raise ValueError(f"{where}: groups.{group}: its members are not scored on the same tasks")
    if retrieving and experiment.baseline not in systems:
        raise ValueError(f"{where}: baseline {experiment.baseline!r} is not a retrieving condition or group")
    if retrieving and evaluated_on(experiment.baseline) != set(experiment.tasks):
        raise ValueError(f"{where}: the baseline {experiment.baseline!r} must be scored on every task (its "
                         "tasks: leave it out)")
    for index, claim in enumerate(experiment.claims):
        known = diagnosing if claim.task == "diagnostics" else systems
        for system in (claim.condition, *claim.candidates):
            if system not in known:
                raise ValueError(f"{where}: claims[{index}] names {system!r}, not a condition or group that "
                                 f"{'ends in diagnose' if claim.task == 'diagnostics' else 'retrieves'}")
        if claim.task == "diagnostics":
            continue
        if claim.task not in experiment.tasks or claim.metric not in experiment.tasks[claim.task].metrics:
            raise ValueError(f"{where}: claims[{index}]: task {claim.task!r} does not report {claim.metric!r}")
        for system in (claim.condition, *claim.candidates):
            if claim.task not in evaluated_on(system):
                raise ValueError(f"{where}: claims[{index}]: {system!r} is not scored on {claim.task!r} (its tasks)")
        if claim.expect not in ("higher", "lower", "similar"):
            raise ValueError(f"{where}: claims[{index}].expect must be higher, lower or similar")
        _check_budget_words(experiment, claim, f"{where}: claims[{index}]")
    if experiment.case_study is not None:
        study, field = experiment.case_study, f"{where}: case_study"
        if study.task not in experiment.tasks or experiment.tasks[study.task].kind != "qrels":
            qrels_tasks = sorted(name for name, task in experiment.tasks.items() if task.kind == "qrels")
            raise ValueError(f"{field}: task {study.task!r} is not a qrels task of this experiment; "
                             f"qrels tasks: {qrels_tasks}")
        if not isinstance(study.systems, list) or len(set(study.systems)) != 2 or len(study.systems) != 2:
            raise ValueError(f"{field}: systems must name two different conditions, got {study.systems!r}")
        unknown = [system for system in study.systems if system not in retrieving]
        if unknown:  # a group has no single run to show a top document of
            raise ValueError(f"{field}: {unknown} not a retrieving condition; "
                             f"retrieving: {sorted(retrieving)}")
        if not isinstance(study.queries, int) or study.queries < 1:
            raise ValueError(f"{field}: queries must be a positive number of queries, got {study.queries!r}")
    if experiment.test not in ("permutation", "ttest"):
        raise ValueError(f"{where}: test must be permutation or ttest")
    # last: the structure's errors come first; then what this install can load
    for condition in experiment.conditions.values():
        for index, step in enumerate(condition.steps):
            _check_models_reachable(step.settings, f"{where}: conditions.{condition.name}.steps[{index}]")
        if isinstance(condition.retrieve, dict):
            _check_models_reachable(condition.retrieve, f"{where}: conditions.{condition.name}.retrieve")


#: How a claim may say its pre-trainings were matched, and the budget that makes it true: "equal
#: compute" is said only of runs at equal FLOPs (``PretrainConfig.flops_budget``), never of equal steps.
BUDGET_WORDS = {"equal steps": "steps", "equal flops": "flops", "equal compute": "flops"}


def pretraining_budgets(experiment: Any, system: str) -> set[tuple[str, float]]:
    """How the pre-training of ``system`` (a condition, or each member of a group) was sized: for each
    member's chain, ``("flops", budget)`` or ``("steps", max_steps)`` summed over its pre-training steps
    (coCondenser warm-started from a Condenser run spends the two runs' budgets together); a chain that
    mixes the two kinds gives one entry of each."""
    budgets = set()
    for member in experiment.groups.get(system, [system]):
        chain: dict[str, float] = {}
        for index, step in enumerate(experiment.conditions[member].steps):
            if step.kind == "pretrain":
                config = build_step(step.kind, step.settings, f"{experiment.path}: {member}[{index}]").config()
                kind, amount = (("flops", config.flops_budget) if config.flops_budget is not None
                                else ("steps", config.train.max_steps))
                chain[kind] = chain.get(kind, 0.0) + amount
        budgets |= set(chain.items())
    return budgets


def _check_budget_words(experiment: Any, claim: Any, where: str) -> None:
    """A claim that says "equal steps", "equal FLOPs" or "equal compute" (in its words or protocol) compares
    pre-trainings that were: each side pre-trains, and every pre-training of both sides has the one
    budget of that kind. So that no claim reads "equal compute" of runs at equal steps (a SEED-Encoder
    step costs about 2.2 MLM steps)."""
    text = f"{claim.claim} {claim.protocol}".lower()
    for words, kind in BUDGET_WORDS.items():
        if words not in text:
            continue
        sides = [pretraining_budgets(experiment, system) for system in (claim.condition, *claim.candidates)]
        budgets = set().union(*sides)
        if not all(sides) or len(budgets) != 1 or next(iter(budgets))[0] != kind:
            found = ", ".join(f"{budget:g} {unit}" for unit, budget in sorted(budgets)) or "no pre-training"
            raise ValueError(f"{where} says {words!r}, but {claim.condition!r} and {claim.against!r} pre-train at "
                             f"{found}: say what the runs were matched on (equal {kind} needs "
                             f"{'flops_budget' if kind == 'flops' else 'train.max_steps'} alike on both sides)")


def _depth(experiment: Any, condition: Any) -> int:
    """Documents a query the runs of ``condition`` rank: BM25's, its ``retrieve.k``, or a fusion's ``k`` (else
    its deepest component's, as ``seedr fuse`` cuts it)."""
    if condition.retrieve == "bm25":
        return BM25_DEPTH
    where = f"{experiment.path}: conditions.{condition.name}.retrieve"
    if fuses(condition.retrieve):
        fusion = from_dict(FusionCondition, condition.retrieve, where)
        return fusion.k or max(_depth(experiment, experiment.conditions[part]) for part in fusion.fuse)
    return from_dict(RetrieveConfig, merge_settings(condition.retrieve), where).k


def _check_depths(experiment: Any) -> None:
    """Refuse a task's metric deeper than the runs scored on it rank (R@1000 of runs 100 deep would be their
    R@100), by ``seedr evaluate``'s rule (``seedr.pipeline.evaluate.left_out``), which there leaves it out
    with a note: in an experiment's record, a figure missing would be a claim unjudged, so it is refused."""
    for name, spec in experiment.tasks.items():
        where = f"{experiment.path}: tasks.{name}"
        depths = [_depth(experiment, condition) for condition in experiment.conditions.values()
                  if condition.retrieve != "none" and condition.evaluates(name)]
        task = TASKS.get(spec.kind)(name, spec.settings, spec.metrics, where)
        try:
            too_deep, note = left_out(task.evaluation, min([BM25_DEPTH, *depths]))  # with its reference BM25
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
        if too_deep:
            raise ValueError(f"{where}: {note}")


def _validate_fusion(experiment: Any, condition: Any, config: Any) -> None:
    """A fusing condition has no steps, fuses retrieving conditions defined before it that do not fuse,
    and selects on a task of the experiment by one of its metrics."""
    where = f"{experiment.path}: conditions.{condition.name}.retrieve"
    if condition.steps:
        raise ValueError(f"{where}: a condition that fuses others' runs has no steps")
    earlier = list(experiment.conditions)[:list(experiment.conditions).index(condition.name)]
    for part in config.fuse:
        other = experiment.conditions.get(part)
        if other is None or other.retrieve == "none" or fuses(other.retrieve):
            raise ValueError(f"{where}: fuse names {part!r}, not a retrieving condition that does not fuse "
                             "others itself")
        if any(condition.evaluates(task) and not other.evaluates(task) for task in experiment.tasks):
            raise ValueError(f"{where}: fuse names {part!r}, which is not scored on every task that "
                             f"{condition.name!r} is")
        if part not in earlier:  # conditions run in the file's order: its runs must be there first
            raise ValueError(f"{where}: fuse names {part!r}, defined after {condition.name!r}: define the "
                             "conditions a fusion fuses before it")
    if config.select_on is not None:
        task = experiment.tasks.get(config.select_on)
        if task is None:
            raise ValueError(f"{where}: select_on {config.select_on!r} is not a task of this experiment; tasks: "
                             f"{', '.join(experiment.tasks)}")
        if config.metric is not None and config.metric not in task.metrics:
            raise ValueError(f"{where}: task {config.select_on!r} does not report {config.metric!r}")
        for part in config.choosers:  # their runs on select_on choose: they must have some
            other = experiment.conditions.get(part)
            if other is None or part not in earlier or fuses(other.retrieve) or not other.evaluates(config.select_on):
                raise ValueError(f"{where}: {part!r} cannot choose the fusion: it is not a retrieving condition "
                                 f"defined before {condition.name!r}, fusing none itself and scored on "
                                 f"{config.select_on!r}")

