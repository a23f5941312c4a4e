"""Experiment files: what an experiment runs, at which scale, and what it reports.

An experiment is a YAML file shipped in this package, ``seedr/experiments/NAME.yaml`` (``seedr experiment
NAME``; ``seedr experiment --list`` lists them), or any YAML file given by its path::

    extends: [scifact, minilm_calibrated]   # shared files (shared/NAME.yaml) merged under its keys
                                        # (seedr.experiments.files)
    title: Domain-adaptive pre-training of MiniLM on SciFact
    description: |                      # Markdown, the report's preamble
      ...
    variables: {data: ../shared/data}   # {name} in any string below; `--set name=value` overrides
    setup:                              # steps run once, before the conditions; {setup.NAME} = their folder
      task: {kind: retrieval_task, ...}   # or prepare, open_qa, reqa_split (seedr.experiments.steps)
    tasks:                              # what every condition's final model is evaluated on
      scifact: {kind: qrels, corpus: ..., queries: ..., qrels: ..., metrics: [nDCG@10, R@100]}
    defaults:                           # settings of every step of a kind, before a condition's own
      pretrain: {train.max_steps: 300}
      finetune: {train.learning_rate: 2.0e-5}
      retrieve: {pooling: mean}
    conditions:                         # name → a chain of steps, then retrieval (dense, bm25, none,
      bm25: {retrieve: bm25}            # or the fusion of other conditions' runs: fusion.FusionCondition)
      hybrid: {retrieve: {fuse: [bm25, mlm], method: minmax, select_on: scifact}}
      none: {steps: [{finetune: {}}]}
      mlm: {steps: [{pretrain: {objective_name: mlm}}, {finetune: {}}]}
      mlm-1pct: {tasks: [reqa-1pct], steps: [...]}   # scored on these tasks only (default: every task)
      seed-mean: {steps: [...], pooling_departure: why}  # a seed keeps its trained pooling unless this says
      soup: {steps: [{finetune: {train.seed: 2}}, {average: {others: ["{conditions.mlm}"]}}]}
                                        # {conditions.NAME}: the model an earlier condition produced
    baseline: none                      # significance tests are against this condition (or group)
    groups: {mlm: [mlm-s*]}             # name → conditions (or patterns) whose per-query scores are
                                        # averaged (seeds)
    tolerance: {nDCG@10: 0.02}          # how far a re-run may move a figure (`--verify`)
    claims: []                          # the papers' claims this experiment checks (README table);
                                        # task "diagnostics": a metric of the conditions' diagnose steps;
                                        # each with its paper's figure, its protocol and its source
    case_study: {task: scifact, systems: [seed, mlm], queries: 5}   # optional: queries the two systems
                                        # disagree on, side by side (SEED-Encoder Table 5), in the report
    scales:                             # cpu (runs here), gpu (one GPU) and paper (validated only):
      cpu: {variables: {...}, defaults: {...}, skip: [mlm]}   # variables/defaults, and conditions not
      gpu: {variables: {seeds: [1, 2, 3]}}                    # run at that scale (names or patterns)
      paper: {variables: {...}, defaults: {...}}

Conditions may carry ``grid: {var: [values, ...]}`` (a list, or a variable holding one): one condition
per combination, ``{var}`` in the name and in every string replaced. Set-up steps that nothing refers to
(``--set`` may point a variable at a folder built elsewhere) are not run. Step settings use the keys of the stage's config dataclass
(``seedr.training.pretrain.PretrainConfig``, ``seedr.training.finetune.FinetuneConfig``; dotted keys
for nested fields) and are validated against them, so a misspelt or unknown option is an error that
names the file, the condition and the key before anything runs. A pretrain or finetune step's
``config: NAME`` puts a shipped recipe (``seedr/recipes/``) or a recipe file under its other settings, as
``--config`` does for the stage command (``config: sentence_encoder`` is seedr's calibrated fine-tuning
of MiniLM, which the experiments that fine-tune MiniLM name instead of copying).
"""

from __future__ import annotations

import fnmatch
import itertools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seedr.config.loading import merge_settings, parse_yaml
from seedr.experiments.checks import validate
from seedr.experiments.files import (
    EXPERIMENT_NAME,
    check_experiment_name,
    checkout,
    experiment_names,
    experiment_path,
    experiment_titles,
    experiments_dir,
    is_experiment_name,
    read_experiment_file,
    results_folder,
)
from seedr.experiments.goals import Goal, read_goals
from seedr.experiments.seed_pooling import carry_seed_pooling
from seedr.io import DataError

