"""`seedr experiment`: run an experiment file — its conditions, evaluation, significance tests, report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seedr.stages.common import clear_errors, console


@clear_errors
def command(
    name: Annotated[str, typer.Argument(help="Experiment: a name in experiments/ (e.g. domain_adaptation) or "
                                             "a YAML file.")],
    scale: Annotated[str, typer.Option(
        "--scale", help="cpu: run it (this machine's budget); gpu: run it on one GPU (a larger budget, more "
        "seeds); paper: the papers' settings, validated only.")] = "cpu",
    out: Annotated[Path, typer.Option(
        "--out", help="Work folder, shared by experiments (finished steps are reused); the report goes to "
                      "OUT/reports/NAME.")] = Path("runs/experiments"),
    verify: Annotated[bool, typer.Option(
        "--verify", help="Run, then fail when a figure leaves the tolerance of the recorded results "
                         "(docs/results/NAME/results.json). Finished steps in --out are reused: give a new "
                         "--out to re-train everything.")] = False,
    record: Annotated[bool, typer.Option(
        "--record", help="Copy the report and results.json to docs/results/NAME and refresh the README's "
                         "claims table.")] = False,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a variable of the file, e.g. data=../shared/data (repeatable).")] = None,
) -> None:
    """Run every condition of an experiment (resumable, with progress and ETA), evaluate each on the
    experiment's tasks with paired significance tests against the baseline, and write one report
    (report.md, plots, a self-contained report.html) and results.json into OUT/reports/NAME.

    Example: seedr experiment domain_adaptation --out runs/experiments
    """
    from seedr.experiments.results import load_results, record as record_results, update_readme, verify as check
    from seedr.experiments.runner import run_experiment
    import torch

    from seedr.experiments.spec import RUN_SCALES, load_experiment

    experiment = load_experiment(name, scale, set_ or [])
    if scale not in RUN_SCALES:
        console.print(f"{experiment.path}: {scale} scale is valid: {len(experiment.conditions)} conditions "
                      f"({', '.join(experiment.conditions)}), tasks {', '.join(experiment.tasks)}. It is run on "
                      "GPUs, not here; nothing was run.", highlight=False)
        return
    if scale == "gpu" and not torch.cuda.is_available():
        raise typer.BadParameter("the gpu scale runs on a GPU, and torch sees none here; --scale cpu runs "
                                 "on this machine", param_hint="--scale")
    recorded = load_results(experiment.results_dir) if verify else None
    outcome = run_experiment(experiment, out, console)
    if recorded is not None:
        problems = check(outcome.results, recorded)
        if problems:
            for problem in problems:
                console.print(f"[bold red]drifted[/]: {problem}", highlight=False)
            raise typer.Exit(code=1)
        console.print(f"verified: all {len(recorded['figures'])} recorded figures within their tolerance")
    if record:
        target = record_results(outcome.report.parent, experiment.results_dir)
        readme = experiment.path.parent.parent / "README.md"
        updated = readme.is_file() and update_readme(readme, experiment.results_dir.parent)
        console.print(f"recorded in [bold]{target}[/]" + ("; README claims table updated" if updated else ""))
