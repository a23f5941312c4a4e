"""An experiment report's plots and case study, made from its scored run (``seedr.experiments.runner``
writes the report with them)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from seedr.data.runs import read_trec_run
from seedr.diagnostics.plots import plot_reliance
from seedr.evaluation.case_study import case_study
from seedr.reporting.report import plot_comparison


def report_plots(experiment: Any, chains: dict[str, list[tuple[Any, Path]]], tables: dict[str, Any],
                 reliance: dict[str, Any], report_dir: Path) -> tuple[list[Path], dict[Path, str]]:
    """The report's figures in ``report_dir/plots`` — each task's comparison (a group's members plotted
    as the group), the decoders' reliance on [CLS] (SEED-Encoder Fig. 4: every SEED condition's curve on
    one axis) and the steps' own figures — and the run folders whose training curves it shows, each named
    by its first condition and step (a step shared by conditions is shown once)."""
    grouped = experiment.grouped
    plots = [plot_comparison(table, report_dir / "plots" / f"comparison-{task}.png", title=task,
                             systems=[system for system in table.systems if system not in grouped])
             for task, table in tables.items()]
    if reliance:
        plots.append(plot_reliance(reliance, report_dir / "plots" / "cls-reliance.png"))
    run_names: dict[Path, str] = {}
    for name in experiment.conditions:
        for step, folder in chains[name]:
            for figure in step.figures(folder):  # the steps' own figures, e.g. diagnostics.png
                plots.append(report_dir / "plots" / f"{name}-{figure.name}")
                shutil.copyfile(figure, plots[-1])
            for history in step.history_dirs(folder):
                run_names.setdefault(history, f"{name}/{step.kind}")
    return plots, run_names


def case_study_results(experiment: Any, tasks: dict[str, Any],
                       retrievals: dict[tuple[str, str], Path]) -> dict[str, Any] | None:
    """The experiment's ``case_study`` (SEED-Encoder Table 5) from its two systems' run files, or None."""
    wanted = experiment.case_study
    if wanted is None:
        return None
    task = tasks[wanted.task]
    runs = {system: read_trec_run(retrievals[(task.name, system)] / "run.trec") for system in wanted.systems}
    documents = {document.id: document for document in task.documents()}
    return {"task": task.name, **case_study(runs, task.labels(), task.queries(), documents, wanted.queries)}


__all__ = ["case_study_results", "report_plots"]