#: Scales an experiment file declares: ``cpu`` runs on a 2-core machine, ``gpu`` on one GPU for minutes
#: (a larger budget, more seeds), ``paper`` holds the papers' settings (validated only).
SCALES = ("cpu", "gpu", "paper")
#: Scales that ``seedr experiment`` runs (the others are validated only).
RUN_SCALES = ("cpu", "gpu")
#: Where a claim comes from: a paper, or seedr's own target (an issue's).
CLAIM_SOURCES = ("paper", "seedr")
#: ``{name}``, ``{setup.NAME}``, and ``{conditions.NAME}`` with any condition name (``seed-2``, ``plain@512``).
_PLACEHOLDER = re.compile(r"\{(conditions\.[^{}]+|[A-Za-z_][A-Za-z0-9_.]*)\}")
#: A task's, condition's or set-up step's name names folders and files of the work folder
#: (``steps/NAME-KEY``, ``retrieval/TASK-KEY``, ``plots/comparison-TASK.png``): one path component, not
#: hidden (so neither ``.`` nor ``..``), with no separator, whitespace or control character (any
#: other character may be: ``plain@512``, ``BM25+MiniLM→FT``).
_ENTRY_NAME = re.compile(r"[^.\s/\\\x00-\x1f\x7f][^\s/\\\x00-\x1f\x7f]*")
#: The longest such name, in UTF-8 bytes: a file name holds 255, and a key and a suffix follow it.
_ENTRY_NAME_BYTES = 160
#: The most conditions one grid may make: a grid multiplies, so that a line of lists could ask for 10⁹.
MAX_GRID_CONDITIONS = 1000


@dataclass
class Step:
    """One stage of a condition's chain: its kind (a name in ``seedr.experiments.steps.STEPS``) and settings."""

    kind: str
    settings: dict[str, Any]


@dataclass
class Condition:
    """A chain of steps whose last model is evaluated on every task (``retrieve: bm25``: BM25 instead;
    ``retrieve: none``: not evaluated, e.g. a chain that ends in a ``diagnose`` step), or on ``tasks``
    only: a model fine-tuned on one task's training side (ReQA's 1% split) is scored on that task's
    test side alone. ``pooling_departure``: why it fine-tunes or retrieves a seed pre-trained in its chain
    through another pooling than the seed's objective trained, which it otherwise keeps
    (``seedr.experiments.seed_pooling``)."""

    name: str
    steps: list[Step]
    retrieve: dict[str, Any] | str
    tasks: list[str] | None = None
    pooling_departure: str | None = None

    def evaluates(self, task: str) -> bool:
        """Whether this condition is scored on ``task``."""
        return self.retrieve != "none" and (self.tasks is None or task in self.tasks)


@dataclass
class Task:
    """An evaluation: ``qrels`` (IR metrics), ``reqa`` (SQuAD ReQA) or ``qa`` (answer coverage)."""

    name: str
    kind: str
    settings: dict[str, Any]
    metrics: list[str]


@dataclass
class Claim:
    """A claim of a paper, checked as ``condition`` vs ``against`` on one task and metric.

    ``expect``: ``higher`` (the condition beats ``against``), ``lower``, or ``similar`` (no significant
    difference). ``paper`` is the paper's own figure, as text with its table (typed from the paper).
    ``protocol``: how seedr measures it, in a few words (what was fine-tuned on what, evaluated on
    what), where it departs from the paper's. ``source``: ``paper`` (a paper's claim) or ``seedr`` (a
    target of seedr's own, e.g. from an issue: listed apart from the papers' claims in the README).
    ``target``: a figure ``condition`` is to reach on the metric (an issue's goal; at most it, for
    ``expect: lower``): the table says whether it did beside the verdict, which judges the comparison alone.
    ``requires_learning``: sanity conditions (a mapping or a list of them: ``{system, above, task, metric}``,
    task and metric defaulting to the claim's) that the verdict checks from the recorded figures: a system
    that is not above the one named (e.g. a pre-trained model below its own no-pre-training row) learned
    nothing, and the claim is "inconclusive" with that reason (``seedr.experiments.record.verdicts``).
    ``central``: the central claim of the papers this row bears on (a key of
    ``seedr.experiments.record.claims_page.CENTRAL_CLAIMS``), for the summary that opens the claims page.
    ``against`` may be a list of systems: the claim is then against the best of them on its task and
    metric, chosen from the recorded figures (an issue's "best label-free baseline", which differs per
    task). ``goal``: the goals of the file (``Goal``) this row counts towards, by their names.
    """

    claim: str
    condition: str
    against: str | list[str]
    task: str
    metric: str
    expect: str = "higher"
    paper: str = ""
    protocol: str = ""
    source: str = "paper"
    target: float | None = None
    requires_learning: list[dict[str, Any]] | dict[str, Any] | None = None
    central: str | None = None
    goal: str | list[str] | None = None

    @property
    def candidates(self) -> list[str]:
        """The systems ``against`` names: one, or those the best of which the claim is against."""
        return [self.against] if isinstance(self.against, str) else list(self.against)

    @property
    def goals(self) -> list[str]:
        """The names of the goals this row counts towards."""
        return [] if self.goal is None else [self.goal] if isinstance(self.goal, str) else list(self.goal)


