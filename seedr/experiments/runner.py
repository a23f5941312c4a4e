"""Run an experiment: every condition's chain of steps, retrieval on every task, paired significance
tests, one report and a results file (``seedr experiment``).

Layout of the work folder (``runs/experiments`` unless ``--out`` says otherwise)::

    OUT/steps/<kind>-<key>/        one folder per distinct step (shared by the conditions — and the
                                   experiments — whose settings resolve alike from the same model);
                                   step.json once finished
    OUT/retrieval/<task>-<key>/    embeddings and run.trec of one model (or BM25) on one task
    OUT/reports/NAME/              report.md, report.html, plots/*.png, results.json, config.yaml, run.json

A step's key hashes its kind and its resolved configuration (``ExperimentStep.resolved``: the stage's
config with its defaults, the model it starts from included), a retrieval's its task, model and
settings, and both the code that computes them (``seedr.provenance.code_fingerprint``: seedr's version and
a hash of the syntax trees of the code the step runs — ``ExperimentStep.code``, ``retrieval_code``). So a finished step is reused by a re-run (resuming an interrupted experiment
redoes only what did not finish), by every condition that shares it and by other experiments run into
the same work folder (the from-scratch pre-trainings of ``few_shot`` and ``diagnostics`` are those of
``from_scratch``), whichever spelling their settings use (``train.warmup_ratio: 0.1`` or the
``warmup_steps`` it comes to); while a changed setting, a changed default or a fixed bug in seedr gives
a new folder instead of reusing what the old code computed. The report says which steps and retrievals
were reused, and which code computed them."""

from __future__ import annotations

import functools
import hashlib
import json
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from seedr.config.loading import from_dict, identity, merge_settings
from seedr.data.runs import read_trec_run, write_trec_run
from seedr.experiments.checks import BM25_DEPTH
from seedr.experiments.eta import Progress, UnitWork, Work
from seedr.experiments.fusion import FUSION_CODE, FusionCondition, fuses
from seedr.experiments.record.figures import figures, references, seed_spread, with_seed_sd
from seedr.experiments.record.pretraining import pretraining_record
from seedr.experiments.record.preamble import machine, report_preamble
from seedr.experiments.record.report import case_study_results, report_plots
from seedr.experiments.record.results_markdown import results_markdown
from seedr.experiments.record.verdicts import claim_results, collapsed_conditions, goal_results
from seedr.experiments.scoring import compare
from seedr.experiments.sizing import EncodedTokens, made_shape, step_work
from seedr.experiments.spec import Condition, Experiment, substitute
from seedr.experiments.steps import ExperimentStep, build_step, condition_references, record_step
from seedr.experiments.tasks import TASKS, RetrievalTask, RetrieveConfig
from seedr.hardware import default_device, encoding_dtype, matmul_rate
from seedr.io import atomic_write, json_text, output_lock
from seedr.modeling.folders import encoder_shape
from seedr.provenance import code_fingerprint, record_run, sources_as_first_read
from seedr.reporting.report import render_report

if TYPE_CHECKING:
    from seedr.modeling.folders import EncoderShape

#: Every task's BM25 run, the reference of its floor (``seedr.experiments.record.figures.references``): the
#: folder of an experiment's BM25 condition on that task when it has one (same key), else its own.
_BM25_REFERENCE = Condition("bm25-reference", [], "bm25")  # its name is the run file's tag


def _key(out_dir: Path, code: list[str], *parts: Any) -> str:
    """A short hash of ``parts`` and of the code that computes them (``code_fingerprint`` of ``code``);
    paths inside the work folder count relative to it, so that a work folder keeps its keys when moved or
    copied."""
    text = json.dumps([parts, code_fingerprint(code)], sort_keys=True, default=str).replace(str(out_dir), "$OUT")
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def retrieval_code(task: RetrievalTask, fusion: FusionCondition | None) -> list[str]:
    """The code a retrieval on ``task`` runs (its task class, which retrieves and scores), and fusion's
    when it fuses; a retrieval's key rests on it as a step's on ``ExperimentStep.code``."""
    return [f"{type(task).__module__}:{type(task).__qualname__}"] + (FUSION_CODE if fusion else [])


def step_folder(out_dir: Path, name: str, step: ExperimentStep) -> Path:
    """Where ``step`` runs in the work folder ``out_dir``: ``steps/<name>-<key>`` (``name``: the kind, or
    a set-up step's name), keyed on its kind, its resolved configuration and the code."""
    return out_dir / "steps" / f"{name}-{_key(out_dir, step.code(), step.kind, step.resolved())}"


