"""An API function's keyword arguments made from its stage's config dataclass (``seedr.pipeline.options``): its
signature, its defaults and the ``Args:`` of its docstring are the config's declared fields, so that what
``seedr.encode`` takes is what ``seedr encode`` takes, declared once.

``@keywords_of(EncodeConfig)`` over ``def encode(config: EncodeConfig) -> Embeddings`` gives a function called
as ``encode(model, corpus, out, batch_size=32)``: the arguments make the config (whose ``__post_init__`` refuses
a bad value with one line naming it, before anything is loaded or any output touched), and the function runs
with it. An argument the config does not declare is Python's own ``TypeError``, as for any function.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import textwrap
from collections.abc import Callable
from typing import Any, TypeVar

from seedr.pipeline.options import declared, default_of, has_default

Result = TypeVar("Result")


def _parameter(field: dataclasses.Field, positional: bool) -> inspect.Parameter:
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD if positional else inspect.Parameter.KEYWORD_ONLY
    default = default_of(field) if has_default(field) else inspect.Parameter.empty
    return inspect.Parameter(field.name, kind, default=default, annotation=field.type)


def arguments_section(config_class: type) -> str:
    """The ``Args:`` section of a docstring: each declared field and its help, in order."""
    lines = ["Args:"]
    for field, declared_option in declared(config_class):
        if not declared_option.api:
            continue
        lines += textwrap.wrap(f"{field.name}: {declared_option.help}", width=104, initial_indent="    ",
                               subsequent_indent="        ")
    return "\n".join(lines)


def keywords_of(config_class: type) -> Callable[[Callable[[Any], Result]], Callable[..., Result]]:
    """The decorated ``function(config)`` as an API function taking ``config_class``'s declared fields: those
    marked ``positional`` by position or keyword, in field order, the rest by keyword (those it offers:
    ``Option.api``)."""
    fields = [(field, declared_option) for field, declared_option in declared(config_class)
              if declared_option.api]
    positional = [field for field, declared_option in fields if declared_option.positional]
    if [field for field, _ in fields[:len(positional)]] != positional:
        raise TypeError(f"{config_class.__name__}: the positional options must come first")
    signature = inspect.Signature([_parameter(field, declared_option.positional) for field, declared_option in fields])

    def decorate(function: Callable[[Any], Result]) -> Callable[..., Result]:
        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Result:
            return function(config_class(**signature.bind(*args, **kwargs).arguments))

        del call.__wrapped__  # help() and IDEs read the signature below
        call.__signature__ = signature.replace(  # type: ignore[attr-defined]
            return_annotation=inspect.signature(function).return_annotation)
        doc = inspect.cleandoc(function.__doc__ or "")
        call.__doc__ = f"{doc}\n\n{arguments_section(config_class)}\n"
        return call

    return decorate


__all__ = ["arguments_section", "keywords_of"]