@dataclass
class CaseStudy:
    """Queries on which two retrieving conditions disagree, side by side in the report (SEED-Encoder
    Table 5; ``seedr.evaluation.case_study``): ``queries`` wins of each system over the other on
    ``task``, a ``qrels`` task."""

    task: str
    systems: list[str]
    queries: int = 5


@dataclass
class Experiment:
    """An experiment file resolved for one scale and one set of variables."""

    name: str
    path: Path
    scale: str
    title: str
    description: str
    variables: dict[str, Any]
    setup: dict[str, Step]
    tasks: dict[str, Task]
    conditions: dict[str, Condition]
    baseline: str
    groups: dict[str, list[str]] = field(default_factory=dict)
    tolerance: dict[str, float] = field(default_factory=dict)
    claims: list[Claim] = field(default_factory=list)
    goals: dict[str, Goal] = field(default_factory=dict)
    test: str = "permutation"
    alpha: float = 0.05
    resamples: int = 10_000
    case_study: CaseStudy | None = None
    #: conditions of the file not run at this scale (``scales.SCALE.skip``), named in the report
    skipped: list[str] = field(default_factory=list)

    @property
    def grouped(self) -> set[str]:
        """The conditions shown as their group in tables and plots."""
        return {member for members in self.groups.values() for member in members}

    @property
    def checkout(self) -> Path | None:
        """The checkout this experiment file lies in (``checkout``), or None (an installed seedr)."""
        return checkout(self.path)

    @property
    def results_dir(self) -> Path:
        """Where the recorded report of this experiment lives (``seedr.experiments.files.results_folder``)."""
        return results_folder(self.path)


def substitute(value: Any, variables: dict[str, Any], where: str, strict: bool = True) -> Any:
    """Replace ``{name}`` in every string of ``value``; a string that is exactly ``{name}`` takes the
    variable's own value (a number stays a number, ``null`` stays ``None``). ``strict``: an unknown
    name is an error (else it is left for a later pass, as grids do: ``{fraction_{labels}}``)."""
    if isinstance(value, dict):
        return {substitute(k, variables, where, strict): substitute(v, variables, where, strict)
                for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, variables, where, strict) for v in value]
    if not isinstance(value, str):
        return value
    whole = _PLACEHOLDER.fullmatch(value)
    if whole:
        return _lookup(whole.group(1), variables, where, strict)

    def text(match: re.Match[str]) -> str:
        found = _lookup(match.group(1), variables, where, strict)
        return "" if found is None else str(found)

    return _PLACEHOLDER.sub(text, value)


def _lookup(name: str, variables: dict[str, Any], where: str, strict: bool) -> Any:
    if name not in variables:
        if "." in name or not strict:  # {setup.NAME} is resolved when the experiment runs
            return "{" + name + "}"
        raise ValueError(f"{where}: unknown variable {{{name}}}; defined: {', '.join(sorted(variables))}")
    return variables[name]