@dataclass
class Outcome:
    """What a run of an experiment did and found."""

    report: Path
    results: dict[str, Any]
    executed: list[str] = field(default_factory=list)  # step / retrieval folders computed by this run
    reused: list[str] = field(default_factory=list)  # finished by an earlier run, read back


class _Runner:
    def __init__(self, experiment: Experiment, out_dir: Path, console: Console) -> None:
        self.experiment, self.out_dir, self.console = experiment, out_dir, console
        self.outcome_executed: list[str] = []
        self.outcome_reused: list[str] = []
        self.setup_folders: dict[str, str] = {}
        self.tasks: dict[str, RetrievalTask] = {}  # set once built: a fusion selects on one of them
        self.fusions: dict[str, tuple[Any, Any]] = {}  # condition → the (Fusion, Selection) it chose

    # ---------------------------------------------------------------- planning
    def resolve(self, value: Any) -> Any:
        """``{setup.NAME}`` → that set-up step's folder; ``{conditions.NAME}`` → the model that condition's
        steps produced (an earlier condition: ``validate`` checks it), e.g. a member of a weight average."""
        names = {f"setup.{name}": folder for name, folder in self.setup_folders.items()}
        for name in condition_references(value):
            names[f"conditions.{name}"] = self.condition_model(name)
        return substitute(value, names, str(self.experiment.path))

    def condition_model(self, name: str) -> str:
        """The product of the last step of condition ``name`` that produces a model."""
        products = [step.product(folder) for step, folder in self.chain(self.experiment.conditions[name])]
        return [product for product in products if product][-1]

    def chain(self, condition: Any) -> list[tuple[Any, Path]]:
        """The condition's steps, each starting from the previous product, with their folders."""
        chained, model = [], None
        for index, spec in enumerate(condition.steps):
            where = f"{self.experiment.path}: conditions.{condition.name}.steps[{index}]"
            step = build_step(spec.kind, self.resolve(spec.settings), where).with_model(model)
            folder = step_folder(self.out_dir, spec.kind, step)
            chained.append((step, folder))
            model = step.product(folder) or model
        return chained

    def final_model(self, condition: Any, chained: list[tuple[Any, Path]]) -> str | None:
        retrieve = self.retrieve_config(condition)
        if retrieve is None:
            return None
        if retrieve.model:
            return retrieve.model
        products = [step.product(folder) for step, folder in chained if step.product(folder)]
        return products[-1]

    def retrieve_config(self, condition: Any) -> RetrieveConfig | None:
        if condition.retrieve in ("bm25", "none") or fuses(condition.retrieve):
            return None
        return from_dict(RetrieveConfig, merge_settings(self.resolve(condition.retrieve)),
                         f"{self.experiment.path}: conditions.{condition.name}.retrieve")

    def fuse_config(self, condition: Any) -> FusionCondition | None:
        if not fuses(condition.retrieve):
            return None
        return from_dict(FusionCondition, self.resolve(condition.retrieve),
                         f"{self.experiment.path}: conditions.{condition.name}.retrieve")

    def component_folders(self, task: RetrievalTask, fusion: FusionCondition,
                          choosers: bool = False) -> list[Path]:
        """The retrieval folders, on ``task``, of the conditions a fusion fuses (or, with ``choosers``,
        of those whose runs choose it)."""
        conditions = [self.experiment.conditions[part] for part in (fusion.choosers if choosers else fusion.fuse)]
        return [self.retrieval_folder(task, condition, self.final_model(condition, self.chain(condition)))
                for condition in conditions]

    def retrieval_folder(self, task: RetrievalTask, condition: Any, model: str | None) -> Path:
        retrieve, fusion = self.retrieve_config(condition), self.fuse_config(condition)
        what = ("bm25",) if retrieve is None else (model, identity(retrieve))
        if fusion is not None:  # its components' runs, and the task it selects on
            selects_on = self.experiment.tasks[fusion.select_on] if fusion.select_on else None
            parts = [folder.name for folder in self.component_folders(task, fusion)]
            what = ("fuse", identity(fusion), parts, self.resolve(identity(selects_on)) if selects_on else None)
            if fusion.select_with is not None:  # the choosers' runs on select_on, not this task's components
                choosers = self.component_folders(self.tasks[fusion.select_on], fusion, choosers=True)
                what += ([folder.name for folder in choosers],)
        task_settings = (type(task).__name__, identity(task.config), task.metrics)
        key = _key(self.out_dir, retrieval_code(task, fusion), task_settings, *what)
        return self.out_dir / "retrieval" / f"{task.name}-{key}"

    # ---------------------------------------------------------------- running
    def run_step(self, step: Any, folder: Path, progress: Progress, label: str) -> None:
        if (folder / "step.json").exists():
            self.outcome_reused.append(str(folder))
            progress.finished(folder, f"{label} {folder.name}", None)
            return
        with output_lock(folder):  # another experiment in this work folder may be running the same step
            if (folder / "step.json").exists():  # finished by it meanwhile
                self.outcome_reused.append(str(folder))
                progress.finished(folder, f"{label} {folder.name}", None)
                return
            self.console.rule(f"{label} → {folder}")
            started = time.perf_counter()
            summary = step.run(folder)
            seconds = time.perf_counter() - started
            record_step(folder, step, summary, seconds, code_fingerprint(step.code()))
        self.outcome_executed.append(str(folder))
        progress.finished(folder, label, seconds)

    def run_retrieval(self, task: RetrievalTask, condition: Any, model: str | None, folder: Path,
                      progress: Progress) -> None:
        label = f"{condition.name}: retrieve {task.name}"
        if not (folder / "run.trec").exists():
            with output_lock(folder):
                if not (folder / "run.trec").exists():
                    self._retrieve(task, condition, model, folder, progress, label)
                    return
        self.outcome_reused.append(str(folder))
        progress.finished(folder, label, None)

    def _retrieve(self, task: RetrievalTask, condition: Any, model: str | None, folder: Path,
                  progress: Progress, label: str) -> None:
        self.console.rule(f"{label} → {folder}")
        started = time.perf_counter()
        retrieve, fused = self.retrieve_config(condition), {}
        if fuses(condition.retrieve):
            run, fused = self.fused_run(task, condition)
        elif retrieve is None:
            run = task.bm25_run(BM25_DEPTH)
        else:
            assert model is not None
            run = task.dense_run(model, retrieve, folder)
        seconds = time.perf_counter() - started
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_write(folder / "settings.json") as stream:
            json.dump({"model": model, "retrieve": condition.retrieve, "task": task.name, "seconds": seconds,
                       "code": code_fingerprint(retrieval_code(task, self.fuse_config(condition))), **fused},
                      stream, indent=2)
        write_trec_run(folder / "run.trec", run, tag=condition.name)
        self.outcome_executed.append(str(folder))
        progress.finished(folder, label, seconds)

    def fused_run(self, task: RetrievalTask, condition: Any) -> tuple[Any, dict[str, Any]]:
        """A fusing condition's run on ``task`` (its components' runs are done: they come first in the
        file) and what it chose, for ``settings.json``; the choice is made once, on ``select_on``."""

        fusion = self.fuse_config(condition)
        assert fusion is not None
        if condition.name not in self.fusions:
            selects_on = self.tasks[fusion.select_on] if fusion.select_on else None
            dev_runs = None if selects_on is None else [
                read_trec_run(folder / "run.trec") for folder in self.component_folders(selects_on, fusion, choosers=True)]
            self.fusions[condition.name] = fusion.choose(dev_runs, selects_on)
        chosen, selection = self.fusions[condition.name]
        runs = [read_trec_run(folder / "run.trec") for folder in self.component_folders(task, fusion)]
        chosen_on = f", {selection.metric} {selection.value:.4f} on {fusion.select_on}" if selection else ""
        self.console.print(f"{condition.name}: {chosen.describe()}{chosen_on}", highlight=False)
        return fusion.apply(runs, chosen), {"fusion": chosen.to_dict(),
                                            "selection": selection.to_dict() if selection else None}


