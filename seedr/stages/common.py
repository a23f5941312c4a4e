"""Helpers shared by the stage commands: turning library errors into clear, non-zero exits."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from seedr.data.io import DataError

console = Console(stderr=True)


def not_built(stage: str) -> None:
    """Say plainly that a stage is not implemented yet, and exit non-zero."""
    console.print(f"[bold red]seedr {stage}[/]: this stage is not built yet.")
    raise typer.Exit(code=2)


def _end_progress_bars() -> None:
    """Close the progress bars an error interrupted, so that the error starts a line of its own instead of
    being glued to a half-drawn bar (tqdm keeps every open bar in ``tqdm._instances``)."""
    from tqdm import tqdm

    for bar in list(tqdm._instances):
        bar.close()


def clear_errors(function: Callable[..., Any]) -> Callable[..., Any]:
    """Report bad input (file, line, field) and missing files as one red line and exit 1."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except (DataError, FileNotFoundError, KeyError, ValueError) as error:
            message = error.args[0] if isinstance(error, KeyError) and error.args else error
            _end_progress_bars()
            console.print(f"[bold red]error[/]: {escape(str(message))}", soft_wrap=True, highlight=False)
            raise typer.Exit(code=1) from None

    return wrapper