def _check_entry_name(path: Path, section: str, name: str) -> None:
    """A ``DataError`` naming the file and the entry when ``name`` (of a task, condition or set-up step)
    could not be one plain path component (``_ENTRY_NAME``): it names folders of the work folder."""
    if not _ENTRY_NAME.fullmatch(name) or len(name.encode("utf-8")) > _ENTRY_NAME_BYTES:
        raise DataError(path, f"a name in {section} names folders and files of the work folder, so it may not "
                              "be empty, start with '.', hold '/', '\\', whitespace or control characters, nor "
                              f"exceed {_ENTRY_NAME_BYTES} bytes", field=f"{section}.{name}")


def _step(entry: Any, where: str) -> Step:
    if not isinstance(entry, dict) or len(entry) != 1:
        raise ValueError(f"{where}: a step is a mapping of one stage to its settings, e.g. {{finetune: {{}}}}")
    ((kind, settings),) = entry.items()
    if settings is not None and not isinstance(settings, dict):
        raise ValueError(f"{where}: settings of {kind!r} must be a mapping")
    return Step(kind, dict(settings or {}))


def _expand_grid(name: str, body: dict[str, Any], variables: dict[str, Any],
                 where: str) -> list[tuple[str, dict[str, Any]]]:
    """One condition per combination of ``grid``'s values; a value list may be a variable (``{seeds}``), so
    that a scale sets how many seeds it runs."""
    grid = substitute(body.get("grid"), variables, where)
    body = {key: value for key, value in body.items() if key != "grid"}
    if grid is None:
        return [(name, body)]
    if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
        raise ValueError(f"{where}: grid must map names to non-empty lists of values")
    combinations = math.prod(len(values) for values in grid.values())
    if combinations > MAX_GRID_CONDITIONS:
        raise ValueError(f"{where}: grid makes {combinations} conditions, more than {MAX_GRID_CONDITIONS}")
    expanded = []
    for values in itertools.product(*grid.values()):
        binding = dict(zip(grid, values))
        expanded.append((substitute(name, binding, where), substitute(body, binding, where, strict=False)))
    return expanded


_SETUP_REFERENCE = re.compile(r"\{setup\.([^{}.]+)\}")


def _referenced_setup(setup: dict[str, Step], users: Any, path: Path) -> dict[str, Step]:
    """The set-up steps that ``users`` (the tasks and conditions) refer to as ``{setup.NAME}``, and those
    that these refer to in turn: a step whose folder a ``--set`` variable replaced is not run. A reference
    names a set-up step, and a set-up step reads only those before it (they run, and are resolved, in
    order)."""
    needed = set(_SETUP_REFERENCE.findall(repr(users)))
    unknown = sorted(needed - set(setup))
    if unknown:
        raise DataError(path, f"{{setup.{unknown[0]}}} names no set-up step; set-up steps: {', '.join(setup) or 'none'}")
    for position, (name, step) in enumerate(setup.items()):
        earlier = list(setup)[:position]
        for used in _SETUP_REFERENCE.findall(repr(step.settings)):
            if used not in earlier:
                raise DataError(path, f"setup.{name} reads {{setup.{used}}}, which is not a set-up step before "
                                      f"it ({', '.join(earlier) or 'none is'})", field=f"setup.{name}")
    pending = list(needed)
    while pending:
        step = setup.get(pending.pop())
        for name in _SETUP_REFERENCE.findall(repr(step.settings) if step else ""):
            if name not in needed:
                needed.add(name)
                pending.append(name)
    return {name: step for name, step in setup.items() if name in needed}


def _group_members(members: list[Any], conditions: dict[str, Any]) -> list[str]:
    """A group's conditions: names, or shell patterns (``mlm-s*``) matched against the conditions run at
    this scale, so that a group of seeds holds as many as the scale runs."""
    named = []
    for member in members:
        member = str(member)
        matched = sorted(fnmatch.filter(conditions, member)) if any(c in member for c in "*?[") else [member]
        named.extend(name for name in matched if name not in named)
    return named