def experiment_scores(experiment: Experiment, out_dir: str | Path) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """The per-query scores of every system of ``experiment`` on every task, from the finished runs in the
    work folder ``out_dir`` (``run_scores``; nothing runs): what a seed run apart brings back for
    ``seedr.experiments.record.combine``."""
    runner = _Runner(experiment, Path(out_dir), Console(quiet=True))
    return run_scores(_plan(experiment, runner))


def planned_work(experiment: Experiment, out_dir: str | Path) -> dict[Path, Work]:
    """Every unit ``experiment`` would compute in the work folder ``out_dir``, each with its size of work
    asked when needed (``_Plan.work``): the ETA's sizing, for a caller that plans without running (the
    GPU pack sizes a lease from it)."""
    runner = _Runner(experiment, Path(out_dir), Console(quiet=True))
    return _plan(experiment, runner).work(experiment, runner)


def planned_chains(experiment: Experiment, out_dir: str | Path
                   ) -> dict[str, list[tuple[ExperimentStep, Path]]]:
    """Each condition's chain of steps and the folders they would have in the work folder ``out_dir``,
    planned without running anything (a backfill of a record re-derives what its steps were)."""
    runner = _Runner(experiment, Path(out_dir), Console(quiet=True))
    return _plan(experiment, runner).chains


