"""``experiment`` and ``demo`` from Python: an experiment file run whole — its conditions, their evaluation,
significance tests and one report (``seedr experiment``, ``seedr demo``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seedr.api.keywords import keywords_of
from seedr.experiments.configs import DemoConfig, ExperimentConfig, ExperimentDone
from seedr.experiments.files import experiment_titles


class ExperimentRun(ExperimentDone):
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

    @classmethod
    def of(cls, done: ExperimentDone) -> ExperimentRun:
        """The API's view of what ``seedr.experiments.stage`` did."""
        return cls(**vars(done))

    @property
    def report(self) -> Path | None:
        """The report's ``report.md`` (its HTML page and ``results.json`` beside it)."""
        return None if self.outcome is None else self.outcome.report

    @property
    def results(self) -> dict[str, Any] | None:
        """``results.json``: every condition's figures, the significance tests, the claims' verdicts."""
        return None if self.outcome is None else self.outcome.results


def list_experiments() -> dict[str, str]:
    """The experiments shipped with seedr, ``{name: title}`` (``seedr experiment --list``)."""
    return experiment_titles()


@keywords_of(ExperimentConfig)
def experiment(config: ExperimentConfig) -> ExperimentRun:
    """Run an experiment (``seedr experiment``): every condition (resumable, with progress and ETA), each
    evaluated on the experiment's tasks with paired significance tests against the baseline, and one report
    (``report.md``, plots, a self-contained ``report.html``) and ``results.json`` in ``out/reports/NAME``.
    ``list_experiments()`` names the shipped experiments; ``verify`` lists in ``problems`` the figures out of
    their recorded tolerance.

    Example:
        >>> done = seedr.experiment("domain_adaptation", "runs/experiments", settings={"data": "../shared/data"})
        >>> done.report
        PosixPath('runs/experiments/reports/domain_adaptation/report.md')
    """
    from seedr.experiments import stage  # every stage's libraries

    return ExperimentRun.of(stage.run(config))


@keywords_of(DemoConfig)
def demo(config: DemoConfig) -> ExperimentRun:
    """The whole pipeline, small (``seedr demo``; the experiment ``seedr/experiments/demo.yaml``): prepare the
    embedded Wikipedia leads; fine-tune MiniLM with seedr's best recipe and fuse it with BM25; continue
    pre-training the seedr base with MLM and with SEED-Encoder and fine-tune both; compare all with BM25 and
    MiniLM as shipped on held-out queries (significance-tested), and write a report into ``out/reports/demo``.

    Example:
        >>> seedr.demo("runs/demo-scifact", data="../shared/data/scifact", settings={"pretrain_steps": 300}).report
        PosixPath('runs/demo-scifact/reports/demo/report.md')
    """
    from seedr.experiments import stage  # every stage's libraries

    return ExperimentRun.of(stage.run_demo(config))


__all__ = ["ExperimentRun", "demo", "experiment", "list_experiments"]
