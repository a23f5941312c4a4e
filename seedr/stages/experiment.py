"""`seedr experiment`: run an experiment file — its conditions, evaluation, significance tests, report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seedr.api import experiment
from seedr.api.experiments import list_experiments
from seedr.stages.common import clear_errors, console


@clear_errors
def command(
    name: Annotated[str | None, typer.Argument(
        help="Experiment: a name shipped with seedr (seedr experiment --list shows them, e.g. "
             "domain_adaptation) or a YAML file.")] = None,
    scale: Annotated[str, typer.Option(
        "--scale", help="cpu: run it (this machine's budget); gpu: run it on one GPU (a larger budget, more "
        "seeds); paper: the papers' settings, validated only.")] = "cpu",
    out: Annotated[Path, typer.Option(
        "--out", help="Work folder, shared by experiments (finished steps are reused); the report goes to "
                      "OUT/reports/NAME.")] = Path("runs/experiments"),
    verify: Annotated[bool, typer.Option(
        "--verify", help="Re-compute every step in a fresh work folder (OUT/verify-NAME-TIME-*, named and "
                         "kept), then fail when a figure leaves the tolerance of the recorded results "
                         "(docs/results/NAME/results.json of the checkout).")] = False,
    reuse: Annotated[bool, typer.Option(
        "--reuse", help="With --verify: reuse the finished steps in --out instead of re-computing them "
                        "(checks the evaluation only).")] = False,
    record: Annotated[bool, typer.Option(
        "--record", help="Copy the report and results.json to docs/results/NAME and refresh the README's "
                         "claims table (inside a checkout only).")] = False,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a variable of the file, e.g. data=../shared/data (repeatable).")] = None,
    list_: Annotated[bool, typer.Option(
        "--list", help="List the experiments shipped with seedr, with their titles, and exit.")] = False,
) -> None:
    """Run every condition of an experiment (resumable, with progress and ETA), evaluate each on the
    experiment's tasks with paired significance tests against the baseline, and write one report
    (report.md, plots, a self-contained report.html) and results.json into OUT/reports/NAME.

    Example: seedr experiment domain_adaptation --out runs/experiments
    """

    if list_:
        titles = list_experiments()
        width = max(map(len, titles), default=0)
        for each, title in titles.items():
            typer.echo(f"{each:<{width}}  {title}")
        return
    if name is None:
        raise typer.BadParameter("give an experiment's name or file (seedr experiment --list shows the names)",
                                 param_hint="NAME")
    if reuse and not verify:
        raise typer.BadParameter("--reuse goes with --verify (a run without --verify always reuses finished "
                                 "steps)", param_hint="--reuse")
    done = experiment(name, out, scale=scale, settings=set_ or [], verify=verify, reuse=reuse, record=record,
                      console=console)
    if done.outcome is None:
        resolved = done.experiment
        console.print(f"{resolved.path}: {scale} scale is valid: {len(resolved.conditions)} conditions "
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
