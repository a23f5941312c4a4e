"""Name → factory registries (``OBJECTIVES``, ``NEGATIVES``, ``LOSSES``, ...), instead of if/elif dispatch."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """A named collection of factories; an unknown name is an error that lists the valid ones.

    Example:
        >>> LOSSES = Registry("loss")
        >>> @LOSSES.register("triplet")
        ... class TripletLoss: ...
        >>> LOSSES.get("triplet") is TripletLoss
        True
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def decorator(entry: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = entry
            return entry

        return decorator

    def get(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            valid = ", ".join(sorted(self._entries)) or "(none registered)"
            raise KeyError(f"unknown {self.kind} {name!r}; valid names: {valid}") from None

    def check(self, name: str, options: Mapping[str, Any] | None = None) -> None:
        """Raise ``ValueError`` listing the valid options when the factory ``name`` does not take every
        one of ``options`` (without calling it: experiment files are checked before anything runs)."""
        factory: Any = self.get(name)
        accepted = [p for p in inspect.signature(factory).parameters if p not in ("self", "args", "kwargs")]
        unknown = sorted(set(options or {}) - set(accepted))
        if unknown:
            raise ValueError(f"unknown option(s) {unknown} for {self.kind} {name!r}; valid: {accepted}")

    def build(self, name: str, options: Mapping[str, Any] | None = None) -> Any:
        """Call the factory ``name`` with keyword ``options`` (a recipe's ``*_options`` mapping); an
        option the factory does not take is an error listing the ones it does."""
        self.check(name, options)
        return self.get(name)(**dict(options or {}))

    def names(self) -> list[str]:
        return sorted(self._entries)

    def describe(self, name: str | None) -> str | None:
        """The first paragraph of the docstring of the module that defines ``name`` (seedr's modules open
        by citing their paper), e.g. for a model card; ``None`` for a name that is not registered."""
        if not name or name not in self._entries:
            return None
        module = sys.modules.get(getattr(self._entries[name], "__module__", ""))
        return " ".join((getattr(module, "__doc__", None) or "").strip().split("\n\n")[0].split()) or None

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
