"""`seedr experiment`: run an experiment file — its conditions, evaluation, significance tests, report."""

from __future__ import annotations

import typer

from seedr.api.experiments import list_experiments
from seedr.experiments.configs import REUSE_NEEDS_VERIFY, ExperimentConfig
from seedr.stages.common import console
from seedr.stages.options import options_of


@options_of(ExperimentConfig)
def command(config: ExperimentConfig) -> None:
    """Run every condition of an experiment (resumable, with progress and ETA), evaluate each on the
    experiment's tasks with paired significance tests against the baseline, and write one report
    (report.md, plots, a self-contained report.html) and results.json into OUT/reports/NAME.

    Example: seedr experiment domain_adaptation --out runs/experiments
    """
    if config.list_:
        titles = list_experiments()
        width = max(map(len, titles), default=0)
        for each, title in titles.items():
            typer.echo(f"{each:<{width}}  {title}")
        return
    if config.reuse and not config.verify:  # a usage error, as typer's own (exit 2); the run refuses it too
        raise typer.BadParameter(REUSE_NEEDS_VERIFY, param_hint="--reuse")
    from seedr.experiments import stage  # every stage's libraries

    config.console = console
    done = stage.run(config)
    if done.outcome is None:
        resolved = done.experiment
        console.print(f"{resolved.path}: {config.scale} scale is valid: {len(resolved.conditions)} conditions "
                      f"({', '.join(resolved.conditions)}), tasks {', '.join(resolved.tasks)}. It is run on "
                      "GPUs, not here; nothing was run.", highlight=False)
        return
    if done.problems:
        for problem in done.problems:
            console.print(f"[bold red]drifted[/]: {problem}", highlight=False)
        raise typer.Exit(code=1)
    if done.problems is not None:
        console.print(f"verified: all {done.checked} recorded figures within their tolerance")
    if done.recorded is not None:
        page = done.claims_page
        console.print(f"recorded in [bold]{done.recorded}[/]" + (f"; claims table of {page} updated" if page else ""))