def run_experiment(experiment: Experiment, out_dir: str | Path, console: Console | None = None,
                   command: str | None = None) -> Outcome:
    """Run ``experiment`` into the work folder ``out_dir`` (finished steps and retrievals are reused);
    evaluate, test, and write ``out_dir/reports/NAME`` (``report.md``, ``report.html``, ``plots/``,
    ``results.json``). The report folder is locked for the run (``seedr.io.output_lock``), and
    each step and retrieval folder while it is computed."""
    out_dir = Path(out_dir)
    # two runs of one experiment: one report folder; all its units keyed on one version of the code
    with output_lock(out_dir / "reports" / experiment.name), sources_as_first_read():
        return _run_experiment(experiment, out_dir, console or Console(stderr=True),
                               command or " ".join(["seedr", *sys.argv[1:]]))


@dataclass
class _Plan:
    """What an experiment will compute, and where: every set-up step, every condition's chain of steps
    and the model it ends in, and a retrieval folder per (task, condition) it is scored on, with each
    task's reference BM25 (the floor's)."""

    setup: dict[str, tuple[ExperimentStep, Path]]
    chains: dict[str, list[tuple[ExperimentStep, Path]]]
    tasks: dict[str, RetrievalTask]
    models: dict[str, str | None]
    retrievals: dict[tuple[str, str], Path]
    bm25_system: str | None
    bm25_folders: dict[str, Path]

    @property
    def units(self) -> list[Path]:
        """Every step and retrieval folder, once each, in the order they run."""
        return [*(folder for _, folder in self.setup.values()),
                *dict.fromkeys(folder for chained in self.chains.values() for _, folder in chained),
                *dict.fromkeys([*self.retrievals.values(), *self.bm25_folders.values()])]

    def work(self, experiment: Experiment, runner: _Runner) -> dict[Path, Work]:
        """Every unit's kind and size of work (for the ETA: ``seedr.experiments.sizing``), each asked when
        needed: a size that depends on what an earlier unit makes (training labels, a corpus) is known once
        it has run. A model a chain will make has the shape of the one it starts from (``made_shape``)."""
        makers = {step.product(folder): step for chained in self.chains.values() for step, folder in chained}
        encoded_tokens = EncodedTokens()

        def shape_of(model: str | None) -> EncoderShape | None:
            shape = encoder_shape(model)
            if shape is None and model in makers:
                return made_shape(makers[model], shape_of)
            return shape

        units: dict[Path, Work] = {folder: functools.partial(step_work, step, shape_of)
                                   for step, folder in self.setup.values()}
        for chained in self.chains.values():
            units.update({folder: functools.partial(step_work, step, shape_of) for step, folder in chained})

        def retrieval(task: RetrievalTask, condition: Any) -> Work:
            def work() -> UnitWork:
                if condition is None or condition.retrieve == "bm25":
                    return UnitWork(f"BM25 on {task.name}")
                if fuses(condition.retrieve):
                    return UnitWork("fusion")
                retrieve = runner.retrieve_config(condition)
                shape = shape_of(self.models[condition.name])
                tokens = encoded_tokens(task, retrieve.max_length or 512)
                size = None if shape is None or tokens is None else 2.0 * tokens * shape.token_multiply_adds
                return UnitWork("dense retrieval", size, "inference",
                                str(encoding_dtype(retrieve.compute_dtype, default_device())))
            return work

        for (task, name), folder in self.retrievals.items():
            units.setdefault(folder, retrieval(self.tasks[task], experiment.conditions[name]))
        for task, folder in self.bm25_folders.items():
            units.setdefault(folder, retrieval(self.tasks[task], None))
        return {folder: units[folder] for folder in self.units}


