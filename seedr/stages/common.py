"""Helpers shared by the stage commands: turning library errors into clear, non-zero exits."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperCommand

from seedr.data.io import DataError

console = Console(stderr=True)


def not_built(stage: str) -> None:
    """Say plainly that a stage is not implemented yet, and exit non-zero."""
    console.print(f"[bold red]seedr {stage}[/]: this stage is not built yet.")
    raise typer.Exit(code=2)


def clear_errors(function: Callable[..., Any]) -> Callable[..., Any]:
    """Report bad input (file, line, field) and missing files as one red line and exit 1."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except (DataError, FileNotFoundError, KeyError, ValueError) as error:
            message = error.args[0] if isinstance(error, KeyError) and error.args else error
            console.print(f"[bold red]error[/]: {escape(str(message))}", soft_wrap=True, highlight=False)
            raise typer.Exit(code=1) from None

    return wrapper


def listing_train_options(defaults: Callable[[], Any]) -> type[TyperCommand]:
    """A command class whose help ends with every ``train.*`` key, its default and its description
    (``seedr.config.describe_options`` over ``defaults()``, a ``TrainConfig``). The listing is built
    only when the help is shown: it imports the trainer, which ``seedr --help`` must not wait for."""

    class TrainOptionsCommand(TyperCommand):
        @property
        def epilog(self) -> str:
            from seedr.config import describe_options

            # typer's rich help joins lines within a paragraph: one paragraph per option
            lines = ["train.* options (--set train.KEY=VALUE), with their defaults:",
                     *describe_options(defaults(), "train")]
            return "\n\n".join(escape(line) for line in lines)

        @epilog.setter
        def epilog(self, value: str | None) -> None:
            """The listing replaces any given epilog."""

    return TrainOptionsCommand
