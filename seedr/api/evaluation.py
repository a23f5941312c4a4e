"""``evaluate`` from Python: runs (files or ``SearchRun``s) scored on one task, with significance tests."""

from __future__ import annotations

import dataclasses
import io
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from seedr.api.arguments import checks_arguments
from seedr.pipeline.common import Source, path_strings
from seedr.pipeline.search import SearchRun
from seedr.evaluation import DEFAULT_METRICS
from seedr.io import DataError


@dataclasses.dataclass(repr=False)
class Evaluation:
    """Runs scored on one task (``evaluate``), with paired significance tests against the baseline.

    Attributes:
        mode: ``qrels``, ``qa`` (answer coverage) or ``reqa``.
        table: the comparison (``seedr.evaluation.compare.ComparisonTable``): each system's mean per metric,
            its difference to the baseline and the test's p-value.
        components: a fused run's tables against each run it was fused from.
        details: query counts, left-out metrics, questions.
        notes: what the evaluation had to say (metrics left out, runs without a record of their queries).
    """

    mode: str
    table: Any
    components: dict[str, dict[str, Any]]
    details: dict[str, Any]
    notes: list[str]
    runs: dict[str, str]

    @property
    def metrics(self) -> dict[str, dict[str, float]]:
        """``{system: {metric: mean}}``."""
        return {system: {metric: comparison.systems[system].mean
                         for metric, comparison in self.table.comparisons.items()}
                for system in self.table.systems}

    def to_markdown(self) -> str:
        return self.table.to_markdown()

    def tables(self) -> list[Any]:
        """The ``rich`` tables ``seedr evaluate`` prints: the comparison, each value with its difference to the
        baseline and p-value, then each fused run against each run it was fused from."""
        return [self.table.to_rich(title=f"{self.mode} evaluation"),
                *(against.to_rich(title=f"fused {name} vs its component {component}")
                  for name, tables in self.components.items() for component, against in tables.items())]

    def __str__(self) -> str:
        """What ``seedr evaluate`` prints, notes and tables, as plain text: ``print(evaluation)`` shows the
        differences and p-values the command shows, not only the marks of the Markdown table."""
        from rich.console import Console

        console = Console(file=io.StringIO(), width=shutil.get_terminal_size().columns, color_system=None)
        for note in self.notes:
            console.print(note, soft_wrap=True, highlight=False, markup=False)
        for table in self.tables():
            console.print(table)
        return console.file.getvalue()

    __repr__ = __str__  # a notebook shows the result as print does

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``seedr evaluate --json``."""
        result: dict[str, Any] = {"mode": self.mode, "runs": self.runs, **self.details}
        if len(self.table.systems) == 1:
            result["metrics"] = self.metrics[self.table.systems[0]]
        else:
            result["comparison"] = self.table.to_dict()
        if self.components:
            result["components"] = {name: {component: against.to_dict() for component, against in tables.items()}
                                    for name, tables in self.components.items()}
        return result


@checks_arguments
def evaluate(runs: Sequence[str | os.PathLike | SearchRun], *, qrels: str | os.PathLike | None = None,
             metrics: Sequence[str] | str | None = None, qa_answers: Source | None = None,
             corpus: Source | None = None, ks: Sequence[int] = (1, 5, 20, 100), qa_title: bool = False,
             reqa: str | os.PathLike | None = None, baseline: str | os.PathLike | SearchRun | None = None,
             test: str = "permutation", alpha: float = 0.05, resamples: int = 10_000,
             ignore_identical_ids: bool = False, components: bool = True, force: bool = False,
             show_progress: bool = True) -> Evaluation:
    """Score runs (``seedr evaluate``): IR metrics against ``qrels``, QA answer coverage (``qa_answers`` with
    the passage ``corpus``) or ``reqa``; with several runs, each is tested against the ``baseline`` (default:
    the first). Queries missing from a run score 0; ties are broken by document id; metrics deeper than the
    runs are left out, with a note.

    Example:
        >>> evaluation = seedr.evaluate([dense_run, bm25_run], qrels="scifact/qrels/test.tsv")
        >>> evaluation.metrics["bm25"]["nDCG@10"]
    """
    from seedr.data.runs import check_run_queries, read_trec_run
    from seedr.data.runs import ignore_identical_ids as drop_identical_ids
    from seedr.evaluation.metrics import run_depth
    from seedr.evaluation.qa_coverage import ranked_passages
    from seedr.evaluation.tasks import QaCoverageTask, QrelsTask
    from seedr.retrieval.fusion import fused_components

    given_modes = {"qrels": qrels, "qa": qa_answers, "reqa": reqa}
    modes = [mode for mode, source in given_modes.items() if source is not None]
    if len(modes) != 1:
        raise ValueError("give exactly one of qrels (--qrels), qa_answers (--qa-answers, with --corpus), reqa (--reqa)")
    if qa_answers is not None and corpus is None:
        raise ValueError("qa_answers (--qa-answers) needs corpus (--corpus), the passage corpus the runs rank")
    if not runs:
        raise ValueError("give at least one run to evaluate")
    notes: list[str] = []
    systems = [_System.of(run) for run in runs]
    if baseline is not None:
        first = _System.of(baseline)
        if first.key not in [system.key for system in systems]:
            systems = [first, *systems]
    given = len(systems)
    fused: dict[int, list[int]] = {}  # a fused run's position → its components' positions
    for position, system in enumerate(systems[:given] if components else []):
        if system.path is None:
            continue
        found, warnings = fused_components(system.path)
        notes.extend(f"warning: {warning}" for warning in warnings)
        for component in found:
            keys = [each.key for each in systems]
            if str(component.resolve()) not in keys:
                systems.append(_System.of(component))
                keys.append(str(component.resolve()))
            fused.setdefault(position, []).append(keys.index(str(component.resolve())))
    names = _names(systems)
    baseline_name = names[[system.key for system in systems].index(_System.of(baseline).key)] \
        if baseline is not None else names[0]
    loaded = {name: system.read(read_trec_run) for name, system in zip(names, systems)}
    for name, system in zip(names, systems):
        if not loaded[name]:  # zeros for every query would read as a result
            raise DataError(system.path or name, "the run ranks no documents (an empty run): nothing to evaluate")
    if ignore_identical_ids:
        loaded = {name: drop_identical_ids(run) for name, run in loaded.items()}

    details: dict[str, Any] = {}
    if reqa is not None:
        from seedr.evaluation.reqa import ReqaTask  # faiss, for its candidates' index

        task: Any = ReqaTask(reqa)
    elif qa_answers is not None:
        task = QaCoverageTask(qa_answers, [f"Top-{k}" for k in ks], include_title=qa_title)
    else:
        chosen = DEFAULT_METRICS if metrics is None else (
            [name.strip() for name in metrics.split(",") if name.strip()] if isinstance(metrics, str) else list(metrics))
        task = QrelsTask(qrels, chosen)
    depth = min(run_depth(run) for run in loaded.values())
    too_deep = task.deeper_than(depth)
    if too_deep:  # Top-100 or R@1000 of a run 20 deep would be its value at 20
        notes.append(f"left out {', '.join(too_deep)}: the runs rank at most {depth} {task.ranked}, so these "
                     f"would equal their value at {depth} (search with a larger k, --k)")
        details["left_out"] = {"metrics": too_deep, "run_depth": depth}
        if len(too_deep) == len(task.metrics):
            raise ValueError(f"every metric asked for is deeper than the runs ({depth} {task.ranked})")
        task.metrics = [metric for metric in task.metrics if metric not in too_deep]
    if isinstance(task, QrelsTask):
        per_system = {name: task.per_query(run) for name, run in loaded.items()}
        details["queries"] = {name: task.query_counts(run) for name, run in loaded.items()}
        for name, system in zip(names, systems):
            notes.extend(_judged_overlap(details["queries"][name], name, system.label, qrels))
    else:  # QA and ReQA runs must have been searched with these questions
        asked = task.queries()
        source = ", ".join(map(str, path_strings(qa_answers) if qa_answers is not None else [reqa]))
        for system in systems:
            warning = system.check_queries(asked, source, check_run_queries)
            if warning and not force:
                raise DataError(system.path, f"{warning.split(': ', 1)[-1]}: question ids are line numbers, so a run "
                                             "of other questions would be scored silently wrong; pass --force "
                                             "(force=True) to score it anyway (a run made by another tool)")
            if warning:
                notes.append(f"warning: {warning}")
        if isinstance(task, QaCoverageTask):
            task.passages = ranked_passages(loaded.values(), corpus, show_progress=show_progress)
        per_system = {name: task.per_query(run, show_progress=show_progress) for name, run in loaded.items()}
        details["questions"] = len(asked)

    # scipy's tests (most of a second to import): once the runs and the task are read
    from seedr.evaluation.compare import comparison_table

    table = comparison_table({name: per_system[name] for name in names[:given]}, baseline_name, test=test,
                             alpha=alpha, n_resamples=resamples, show_progress=show_progress)
    versus = {names[position]: {names[part]: comparison_table({names[part]: per_system[names[part]],
                                                               names[position]: per_system[names[position]]},
                                                              names[part], test=test, alpha=alpha,
                                                              n_resamples=resamples)
                                for part in parts}
              for position, parts in fused.items()}
    details["ignore_identical_ids"] = ignore_identical_ids
    return Evaluation(modes[0], table, versus, details, notes,
                      {name: system.label for name, system in zip(names, systems)})


#: Under this share of the judged queries in a run, ``evaluate`` warns: its means are mostly zeros.
_FEW_JUDGED = 0.5


def _judged_overlap(counts: Mapping[str, int], name: str, label: str, qrels: str | os.PathLike) -> list[str]:
    """The notes on how many judged queries a run answers (``QrelsTask.query_counts``): a warning naming the
    counts when it is under half of them; a ``DataError`` naming ``qrels`` and the run when it is none, for
    every metric would be 0.0, a figure that reads as a result (query ids prefixed, another collection)."""
    judged, answered, unjudged = counts["judged"], counts["evaluated"], counts["unjudged_in_run"]
    if not answered:
        raise DataError(qrels, f"none of its {judged} judged queries is in the run {label} ({unjudged} "
                               "queries there are unjudged): score the run against the judgements of its "
                               "own queries")
    missing = (f"{counts['missing_from_run']} judged queries missing from the run (scored 0), {unjudged} "
               "unjudged queries ignored")
    if answered < _FEW_JUDGED * judged:
        return [f"warning: {name}: only {answered} of the {judged} judged queries of {qrels} are in the run, "
                f"so its means are mostly zeros ({missing}): are the run and the judgements of the same "
                "queries?"]
    return [f"{name}: {missing}"] if counts["missing_from_run"] or unjudged else []


@dataclasses.dataclass(frozen=True)
class _System:
    """A run given to ``evaluate``: a TREC file, or a ``SearchRun`` held in memory."""

    key: str
    label: str
    stem: str
    path: Path | None
    held: SearchRun | None

    @classmethod
    def of(cls, run: str | os.PathLike | SearchRun) -> _System:
        if isinstance(run, SearchRun) and run.path is None:
            return cls(f"<{run.tag}>", run.tag, run.tag, None, run)
        path = Path(os.fspath(run))
        return cls(str(path.resolve()), str(path), path.stem, path, run if isinstance(run, SearchRun) else None)

    def read(self, reader: Any) -> dict[str, dict[str, float]]:
        return self.held.run if self.held is not None else reader(self.path)

    def check_queries(self, asked: Mapping[str, str], source: str, check: Any) -> str | None:
        """A warning when the run does not record its questions; an error when it records others."""
        if self.path is not None:
            return check(self.path, asked, source)
        if self.held is not None and self.held.queries != dict(asked):
            raise ValueError(f"the run {self.label!r} was searched with other questions than {source}")
        return None


def _names(systems: Sequence[_System]) -> list[str]:
    """Short system names: file names without suffix, or whole labels when two would collide."""
    stems = [system.stem for system in systems]
    return stems if len(set(stems)) == len(stems) else [system.label for system in systems]
