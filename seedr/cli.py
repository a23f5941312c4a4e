"""The ``seedr`` command: one sub-command per pipeline stage, in data-flow order."""

from __future__ import annotations

import importlib

import typer

from seedr import __version__
from seedr.allocator import keep_freed_memory
from seedr.progress import plain_progress
from seedr.stages import STAGES
from seedr.stages.common import StageCommand

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
                                      help="Print the version and exit.")) -> None:
    """Better seeds for dense retrievers."""


for _stage in STAGES:
    _module = importlib.import_module(f"seedr.stages.{_stage}")
    app.command(name=_stage, cls=getattr(_module, "COMMAND_CLASS", StageCommand))(_module.command)


def run() -> None:
    """The ``seedr`` console command: the allocator policy first (it must precede the run's allocations),
    and progress lines when the output is not a terminal (``seedr.progress``), then the stage."""
    keep_freed_memory()
    plain_progress()  # before any bar: output to a file gets progress lines, not carriage-return redraws
    app(prog_name="seedr")