@dataclass
class _Scores:
    """What the runs and steps measured: per task its comparison table (``tables``, and as ``results.json``
    holds it with the task's references, ``comparisons``) and per-query scores (``per_query``), and the
    diagnose steps' metrics and [CLS]-reliance curves."""

    tables: dict[str, Any]
    comparisons: dict[str, dict[str, Any]]
    per_query: dict[str, dict[str, dict[str, dict[str, float]]]]
    diagnostics: dict[str, dict[str, float]]
    reliance: dict[str, Any]


def _run_experiment(experiment: Experiment, out_dir: Path, console: Console, command: str) -> Outcome:
    """``run_experiment`` under the lock of the report folder: plan → execute → score → report. Each
    step and retrieval folder is locked while it is computed, so experiments that share a work folder
    run at once unless they share a step that neither has finished (the second is then refused, naming
    the first)."""
    report_dir = out_dir / "reports" / experiment.name
    record_run(report_dir, {"experiment": str(experiment.path), "scale": experiment.scale,
                            "variables": experiment.variables}, None, command=command)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    runner = _Runner(experiment, out_dir, console)
    plan = _plan(experiment, runner)
    _execute(experiment, plan, runner)
    scores = _score(experiment, plan, console)
    return _report(experiment, plan, scores, runner, report_dir, command, started_at,
                   time.perf_counter() - started)


def _plan(experiment: Experiment, runner: _Runner) -> _Plan:
    """Resolve every step and retrieval of ``experiment`` to its folder in the work folder (nothing runs)."""
    setup = {}
    runner.setup_folders = {}
    for name, spec in experiment.setup.items():  # in order: one may read an earlier one's ({setup.NAME})
        step = build_step(spec.kind, runner.resolve(spec.settings), f"{experiment.path}: setup.{name}")
        folder = step_folder(runner.out_dir, name, step)
        setup[name] = (step, folder)
        runner.setup_folders[name] = str(step.product(folder) or folder)
    chains = {name: runner.chain(condition) for name, condition in experiment.conditions.items()}
    tasks = {name: TASKS.get(task.kind)(name, runner.resolve(task.settings), task.metrics,
                                        f"{experiment.path}: tasks.{name}")
             for name, task in experiment.tasks.items()}
    runner.tasks = tasks
    models = {name: runner.final_model(condition, chains[name])
              for name, condition in experiment.conditions.items()}
    retrievals = {(task, name): runner.retrieval_folder(tasks[task], condition, models[name])
                  for task in tasks for name, condition in experiment.conditions.items()
                  if condition.evaluates(task)}
    bm25_system = next((name for name, condition in experiment.conditions.items()
                        if condition.retrieve == "bm25"), None)
    bm25_folders = {task: runner.retrieval_folder(tasks[task], _BM25_REFERENCE, None) for task in tasks}
    return _Plan(setup, chains, tasks, models, retrievals, bm25_system, bm25_folders)


def _execute(experiment: Experiment, plan: _Plan, runner: _Runner) -> None:
    """Compute every unit of ``plan`` that is not finished (set-up, then each condition's steps and its
    retrievals, then the reference BM25 runs), with progress and an ETA."""
    progress = Progress(plan.work(experiment, runner), runner.console,
                        functools.partial(matmul_rate, device=default_device()))
    runner.console.print(f"experiment [bold]{experiment.name}[/] ({experiment.scale} scale): "
                         f"{len(experiment.conditions)} conditions, {len(plan.tasks)} task(s), "
                         f"{progress.total} units of work → {runner.out_dir}", highlight=False)
    for name, (step, folder) in plan.setup.items():
        runner.run_step(step, folder, progress, f"setup {name}")
    done: set[Path] = set()
    for name, condition in experiment.conditions.items():
        for step, folder in plan.chains[name]:
            if folder not in done:
                runner.run_step(step, folder, progress, f"{name}: {step.kind}")
                done.add(folder)
        for task in plan.tasks.values():
            folder = plan.retrievals.get((task.name, name))
            if folder is not None and folder not in done:
                runner.run_retrieval(task, condition, plan.models[name], folder, progress)
                done.add(folder)
    for task in plan.tasks.values():  # the floor's BM25 where no condition is BM25 (else: the same folder)
        if plan.bm25_folders[task.name] not in done:
            runner.run_retrieval(task, _BM25_REFERENCE, None, plan.bm25_folders[task.name], progress)
            done.add(plan.bm25_folders[task.name])


def run_scores(plan: _Plan) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """Every retrieval's run scored per query: ``{task: {system: {metric: {query: score}}}}``."""
    return {task.name: {name: task.per_query(read_trec_run(folder / "run.trec"))
                        for (task_name, name), folder in plan.retrievals.items() if task_name == task.name}
            for task in plan.tasks.values()}