def load_experiment(name: str | Path, scale: str = "cpu", overrides: list[str] | None = None) -> Experiment:
    """Read and resolve an experiment file for ``scale`` with ``key=value`` variable ``overrides``.

    Raises ``ValueError`` / ``DataError`` naming the file and the offending entry; step settings are
    checked against the stages' configs by ``seedr.experiments.checks.validate``.
    """

    path = experiment_path(name)
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; valid: {', '.join(SCALES)}")
    check_experiment_name(path)
    raw = read_experiment_file(path)  # with the shared files it extends merged under it
    for required in ("title", "tasks", "conditions", "baseline"):
        if required not in raw:
            raise DataError(path, f"missing {required!r}", field=required)
    scales = raw.get("scales") or {}
    if set(scales) - set(SCALES):
        raise DataError(path, f"unknown scale(s) {sorted(set(scales) - set(SCALES))}; valid: {SCALES}",
                        field="scales")
    scaled = scales.get(scale) or {}
    if set(scaled) - {"variables", "defaults", "skip"}:
        raise DataError(path, f"scales.{scale} takes variables, defaults and skip", field=f"scales.{scale}")

    variables = merge_settings(raw.get("variables") or {}, scaled.get("variables") or {})
    for override in overrides or []:
        key, sep, value = override.partition("=")
        if not sep:
            raise ValueError(f"override {override!r} is not of the form name=value")
        if key.strip() not in variables:
            raise ValueError(f"{path}: unknown variable {key.strip()!r} in --set; valid: "
                             f"{', '.join(sorted(variables))}")
        variables[key.strip()] = parse_yaml(value) if value.strip() else value
    where = str(path)
    defaults = substitute(merge_settings(raw.get("defaults") or {}, scaled.get("defaults") or {}), variables, where)

    setup = {}
    for step_name, entry in (raw.get("setup") or {}).items():
        _check_entry_name(path, "setup", str(step_name))
        entry = substitute(entry, variables, f"{where}: setup.{step_name}")
        if not isinstance(entry, dict) or "kind" not in entry:
            raise DataError(path, f"setup.{step_name} needs a kind", field=f"setup.{step_name}")
        kind = entry["kind"]
        setup[step_name] = Step(kind, merge_settings(defaults.get(kind) or {}, {k: v for k, v in entry.items()
                                                                         if k != "kind"}))

    tasks = {}
    for task_name, entry in (raw.get("tasks") or {}).items():
        _check_entry_name(path, "tasks", str(task_name))
        entry = substitute(entry, variables, f"{where}: tasks.{task_name}")
        if not isinstance(entry, dict) or "kind" not in entry or "metrics" not in entry:
            raise DataError(path, f"tasks.{task_name} needs a kind and metrics", field=f"tasks.{task_name}")
        tasks[task_name] = Task(task_name, entry["kind"],
                                {k: v for k, v in entry.items() if k not in ("kind", "metrics")},
                                list(entry["metrics"]))

    conditions: dict[str, Condition] = {}
    for raw_name, raw_body in (raw.get("conditions") or {}).items():
        if not isinstance(raw_body, dict):
            raise DataError(path, f"conditions.{raw_name} must be a mapping", field=f"conditions.{raw_name}")
        for name, body in _expand_grid(str(raw_name), raw_body, variables, f"{where}: conditions.{raw_name}"):
            body = substitute(body, variables, f"{where}: conditions.{name}")
            unknown = sorted(set(body) - {"steps", "retrieve", "tasks", "pooling_departure"})
            if unknown:
                raise DataError(path, f"conditions.{name}: unknown key(s) {unknown}; valid: steps, retrieve, "
                                "tasks, pooling_departure", field=f"conditions.{name}")
            departure = body.get("pooling_departure")
            if departure is not None and not (isinstance(departure, str) and departure.strip()):
                raise DataError(path, f"conditions.{name}.pooling_departure says in words why the condition "
                                f"pools otherwise than its seed was trained, got {departure!r}",
                                field=f"conditions.{name}.pooling_departure")
            only = body.get("tasks")
            if only is not None and (not isinstance(only, list) or set(map(str, only)) - set(tasks)):
                raise DataError(path, f"conditions.{name}.tasks must list tasks of this experiment "
                                f"({', '.join(tasks)}), got {only!r}", field=f"conditions.{name}.tasks")
            if name in conditions:
                raise DataError(path, f"condition {name!r} is defined twice", field=f"conditions.{name}")
            if any(character.isspace() for character in name):  # checked here, not after an hour of training
                raise DataError(path, f"condition {name!r}: a condition's name tags its TREC runs, so it may not "
                                "hold spaces", field=f"conditions.{name}")
            _check_entry_name(path, "conditions", name)
            steps = [_step(entry, f"{where}: conditions.{name}.steps[{i}]")
                     for i, entry in enumerate(body.get("steps") or [])]
            steps = [Step(step.kind, merge_settings(defaults.get(step.kind) or {}, step.settings)) for step in steps]
            retrieve = body.get("retrieve", {})
            if not (retrieve in ("bm25", "none") or retrieve is None or isinstance(retrieve, dict)):
                raise DataError(path, f"conditions.{name}.retrieve is bm25, none or a mapping of retrieval "
                                f"settings, got {retrieve!r}", field=f"conditions.{name}.retrieve")
            if retrieve not in ("bm25", "none") and not (isinstance(retrieve, dict) and "fuse" in retrieve):
                retrieve = merge_settings(defaults.get("retrieve") or {}, retrieve or {})
            only = None if only is None else [str(task) for task in only]
            conditions[name] = Condition(name, steps, retrieve, only, departure)

    patterns = [str(name) for name in scaled.get("skip") or []]  # names, or patterns such as condenser-s*
    skipped = _group_members(patterns, conditions)
    unknown = sorted(set(skipped) - set(conditions)) + [p for p in patterns if not _group_members([p], conditions)]
    if unknown:
        raise DataError(path, f"scales.{scale}.skip: unknown condition(s) {unknown}; defined: "
                        f"{', '.join(conditions)}", field=f"scales.{scale}.skip")
    if str(raw["baseline"]) in skipped:
        raise DataError(path, f"scales.{scale}.skip: the baseline {raw['baseline']!r} cannot be skipped",
                        field=f"scales.{scale}.skip")
    # a claim, group or case study naming a skipped condition is then an error of validate(): the file
    # must say what its scale can check
    conditions = carry_seed_pooling({name: condition for name, condition in conditions.items()
                                     if name not in skipped}, where)
    setup = _referenced_setup(setup, [tasks, conditions], path)

    groups = {}
    for group, members in (raw.get("groups") or {}).items():
        named = [member for member in _group_members(members, conditions) if member not in skipped]
        if not named and _group_members(members, dict.fromkeys(skipped)):
            continue  # every member is skipped at this scale: so is the group (a claim naming it is an error)
        if not named:
            raise DataError(path, f"groups.{group} matches no condition", field=f"groups.{group}")
        groups[str(group)] = named
    claims = []
    for index, entry in enumerate(raw.get("claims") or []):
        try:
            claims.append(Claim(**substitute(entry, variables, where)))
        except TypeError as error:
            raise DataError(path, f"claims[{index}]: {error}", field="claims") from None
        if claims[-1].source not in CLAIM_SOURCES:
            raise DataError(path, f"claims[{index}]: source must be one of {', '.join(CLAIM_SOURCES)}, not "
                            f"{claims[-1].source!r}", field="claims")
    goals = read_goals(raw.get("goals") or {}, claims, lambda goal: substitute(goal, variables, where), path)
    case_study = None
    if raw.get("case_study") is not None:
        entry = substitute(raw["case_study"], variables, where)
        if not isinstance(entry, dict):
            raise DataError(path, "case_study must be a mapping, e.g. {task: scifact, systems: [seed, mlm], "
                            "queries: 5}", field="case_study")
        try:
            case_study = CaseStudy(**entry)
        except TypeError as error:
            raise DataError(path, f"case_study: {error}", field="case_study") from None
    experiment = Experiment(
        name=path.stem, path=path, scale=scale, title=str(raw["title"]),
        description=str(substitute(raw.get("description", ""), variables, where)), variables=variables,
        setup=setup, tasks=tasks, conditions=conditions, baseline=str(raw["baseline"]), groups=groups,
        # metric names may hold variables, as claims' do (e.g. "random_pair_cosine@{longest}")
        tolerance={str(substitute(str(k), variables, f"{where}: tolerance")): float(v)
                   for k, v in (raw.get("tolerance") or {}).items()}, claims=claims, goals=goals,
        test=raw.get("test", "permutation"), alpha=float(raw.get("alpha", 0.05)),
        resamples=int(raw.get("resamples", 10_000)), case_study=case_study, skipped=skipped)
    validate(experiment)
    return experiment


__all__ = ["CLAIM_SOURCES", "EXPERIMENT_NAME", "MAX_GRID_CONDITIONS", "RUN_SCALES", "SCALES", "CaseStudy", "Claim",
           "Condition", "Experiment", "Goal", "Step", "Task", "check_experiment_name", "checkout",
           "experiment_names", "experiment_path", "experiment_titles", "experiments_dir",
           "is_experiment_name", "load_experiment", "substitute"]
