"""The numeric arguments of the API's stages and the values each takes: one table that both doors check.

``checks_arguments`` refuses a value outside its bound when an API function is called, before anything is
loaded or any output is touched, with one line naming the argument and what it takes (``alpha must be a
number in (0, 1), got 5``): without it, ``evaluate(alpha=5)`` marked systems significant at p = 0.996 and
``search(k="5")`` ended in a TypeError deep in faiss. The command line calls these functions, so it gets the
same check; its typer options also take their ``min``/``max`` from this table (``option_range``), so that
``--help`` shows the range and the parser refuses most bad values before any import. An open bound (alpha
may be neither 0 nor 1) is beyond typer's ranges: the option parses it with the bound's own check, and
``--help`` shows it as it is.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any


@dataclasses.dataclass(frozen=True)
class Bound:
    """What one numeric argument takes.

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

#: Each API function's numeric arguments (by qualified name), with their bounds.
ARGUMENTS: dict[str, dict[str, Bound]] = {
    "index": {"train_sample": AT_LEAST_ONE, "seed": NOT_NEGATIVE},
    "search": {"k": AT_LEAST_ONE, "max_length": AT_LEAST_ONE, "batch_size": AT_LEAST_ONE, "nprobe": AT_LEAST_ONE,
               "ef_search": AT_LEAST_ONE, "k1": Bound(float, 0), "b": Bound(float, 0, 1)},
    "Index.search": {"k": AT_LEAST_ONE, "batch_size": AT_LEAST_ONE},
    "adapt": {"validation": Bound(float, 0, open=True), "max_documents": AT_LEAST_ONE, "dev_every": NOT_NEGATIVE,
              "patience": NOT_NEGATIVE},
    "finetune": {"dev_every": NOT_NEGATIVE, "rounds": AT_LEAST_ONE, "few_shot": Bound(float, 0, open=True),
                 "seeds": Bound(int, 0, many=True)},
    "average": {"weight": Bound(float, 0, many=True), "checkpoints": AT_LEAST_ONE},
    "prepare": {"passage_words": NOT_NEGATIVE, "max_articles": AT_LEAST_ONE, "min_title_words": AT_LEAST_ONE,
                "tokenizer_vocab": NOT_NEGATIVE, "test_fraction": Bound(float, 0, 1), "seed": NOT_NEGATIVE,
                "test_questions": AT_LEAST_ONE, "run_depth": NOT_NEGATIVE, "answer_passages": AT_LEAST_ONE,
                "pool_random": NOT_NEGATIVE},
    "diagnose": {"max_documents": AT_LEAST_ONE, "pairs": AT_LEAST_ONE, "positive_count": AT_LEAST_ONE,
                 "word_texts": NOT_NEGATIVE, "top_k": AT_LEAST_ONE, "reliance_texts": NOT_NEGATIVE,
                 "masked_lm_texts": NOT_NEGATIVE, "common_words": AT_LEAST_ONE, "seed": NOT_NEGATIVE,
                 "batch_size": AT_LEAST_ONE},
}


def option_range(function: str, argument: str) -> dict[str, Any]:
    """What the typer option that passes ``argument`` to the API's ``function`` takes: its ``min`` and
    ``max``. typer's ranges are closed, and an open bound given as one showed ``x>=0`` for a 0 the API
    refuses: an open one is parsed by the bound's own check instead (refused at parse time as a closed one
    is) and shown as it is, in typer's form (``<float range> [x>0]``), as the option's metavar."""
    bound = ARGUMENTS[function][argument]
    if not bound.open:
        return {"min": bound.low, "max": bound.high}
    low, high = bound.low, bound.high
    shown = f"x>{low}" if high is None else f"x<{high}" if low is None else f"{low}<x<{high}"
    return {"parser": functools.partial(_parse_within, bound, argument),
            "metavar": f"<{'integer' if bound.kind is int else 'float'} range> [{shown}]"}


def _parse_within(bound: Bound, name: str, text: str) -> float:
    """``text`` as a number within ``bound``, or typer's usage error saying why."""
    import typer  # the command line's alone: the API itself never parses text

    try:
        value = bound.kind(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not {bound.describe()}") from None
    try:
        bound.check(name, value)
    except ValueError as error:
        raise typer.BadParameter(str(error)) from None
    return value


def checks_arguments(function: Callable[..., Any]) -> Callable[..., Any]:
    """Check ``function``'s arguments against its row of ``ARGUMENTS`` before it runs. ``None`` passes
    where it is the argument's default (the stage then chooses: the model's length, all vectors ...)."""
    bounds: Mapping[str, Bound] = ARGUMENTS[function.__qualname__]
    signature = inspect.signature(function)
    unknown = set(bounds) - set(signature.parameters)
    if unknown:  # a renamed argument would silently go unchecked
        raise TypeError(f"ARGUMENTS names arguments {function.__qualname__} does not take: {sorted(unknown)}")

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = signature.bind(*args, **kwargs).arguments
        for name, bound in bounds.items():
            if name in given and not (given[name] is None and signature.parameters[name].default is None):
                bound.check(name, given[name])
        return function(*args, **kwargs)

    return wrapper