def _score(experiment: Experiment, plan: _Plan, console: Console) -> _Scores:
    """Score every run per query, average the groups, test every system against the baseline per task,
    and read the diagnose steps' results."""
    tables, comparisons, per_query = {}, {}, run_scores(plan)
    grouped = experiment.grouped
    for task in plan.tasks.values():
        scores = per_query[task.name]
        bm25 = (scores[plan.bm25_system] if plan.bm25_system in scores
                else task.per_query(read_trec_run(plan.bm25_folders[task.name] / "run.trec")))
        bm25_means = {metric: sum(bm25[metric].values()) / len(bm25[metric]) for metric in task.metrics}
        tables[task.name], comparisons[task.name] = compare(
            experiment, task.metrics, scores,
            references(task.chance(), bm25_means, plan.bm25_system, len(task.documents())))
        console.print(tables[task.name].to_rich(title=f"{experiment.title}: {task.name}",
                                                systems=[system for system in tables[task.name].systems
                                                         if system not in grouped]))
    diagnosed = {name: json.loads((folder / "diagnostics.json").read_text(encoding="utf-8"))
                 for name, chained in plan.chains.items() for _, folder in chained
                 if (folder / "diagnostics.json").exists()}
    return _Scores(tables, comparisons, per_query,
                   diagnostics={name: result["metrics"] for name, result in diagnosed.items()},
                   reliance={name: result["details"]["cls_reliance"] for name, result in diagnosed.items()
                             if "cls_reliance" in result["details"]})


def _report(experiment: Experiment, plan: _Plan, scores: _Scores, runner: _Runner, report_dir: Path,
            command: str, started_at: str, wall: float) -> Outcome:
    """Write ``results.json`` (figures, claims, seed spread, provenance), the plots and the report."""
    recorded = {folder: json.loads((folder / ("step.json" if folder.parent.name == "steps" else "settings.json"))
                                   .read_text(encoding="utf-8")) for folder in plan.units}
    reused = set(runner.outcome_reused)
    spread = seed_spread(scores.comparisons, experiment.groups)
    with_seed_sd(scores.comparisons, spread)  # each group's SD between seeds beside its mean
    results = {
        "experiment": experiment.name, "title": experiment.title, "scale": experiment.scale,
        "file": str(experiment.path), "command": command, "machine": machine(), "started": started_at,
        "wall_seconds": round(wall, 1),
        "compute_seconds": round(sum(record["seconds"] for record in recorded.values()), 1),
        "variables": experiment.variables, "skipped": experiment.skipped, "tasks": scores.comparisons,
        "diagnostics": scores.diagnostics, "seed_spread": spread,
        "figures": figures(scores.comparisons, experiment.tolerance, scores.diagnostics, experiment.groups,
                           spread),
        "claims": claim_results(experiment, scores.comparisons, scores.per_query, scores.diagnostics),
        "collapsed": collapsed_conditions(experiment, scores.comparisons), "cls_reliance": scores.reliance,
        "case_study": case_study_results(experiment, plan.tasks, plan.retrievals),
        "steps": {name: [str(folder) for _, folder in plan.chains[name]] for name in experiment.conditions},
        "pretraining": pretraining_record(plan.chains), "code": code_fingerprint(),
        "provenance": [{"folder": folder.relative_to(runner.out_dir).as_posix(),
                        "reused": str(folder) in reused, "code": record.get("code")}
                       for folder, record in recorded.items()],
    }
    results["goals"] = goal_results(experiment, results["claims"], scores.comparisons)
    (report_dir / "plots").mkdir(parents=True, exist_ok=True)
    with atomic_write(report_dir / "results.json") as stream:
        stream.write(json_text(results))
    plots, run_names = report_plots(experiment, plan.chains, scores.tables, scores.reliance, report_dir)
    report = render_report(list(run_names), report_dir, title=experiment.title,
                           preamble=report_preamble(experiment, results),
                           results_markdown=results_markdown(results),
                           figures=plots, names=list(run_names.values()))
    runner.console.print(f"done in {wall:.0f} s; report: [bold]{report}[/]")
    return Outcome(report, results, runner.outcome_executed, runner.outcome_reused)


__all__ = ["Outcome", "experiment_scores", "planned_chains", "planned_work", "retrieval_code",
           "run_experiment", "run_scores", "step_folder"]
