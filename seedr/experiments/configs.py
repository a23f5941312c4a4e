"""The options of the ``experiment`` and ``demo`` stages, declared once (``seedr.pipeline.options``): the
command (``seedr experiment``, ``seedr demo``) and the API (``seedr.experiment``, ``seedr.demo``) are made
from these configs, and ``seedr.experiments.stage`` runs them.

They live here, not in ``seedr.pipeline``: an experiment runs the pipeline's stages, a layer above them. This
module reads the experiment files alone (no stage's library, no torch), so that ``--help``, ``--list`` and a
refused file or record folder answer at once, before the experiment is validated (seconds).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from seedr.experiments.files import experiment_path, results_folder
from seedr.experiments.record.recorded import check_own_file, check_record_destination, load_results
from seedr.pipeline.options import check_options, option

#: The experiment ``demo`` runs (``seedr/experiments/demo.yaml``).
DEMO = "demo"

#: An experiment's variables: ``{"data": "../shared/data"}`` or ``["data=../shared/data"]`` (``--set``).
Variables = Mapping[str, Any] | Sequence[str]

#: Why ``reuse`` alone is refused.
REUSE_NEEDS_VERIFY = "--reuse goes with --verify (a run without --verify always reuses finished steps)"


def overrides(settings: Variables | None) -> list[str]:
    """Variables as the ``key=value`` words ``load_experiment`` takes."""
    if settings is None:
        return []
    if isinstance(settings, Mapping):
        return [f"{key}={value}" for key, value in settings.items()]
    return [str(word) for word in settings]


@dataclasses.dataclass(kw_only=True)
class ExperimentConfig:
    """What ``experiment`` runs with; made, it has refused what the file's path alone refuses (an unknown
    name; a record outside a checkout, from a file of the same name elsewhere, or over a folder that is not
    the experiment's record) and read the recorded results a ``verify`` compares with."""

    name: str | os.PathLike | None = option(
        None, help="Experiment: a name shipped with seedr (seedr experiment --list shows them, e.g. "
                   "domain_adaptation) or a YAML file.", cli_type=str, positional=True, argument=True)
    out: str | os.PathLike = option(
        "runs/experiments", help="Work folder, shared by experiments (finished steps are reused); the report goes "
                                 "to OUT/reports/NAME.", cli_type=Path, positional=True)
    scale: str = option("cpu", help="cpu: run it (this machine's budget); gpu: run it on one GPU (a larger budget, "
                                    "more seeds); paper: the papers' settings, validated only.")
    settings: Variables | None = option(
        None, help="Override a variable of the file, e.g. data=../shared/data (repeatable).", flag="--set",
        cli_type=list[str])
    verify: bool = option(
        False, help="Re-compute every step in a fresh work folder (OUT/verify-NAME-TIME-*, named and kept), then "
                    "fail when a figure leaves the tolerance of the recorded results (docs/results/NAME/results.json "
                    "of the checkout).")
    reuse: bool = option(False, help="With --verify: reuse the finished steps in --out instead of re-computing "
                                     "them (checks the evaluation only).")
    record: bool = option(False, help="Copy the report and results.json to docs/results/NAME and refresh the "
                                      "README's claims table (inside a checkout only).")
    console: Any = option(None, help="A rich.console.Console for the run's progress and lines (default: standard "
                                     "error).", command_line=False)
    list_: bool = option(False, help="List the experiments shipped with seedr, with their titles, and exit.",
                         flag="--list", api=False)
    #: The experiment's file, its record's folder (``verify``, ``record``) and the results recorded there
    #: (``verify``), as the name resolves.
    path: Path | None = dataclasses.field(default=None, init=False, repr=False)
    results_dir: Path | None = dataclasses.field(default=None, init=False, repr=False)
    recorded: dict[str, Any] | None = dataclasses.field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        check_options(self)
        self.out = Path(self.out)
        if self.name is None:
            if not self.list_:
                raise ValueError("give an experiment's name or file (seedr experiment --list shows the names)")
            return
        self.path = experiment_path(self.name)
        if self.verify or self.record:
            self.results_dir = results_folder(self.path)
            if self.record:
                check_own_file(self.path, self.results_dir)
                check_record_destination(self.results_dir, self.path.stem)
        if self.verify:
            self.recorded = load_results(self.results_dir)


@dataclasses.dataclass
class ExperimentDone:
    """What the experiment stage did (``seedr.experiments.stage.run``; ``seedr.api.ExperimentRun`` says what
    each field holds)."""

    experiment: Any
    work: Path
    outcome: Any = None
    problems: list[str] | None = None
    checked: int = 0
    recorded: Path | None = None
    claims_page: Path | None = None


@dataclasses.dataclass(kw_only=True)
class DemoConfig:
    """What ``demo`` runs with."""

    out: str | os.PathLike = option("runs/demo", help="Run folder (finished steps are reused).", cli_type=Path,
                                    positional=True)
    data: str | os.PathLike | None = option(
        None, help="A BEIR folder (corpus, queries, qrels/train.tsv, qrels/test.tsv) instead of the embedded "
                   "corpus, e.g. ../shared/data/scifact.", cli_type=Path)
    settings: Variables | None = option(
        None, help="Override a size, e.g. pretrain_steps=300 (repeatable; the variables of "
                   "seedr/experiments/demo.yaml).", flag="--set", cli_type=list[str])
    console: Any = option(None, help="A rich.console.Console for the run's progress and lines (default: standard "
                                     "error).", command_line=False)

    def __post_init__(self) -> None:
        check_options(self)
        self.out = Path(self.out)

    def experiment(self) -> ExperimentConfig:
        """The demo as the experiment it is: ``demo.yaml`` at the cpu scale, ``data`` one of its variables."""
        data = [f"data={os.fspath(self.data)}"] if self.data is not None else []
        return ExperimentConfig(name=DEMO, out=self.out, settings=[*overrides(self.settings), *data],
                                console=self.console)


__all__ = ["DEMO", "REUSE_NEEDS_VERIFY", "DemoConfig", "ExperimentConfig", "ExperimentDone", "Variables", "overrides"]
