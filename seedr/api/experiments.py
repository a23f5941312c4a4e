"""``experiment`` and ``demo`` from Python: an experiment file run whole — its conditions, their evaluation,
significance tests and one report (``seedr experiment``, ``seedr demo``)."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from seedr.pipeline.common import locked
from seedr.experiments.files import experiment_path, experiment_titles, results_folder
from seedr.experiments.record.recorded import check_own_file, check_record_destination, load_results

#: The experiment ``demo`` runs (``seedr/experiments/demo.yaml``).
DEMO = "demo"

#: An experiment's variables: ``{"data": "../shared/data"}`` or ``["data=../shared/data"]`` (``--set``).
Variables = Mapping[str, Any] | Sequence[str]


@dataclasses.dataclass
class ExperimentRun:
    """What ``experiment`` (or ``demo``) did.

    Attributes:
        experiment: the experiment as resolved for its scale (``seedr.experiments.spec.Experiment``).
        work: the work folder its steps ran in (a fresh one under ``out`` for ``verify``).
        outcome: the run (``seedr.experiments.runner.Outcome``: ``report``, ``results``, the units executed
            and reused), or None when the scale is only validated (``paper``).
        problems: with ``verify``, the figures that left their recorded tolerance (empty: all within).
        checked: with ``verify``, how many recorded figures were checked.
        recorded: with ``record``, the folder the report was copied to (``docs/results/NAME``).
        claims_page: with ``record``, the claims page updated, if any (``docs/claims.md``).
    """

    experiment: Any
    work: Path
    outcome: Any = None
    problems: list[str] | None = None
    checked: int = 0
    recorded: Path | None = None
    claims_page: Path | None = None

    @property
    def report(self) -> Path | None:
        """The report's ``report.md`` (its HTML page and ``results.json`` beside it)."""
        return None if self.outcome is None else self.outcome.report

    @property
    def results(self) -> dict[str, Any] | None:
        """``results.json``: every condition's figures, the significance tests, the claims' verdicts."""
        return None if self.outcome is None else self.outcome.results


def _overrides(settings: Variables | None) -> list[str]:
    """Variables as the ``key=value`` words ``load_experiment`` takes."""
    if settings is None:
        return []
    if isinstance(settings, Mapping):
        return [f"{key}={value}" for key, value in settings.items()]
    return [str(word) for word in settings]


def list_experiments() -> dict[str, str]:
    """The experiments shipped with seedr, ``{name: title}`` (``seedr experiment --list``)."""
    return experiment_titles()


