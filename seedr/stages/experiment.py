"""`seedr experiment`: run an experiment file — its conditions, evaluation, significance tests, report."""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from seedr.experiments.record.claims_page import update_claims_page
from seedr.experiments.record.docs_results import load_results, shipped_file
from seedr.experiments.record.docs_results import record as record_results
from seedr.experiments.record.docs_results import verify as check
from seedr.experiments.spec import RUN_SCALES, experiment_titles, load_experiment
from seedr.io import DataError
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
        titles = experiment_titles()
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
    import torch

    from seedr.experiments.runner import run_experiment

    experiment = load_experiment(name, scale, set_ or [])
    if scale not in RUN_SCALES:
        console.print(f"{experiment.path}: {scale} scale is valid: {len(experiment.conditions)} conditions "
                      f"({', '.join(experiment.conditions)}), tasks {', '.join(experiment.tasks)}. It is run on "
                      "GPUs, not here; nothing was run.", highlight=False)
        return
    if scale == "gpu" and not torch.cuda.is_available():
        raise typer.BadParameter("the gpu scale runs on a GPU, and torch sees none here; --scale cpu runs "
                                 "on this machine", param_hint="--scale")
    # outside a checkout there is nothing to verify against nor to record into: refused before running
    results_dir = experiment.results_dir if verify or record else None
    if record:  # a file of the same name elsewhere would replace the experiment's record
        own = results_dir.parents[2].joinpath(*shipped_file(experiment.name))
        if experiment.path.resolve() != own.resolve():
            raise DataError(experiment.path, f"--record records only the experiment's own file ({own}); this file "
                                             "is another of the same name: run it without --record")
    recorded = load_results(results_dir) if verify else None
    work = out
    if verify and not reuse:  # finished steps in OUT would verify only the evaluation, not the training
        out.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now().strftime("%Y%m%dT%H%M%S")
        work = Path(tempfile.mkdtemp(prefix=f"verify-{experiment.name}-{stamp}-", dir=out))
        console.print(f"verify: re-computing every step in the fresh work folder [bold]{work}[/] (--reuse: "
                      f"reuse those finished in {out})", highlight=False, soft_wrap=True)
    outcome = run_experiment(experiment, work, console)
    if recorded is not None:
        steps = sum(Path(folder).parent.name == "steps" for folder in outcome.executed)
        console.print(f"verify: re-ran {steps} step(s) and {len(outcome.executed) - steps} retrieval(s) in "
                      f"{work}; reused {len(outcome.reused)}", highlight=False, soft_wrap=True)
        problems = check(outcome.results, recorded)
        if problems:
            for problem in problems:
                console.print(f"[bold red]drifted[/]: {problem}", highlight=False)
            raise typer.Exit(code=1)
        console.print(f"verified: all {len(recorded['figures'])} recorded figures within their tolerance")
    if record:
        assert results_dir is not None  # --record outside a checkout was refused above
        target = record_results(outcome.report.parent, results_dir)
        page = results_dir.parents[1] / "claims.md"  # docs/results/NAME → docs/claims.md
        updated = page.is_file() and update_claims_page(page, results_dir.parent)
        console.print(f"recorded in [bold]{target}[/]" + (f"; claims table of {page} updated" if updated else ""))
