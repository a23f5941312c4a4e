"""The ``experiment`` and ``demo`` stages: an experiment file run whole — its conditions, their evaluation,
significance tests and one report — then, when asked, verified against its recorded results or recorded in
the checkout. ``seedr experiment``, ``seedr demo``, ``seedr.experiment`` and ``seedr.demo`` run this; their
options are ``seedr.experiments.configs``'."""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path

import torch
from rich.console import Console

from seedr.experiments.configs import REUSE_NEEDS_VERIFY, DemoConfig, ExperimentConfig, ExperimentDone, overrides
from seedr.experiments.record.claims_page import update_claims_page
from seedr.experiments.record.docs_results import record as record_results
from seedr.experiments.record.docs_results import verify as check_results
from seedr.experiments.runner import run_experiment
from seedr.experiments.spec import RUN_SCALES, load_experiment
from seedr.pipeline.common import locked


def run(config: ExperimentConfig) -> ExperimentDone:
    """Run the experiment ``config`` names into ``config.out`` (finished steps reused); with ``verify``
    re-compute it in a fresh work folder and compare each figure with the recorded results; with ``record``
    copy its report to ``docs/results/NAME`` and refresh the claims page. A ``paper`` scale is validated
    only."""
    if config.reuse and not config.verify:
        raise ValueError(REUSE_NEEDS_VERIFY)
    if config.path is None:
        raise ValueError("give an experiment's name or file (seedr experiment --list shows the names)")
    console = config.console or Console(stderr=True)
    out = config.out
    resolved = load_experiment(config.path, config.scale, overrides(config.settings))
    if config.scale not in RUN_SCALES:
        return ExperimentDone(resolved, out)
    if config.scale == "gpu" and not torch.cuda.is_available():
        raise ValueError("the gpu scale runs on a GPU, and torch sees none here; --scale cpu runs on this machine")
    work = out
    # finished steps in OUT would verify only the evaluation, not the training
    if config.verify and not config.reuse:
        out.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now().strftime("%Y%m%dT%H%M%S")
        work = Path(tempfile.mkdtemp(prefix=f"verify-{resolved.name}-{stamp}-", dir=out))
        console.print(f"verify: re-computing every step in the fresh work folder [bold]{work}[/] (--reuse: "
                      f"reuse those finished in {out})", highlight=False, soft_wrap=True)

    outcome = run_experiment(resolved, work, console)
    done = ExperimentDone(resolved, work, outcome)
    if config.recorded is not None:
        steps = sum(Path(folder).parent.name == "steps" for folder in outcome.executed)
        console.print(f"verify: re-ran {steps} step(s) and {len(outcome.executed) - steps} retrieval(s) in "
                      f"{work}; reused {len(outcome.reused)}", highlight=False, soft_wrap=True)
        done.problems = check_results(outcome.results, config.recorded)
        done.checked = len(config.recorded["figures"])
        if done.problems:  # a drifted run records nothing
            return done
    if config.record:
        assert config.results_dir is not None  # the config refused a record outside a checkout
        done.recorded = record_results(outcome.report.parent, config.results_dir)
        page = config.results_dir.parents[1] / "claims.md"  # docs/results/NAME → docs/claims.md
        if page.is_file() and update_claims_page(page, config.results_dir.parent):
            done.claims_page = page
    return done


def run_demo(config: DemoConfig) -> ExperimentDone:
    """The whole pipeline, small: the experiment ``seedr/experiments/demo.yaml`` at the cpu scale, into
    ``config.out``, held locked for the run (a work folder is only added to: no output is replaced)."""
    with locked(config.out):
        return run(config.experiment())


__all__ = ["run", "run_demo"]