def experiment(name: str | os.PathLike, out: str | os.PathLike = "runs/experiments", *, scale: str = "cpu",
               settings: Variables | None = None, verify: bool = False, reuse: bool = False, record: bool = False,
               console: Any = None) -> ExperimentRun:
    """Run an experiment (``seedr experiment``): every condition (resumable, with progress and ETA), each
    evaluated on the experiment's tasks with paired significance tests against the baseline, and one report
    (``report.md``, plots, a self-contained ``report.html``) and ``results.json`` in ``out/reports/NAME``.

    Args:
        name: a name shipped with seedr (``list_experiments()``, e.g. ``domain_adaptation``) or a YAML file.
        out: the work folder, shared by experiments (finished steps are reused).
        scale: ``cpu`` (run here), ``gpu`` (one GPU: a larger budget, more seeds) or ``paper`` (the papers'
            settings, validated only).
        settings: the file's variables, e.g. ``{"data": "../shared/data"}`` (``--set``).
        verify: re-compute every step in a fresh work folder (``out/verify-NAME-TIME-*``, kept) and compare
            each figure with the recorded results (``docs/results/NAME/results.json`` of the checkout):
            ``problems`` lists those out of their tolerance.
        reuse: with ``verify``: reuse the finished steps in ``out`` (checks the evaluation only).
        record: copy the report and ``results.json`` to ``docs/results/NAME`` and refresh the claims page
            (inside a checkout only).
        console: a ``rich.console.Console`` for the run's progress and lines (default: standard error).

    Example:
        >>> done = seedr.experiment("domain_adaptation", "runs/experiments", settings={"data": "../shared/data"})
        >>> done.report
        PosixPath('runs/experiments/reports/domain_adaptation/report.md')
    """
    from rich.console import Console

    if reuse and not verify:
        raise ValueError("--reuse goes with --verify (a run without --verify always reuses finished steps)")
    # what the file's path alone refuses — an unknown name, a record outside a checkout, from a file of the
    # same name elsewhere, or over a folder that is not the experiment's record — before the file is
    # validated, which imports every stage's libraries (seconds)
    path = experiment_path(name)
    results_dir = None
    if verify or record:
        results_dir = results_folder(path)
        if record:
            check_own_file(path, results_dir)
            check_record_destination(results_dir, path.stem)
    recorded = load_results(results_dir) if verify else None

    from seedr.experiments.record.claims_page import update_claims_page
    from seedr.experiments.record.docs_results import record as record_results
    from seedr.experiments.record.docs_results import verify as check_results
    from seedr.experiments.runner import run_experiment
    from seedr.experiments.spec import RUN_SCALES, load_experiment

    console = console or Console(stderr=True)
    out = Path(out)
    resolved = load_experiment(path, scale, _overrides(settings))
    if scale not in RUN_SCALES:
        return ExperimentRun(resolved, out)
    if scale == "gpu":
        import torch

        if not torch.cuda.is_available():
            raise ValueError("the gpu scale runs on a GPU, and torch sees none here; --scale cpu runs on this "
                             "machine")
    work = out
    if verify and not reuse:  # finished steps in OUT would verify only the evaluation, not the training
        out.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now().strftime("%Y%m%dT%H%M%S")
        work = Path(tempfile.mkdtemp(prefix=f"verify-{resolved.name}-{stamp}-", dir=out))
        console.print(f"verify: re-computing every step in the fresh work folder [bold]{work}[/] (--reuse: "
                      f"reuse those finished in {out})", highlight=False, soft_wrap=True)

    outcome = run_experiment(resolved, work, console)
    done = ExperimentRun(resolved, work, outcome)
    if recorded is not None:
        steps = sum(Path(folder).parent.name == "steps" for folder in outcome.executed)
        console.print(f"verify: re-ran {steps} step(s) and {len(outcome.executed) - steps} retrieval(s) in "
                      f"{work}; reused {len(outcome.reused)}", highlight=False, soft_wrap=True)
        done.problems = check_results(outcome.results, recorded)
        done.checked = len(recorded["figures"])
        if done.problems:  # a drifted run records nothing
            return done
    if record:
        assert results_dir is not None  # record outside a checkout was refused above
        done.recorded = record_results(outcome.report.parent, results_dir)
        page = results_dir.parents[1] / "claims.md"  # docs/results/NAME → docs/claims.md
        if page.is_file() and update_claims_page(page, results_dir.parent):
            done.claims_page = page
    return done


def demo(out: str | os.PathLike = "runs/demo", *, data: str | os.PathLike | None = None,
         settings: Variables | None = None, console: Any = None) -> ExperimentRun:
    """The whole pipeline, small (``seedr demo``; the experiment ``seedr/experiments/demo.yaml``): prepare the
    embedded Wikipedia leads; fine-tune MiniLM with seedr's best recipe and fuse it with BM25; continue
    pre-training the seedr base with MLM and with SEED-Encoder and fine-tune both; compare all with BM25 and
    MiniLM as shipped on held-out queries (significance-tested), and write a report into ``out/reports/demo``.

    Args:
        out: the run folder (finished steps are reused).
        data: a BEIR folder (corpus, queries, ``qrels/train.tsv``, ``qrels/test.tsv``) instead of the
            embedded corpus.
        settings: the demo's sizes, e.g. ``{"pretrain_steps": 300}``.
        console: a ``rich.console.Console`` for the run's progress and lines (default: standard error).

    Example:
        >>> seedr.demo("runs/demo-scifact", data="../shared/data/scifact", settings={"pretrain_steps": 300}).report
        PosixPath('runs/demo-scifact/reports/demo/report.md')
    """
    from seedr.experiments.runner import run_experiment
    from seedr.experiments.spec import load_experiment

    out = Path(out)
    overrides = [*_overrides(settings), *([f"data={os.fspath(data)}"] if data is not None else [])]
    with locked(out):  # an experiment's work folder is only added to: no output is replaced
        resolved = load_experiment(DEMO, "cpu", overrides)
        return ExperimentRun(resolved, out, run_experiment(resolved, out, console))


__all__ = ["DEMO", "ExperimentRun", "demo", "experiment", "list_experiments"]
