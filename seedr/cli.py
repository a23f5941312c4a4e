"""The ``seedr`` command: one sub-command per pipeline stage, in data-flow order."""

from __future__ import annotations

import importlib
import os
import signal

import typer

from seedr.allocator import keep_freed_memory
from seedr.progress import plain_progress
from seedr.stages import STAGES
from seedr.stages.common import DEBUG_VARIABLE, StageCommand, one_line_warnings
from seedr.version import __version__

app = typer.Typer(
    name="seedr",
    help="Better seeds for dense retrievers: pre-train, fine-tune, encode, index, search, evaluate, report.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"seedr {__version__}")
        raise typer.Exit()


@app.callback()
def main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                      help="Print the version and exit."),
         debug: bool = typer.Option(False, "--debug", help="Show the traceback of an unexpected error, which is "
                                                           "otherwise one line.")) -> None:
    """Better seeds for dense retrievers."""
    one_line_warnings()  # here, where every command starts, from the shell or typer's test runner
    if debug:  # an environment variable, so that the processes a launcher starts see it too
        os.environ[DEBUG_VARIABLE] = "1"


for _stage in STAGES:
    _module = importlib.import_module(f"seedr.stages.{_stage}")
    app.command(name=_stage, cls=getattr(_module, "COMMAND_CLASS", StageCommand))(_module.command)


def _exit_on_terminate(signal_number: int, frame: object) -> None:
    """SIGTERM (``kill``, a job scheduler, ``timeout``) as an ordinary exit: Python's default for it ends the
    process at once, leaving the temporaries of an output half-written; an exit unwinds, so
    ``atomic_write``/``atomic_directory`` remove them and locks are released."""
    raise SystemExit(128 + signal_number)


def run() -> None:
    """The ``seedr`` console command: the allocator policy first (it must precede the run's allocations),
    SIGTERM turned into an exit that cleans up, and progress lines when the output is not a terminal
    (``seedr.progress``), then the stage."""
    signal.signal(signal.SIGTERM, _exit_on_terminate)
    keep_freed_memory()
    plain_progress()  # before any bar: output to a file gets progress lines, not carriage-return redraws
    app(prog_name="seedr")
