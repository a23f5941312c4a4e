"""Helpers shared by the stage commands: turning library errors into clear, non-zero exits."""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperCommand

from seedr.config.loading import describe_settings, load_config
from seedr.io import CORRUPT_STREAM_ERRORS, DataError, output_lock
from seedr.recipes import recipe_path

console = Console(stderr=True)


def not_built(stage: str) -> None:
    """Say plainly that a stage is not implemented yet, and exit non-zero."""
    console.print(f"[bold red]seedr {stage}[/]: this stage is not built yet.")
    raise typer.Exit(code=2)


def _end_progress_bars() -> None:
    """Close the progress bars an error interrupted, so that the error starts a line of its own instead of
    being glued to a half-drawn bar (tqdm keeps every open bar in ``tqdm._instances``)."""
    from tqdm import tqdm

    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()


#: Set (to 1) by ``seedr --debug``, or by hand: an unexpected error shows its traceback.
DEBUG_VARIABLE = "SEEDR_DEBUG"


def _say(message: object) -> None:
    """One red ``error:`` line, after the progress bars an error interrupted."""
    _end_progress_bars()
    console.print(f"[bold red]error[/]: {escape(str(message))}", soft_wrap=True, highlight=False)


def clear_errors(function: Callable[..., Any]) -> Callable[..., Any]:
    """Report bad input (file, line, field), missing, unreadable or corrupt files as one red line and exit 1.

    Any other exception (a bug, or a library failing in a way seedr does not foresee) is one line too,
    its type and message, with the way to see its traceback: under ``seedr --debug STAGE ...`` (or
    ``SEEDR_DEBUG=1``) it is re-raised.
    typer's own exits and aborts pass through."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except (DataError, KeyError, ValueError, *CORRUPT_STREAM_ERRORS) as error:
            _say(error.args[0] if isinstance(error, KeyError) and error.args else error)
            raise typer.Exit(code=1) from None
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise
        except Exception as error:
            if os.environ.get(DEBUG_VARIABLE, "") not in ("", "0"):
                raise
            detail = " ".join(str(error).split())
            _say(f"{type(error).__name__}{': ' + detail if detail else ''} (unexpected: run `seedr --debug ...` "
                 f"for the traceback)")
            raise typer.Exit(code=1) from None

    return wrapper


def one_line_warnings() -> None:
    """Print the warnings a command raises as one line each, ``warning: <message>``: Python's own form is
    two lines, the file and line that warned, then its source (``seedr/config/loading.py:174: UserWarning: ...`` /
    ``config = cls(**values)``), noise to a user of the command, and read before the error it precedes."""

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        _end_progress_bars()
        console.print(f"[yellow]warning[/]: {escape(str(message))}", soft_wrap=True, highlight=False)

    warnings.showwarning = show


#: click's usage error (typer vendors click privately; ``BadParameter`` is the public subclass of it).
_USAGE_ERROR = typer.BadParameter.__mro__[1]


class StageCommand(TyperCommand):
    """A stage's command: a shell glob left unquoted (``--corpus wiki/*.xz``) reaches the command as one
    value and stray words; say so, and how to give many files, instead of only "unexpected extra
    argument"."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except _USAGE_ERROR as error:
            if "unexpected extra argument" in error.message:
                error.message += (". An unquoted glob? The shell splits it into words: quote it "
                                  "(--corpus 'wiki/*.jsonl.xz'), give the folder, or repeat the option for each file")
            raise


def listing_settings(config_class: Callable[[], type], stage: str, note: str = "",
                     recipe: str | None = None) -> type[TyperCommand]:
    """A command class whose help ends with every key of the stage's config (the dataclass
    ``config_class()`` returns: imported only when the help is shown), its value and its description
    (``seedr.config.loading.describe_settings``), then ``note``. The values are the defaults (or ``recipe``'s, the one
    the command uses by default) or, when ``--config NAME`` and ``--set KEY=VALUE`` stand beside ``--help``,
    what that recipe and those settings make them.
    """

    class SettingsCommand(StageCommand):
        words: tuple[str, ...] = ()

        def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
            # click answers --help while it parses, before --config has a value: keep the words for the epilog
            self.words = tuple(args)
            return super().parse_args(ctx, args)

        @property
        def epilog(self) -> str:
            lines = [*_settings_listing(config_class(), stage, self.words, recipe), *([note] if note else [])]
            # typer's rich help joins lines within a paragraph: one paragraph per key
            return "\n\n".join(escape(line) for line in lines)

        @epilog.setter
        def epilog(self, value: str | None) -> None:
            """The listing replaces any given epilog."""

    return SettingsCommand


def _option_values(words: Sequence[str], option: str) -> list[str]:
    """The values given to ``option`` (``--set a=1`` or ``--set=a=1``) in a command line's ``words``."""
    values = []
    for index, word in enumerate(words):
        if word == option and index + 1 < len(words):
            values.append(words[index + 1])
        elif word.startswith(f"{option}="):
            values.append(word.partition("=")[2])
    return values


def _settings_listing(config_class: type, stage: str, words: Sequence[str], recipe: str | None = None) -> list[str]:
    """The heading and ``key = value: description`` lines of ``listing_settings``'s help (``recipe``: the
    one the command uses when --config is not given)."""

    recipes, overrides = _option_values(words, "--config") or ([recipe] if recipe else []), _option_values(words, "--set")
    sources = [*([f"recipe {recipes[-1]}"] if recipes else []), *(f"--set {value}" for value in overrides)]
    try:
        config = load_config(config_class, recipe_path(recipes[-1], stage) if recipes else None, overrides)
        heading = f"Settings (--set KEY=VALUE) with their values under {', '.join(sources)}:" if sources else \
            "Settings (--config NAME, --set KEY=VALUE) with their defaults:"
    except (OSError, ValueError) as error:  # a help still answers: with the defaults, and why
        config = config_class()
        heading = f"Settings (--set KEY=VALUE) with their defaults ({', '.join(sources)}: {error}):"
    return [heading, *describe_settings(config)]


def locks_output(option: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Hold ``seedr.io.output_lock`` on the command's ``option`` argument (the output it writes)
    for the whole command, so two commands never write one output at once. Under a launcher
    (``torchrun``, ``accelerate launch``) only the main process (``RANK`` 0) holds it."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            target = kwargs.get(option)
            main = os.environ.get("RANK", "0") == "0"
            with output_lock(target) if target is not None and main else nullcontext():
                return function(*args, **kwargs)

        return wrapper

    return decorate
