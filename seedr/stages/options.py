"""A command's options made from its stage's config dataclass (``seedr.pipeline.options``), as Hugging Face's
``HfArgumentParser`` makes a parser from dataclass fields: each declared field is one ``typer`` option, its
flag, help, default and range those the field declares, so that no option is written twice.

``@options_of(EncodeConfig)`` over ``def command(config: EncodeConfig) -> None`` gives typer a function whose
parameters are the config's options; typer's parse makes the config, whose ``__post_init__`` checks it, and the
command runs with it. A closed range is typer's own (``--k [x>=1]``: refused as it is parsed, exit 2); an open
one is parsed by the bound's own check and shown as it is (``<float range> [x>0]``): typer's ranges are closed,
and an open bound given as one showed ``x>=0`` for a 0 that is refused.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any

import typer

from seedr.pipeline.options import Bound, Option, declared, default_of, has_default
from seedr.stages.common import clear_errors


def option_range(bound: Bound | None, name: str) -> dict[str, Any]:
    """What the typer option of a field with ``bound`` takes: its ``min`` and ``max``, or, for an open bound, a
    parser that refuses what the bound refuses and a metavar that shows it."""
    if bound is None:
        return {}
    if not bound.open:
        return {"min": bound.low, "max": bound.high}
    low, high = bound.low, bound.high
    shown = f"x>{low}" if high is None else f"x<{high}" if low is None else f"{low}<x<{high}"
    return {"parser": functools.partial(_parse_within, bound, name),
            "metavar": f"<{'integer' if bound.kind is int else 'float'} range> [{shown}]"}


def _parse_within(bound: Bound, name: str, text: str) -> float:
    """``text`` as a number within ``bound``, or typer's usage error saying why."""
    try:
        value = bound.kind(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not {bound.describe()}") from None
    try:
        bound.check(name, value)
    except ValueError as error:
        raise typer.BadParameter(str(error)) from None
    return value


def flag_of(field: dataclasses.Field, declared_option: Option) -> str:
    """The command line's spelling of a field: its declared flag, else ``--field-name``."""
    return declared_option.flag or f"--{field.name.replace('_', '-')}"


def _parameter(field: dataclasses.Field, declared_option: Option, hints: dict[str, Any]) -> inspect.Parameter:
    kind = declared_option.cli_type or hints[field.name]
    if has_default(field) and default_of(field) is None and type(None) not in typing.get_args(kind):
        kind = kind | None  # an option left out stays None, for the config to choose
    shown = option_range(declared_option.bound, field.name)
    if declared_option.parser is not None:  # its own reading; the bound is the config's to check
        shown = {"parser": declared_option.parser, "metavar": shown.get("metavar")}
    typer_option = typer.Argument(help=declared_option.help, **shown) if declared_option.argument else \
        typer.Option(*flag_of(field, declared_option).split(" "), help=declared_option.help, **shown)
    default = default_of(field) if has_default(field) and not declared_option.cli_required \
        else inspect.Parameter.empty
    return inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                             annotation=Annotated[kind, typer_option])


def options_of(config_class: type) -> Callable[[Callable[[Any], None]], Callable[..., None]]:
    """The decorated ``command(config)`` as a typer command taking ``config_class``'s options (those the
    command line offers: ``Option.command_line``); its errors are one line each (``clear_errors``)."""
    hints = typing.get_type_hints(config_class)
    offered = [(field, declared_option) for field, declared_option in declared(config_class)
               if declared_option.command_line]

    def decorate(function: Callable[[Any], None]) -> Callable[..., None]:
        @clear_errors
        @functools.wraps(function)
        def command(**given: Any) -> None:
            values = {}
            for field, _ in offered:
                value = given[field.name]
                # a repeatable option left out parses as [], where the config's default is None
                values[field.name] = None if value == [] and has_default(field) and field.default is None else value
            function(config_class(**values))

        del command.__wrapped__  # typer reads the signature below, not the function's own
        parameters = [_parameter(field, declared_option, hints) for field, declared_option in offered]
        command.__signature__ = inspect.Signature(parameters, return_annotation=None)  # type: ignore[attr-defined]
        command.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
        return command

    return decorate


__all__ = ["flag_of", "option_range", "options_of"]
