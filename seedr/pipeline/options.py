"""Each option of a stage declared once: a field of the stage's config dataclass, whose metadata holds its
help text, its bounds and how the command line spells it.

Hugging Face's ``HfArgumentParser`` and tevatron build their argument parsers from dataclass fields the same
way. From one declaration come the command's option (``seedr.stages.options``: flag, help, default, range),
the API's keyword argument (``seedr.api.keywords``: signature, default, the ``Args:`` of its docstring) and the
check of a value wherever a config is made (``check_options`` in each config's ``__post_init__``), so a value
is refused with the same line whichever door it came through: ``alpha must be a number in (0, 1), got 5``.
Without the check, ``evaluate(alpha=5)`` marked systems significant at p = 0.996 and ``search(k="5")`` ended in
a TypeError deep in faiss.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Iterator, Sequence
from typing import Any

#: The metadata key of a field's ``Option``.
OPTION = "seedr.option"


@dataclasses.dataclass(frozen=True)
class Bound:
    """What one numeric option takes.

    Attributes:
        kind: ``int`` (an integer) or ``float`` (any real number, integers included; never NaN).
        low: the smallest value allowed, or None.
        high: the largest value allowed, or None.
        open: the bounds themselves are excluded (alpha in (0, 1)).
        many: a non-empty list of such numbers (``evaluate``'s ``ks``), not one.
    """

    kind: type
    low: float | None = None
    high: float | None = None
    open: bool = False
    many: bool = False

    def describe(self) -> str:
        """``an integer at least 1``, ``a number in (0, 1)`` ..."""
        noun = ("integers" if self.kind is int else "numbers") if self.many else \
            ("an integer" if self.kind is int else "a number")
        if self.low is not None and self.high is not None:
            left, right = "()" if self.open else "[]"
            allowed = f"{noun} in {left}{self.low}, {self.high}{right}"
        elif self.low is not None:
            allowed = f"{noun} {'above' if self.open else 'at least'} {self.low}"
        elif self.high is not None:
            allowed = f"{noun} {'below' if self.open else 'at most'} {self.high}"
        else:
            allowed = noun
        return f"a non-empty list of {allowed}" if self.many else allowed

    def check(self, name: str, value: Any) -> None:
        """Raise ``TypeError`` (not a number of the kind) or ``ValueError`` (outside the bound) naming ``name``."""
        values = list(value) if self.many and _is_list(value) else [value]
        if self.many and not _is_list(value):
            raise TypeError(f"{name} must be {self.describe()}, got {value!r} ({type(value).__name__})")
        if not values:
            raise ValueError(f"{name} must be {self.describe()}, got {value!r}")
        for number in values:
            real = isinstance(number, numbers.Real) and not isinstance(number, bool)
            if not real or (self.kind is int and not isinstance(number, numbers.Integral)):
                raise TypeError(f"{name} must be {self.describe()}, got {number!r} ({type(number).__name__})")
            below = self.low is not None and (number <= self.low if self.open else number < self.low)
            above = self.high is not None and (number >= self.high if self.open else number > self.high)
            nan = not isinstance(number, numbers.Integral) and math.isnan(number)  # an int may pass float's range
            if nan or below or above:
                raise ValueError(f"{name} must be {self.describe()}, got {number!r}")


def _is_list(value: Any) -> bool:
    """A list of values (a list, a tuple, a range ...), not a string's characters."""
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


AT_LEAST_ONE = Bound(int, 1)
NOT_NEGATIVE = Bound(int, 0)


@dataclasses.dataclass(frozen=True)
class Option:
    """How one field of a stage's config is offered.

    Attributes:
        help: what it does, as ``--help`` and the API's docstring say it.
        bound: the values a number takes, checked by ``check_options``.
        flag: the command line's spelling (``--normalize/--no-normalize``); default ``--field-name``.
        cli_type: the type the command line parses, where it differs from the field's (``list[Path]`` for a
            corpus the API also takes as rows in memory).
        positional: the API takes it by position too (``encode(model, corpus, out)``), in field order.
        command_line: the command offers it (an in-memory ``show_progress``, say, it does not).
        argument: the command takes it as a positional argument (``seedr fuse a.trec b.trec``), not an option.
        parser: how the command line reads its text, where typer cannot (``--lengths 32,64``).
        cli_required: the command requires it though the API has a default (``search``'s ``out``: from
            Python a run may stay in memory).
        api: the API function takes it (a command's ``--list``, which lists and exits, or ``--ance-refresh-only``,
            which runs another API function, it does not).
    """

    help: str
    bound: Bound | None = None
    flag: str | None = None
    cli_type: Any = None
    positional: bool = False
    command_line: bool = True
    argument: bool = False
    parser: Callable[[str], Any] | None = None
    cli_required: bool = False
    api: bool = True


def option(default: Any = dataclasses.MISSING, *, help: str, bound: Bound | None = None, flag: str | None = None,
           cli_type: Any = None, positional: bool = False, command_line: bool = True, argument: bool = False,
           parser: Callable[[str], Any] | None = None, cli_required: bool = False, api: bool = True,
           default_factory: Any = dataclasses.MISSING) -> Any:
    """A config field declared as an option (``Option``): ``max_length: int | None = option(None, help=...,
    bound=AT_LEAST_ONE)``. Without ``default`` (or ``default_factory``) the option is required."""
    metadata = {OPTION: Option(help, bound, flag, cli_type, positional, command_line, argument, parser, cli_required,
                               api)}
    return dataclasses.field(default=default, default_factory=default_factory, metadata=metadata)


def declared(config_class: type) -> Iterator[tuple[dataclasses.Field, Option]]:
    """Each field of ``config_class`` declared with ``option``, in order, with its ``Option``."""
    for field in dataclasses.fields(config_class):
        if OPTION in field.metadata:
            yield field, field.metadata[OPTION]


def has_default(field: dataclasses.Field) -> bool:
    return field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING


def default_of(field: dataclasses.Field) -> Any:
    """The field's default (a fresh one, from its factory), or ``dataclasses.MISSING``."""
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def check_options(config: Any) -> None:
    """Check every bounded option of ``config`` (a config's ``__post_init__`` calls it). ``None`` passes where
    it is the option's default: the stage then chooses (the model's length, all vectors ...)."""
    for field, declared_option in declared(type(config)):
        value = getattr(config, field.name)
        if declared_option.bound is None or (value is None and field.default is None):
            continue
        declared_option.bound.check(field.name, value)


def derived(config_class: type, name: str) -> Any:
    """A field of another dataclass (an experiment's settings for a stage) declared as ``config_class``'s
    field ``name`` is: the same default and option (help, bound), so that neither is written twice."""
    field = {each.name: each for each in dataclasses.fields(config_class)}[name]
    return dataclasses.field(default=field.default, default_factory=field.default_factory,
                             metadata=field.metadata)


__all__ = ["AT_LEAST_ONE", "NOT_NEGATIVE", "OPTION", "Bound", "Option", "check_options", "declared", "default_of",
           "derived", "has_default", "option"]
