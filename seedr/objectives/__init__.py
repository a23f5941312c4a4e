"""Pre-training objectives, one folder each, found through ``OBJECTIVES``.

An objective is a folder ``seedr/objectives/<name>/`` holding its options (``options.py``: one dataclass,
the ``objective.*`` settings, torch-free, with ``trained_representation``, the pooled vector it trains),
its objective (``objective.py``: the ``seedr.objectives.base.Objective`` subclass whose ``name`` is the
folder's), and the parts only it uses (SEED-Encoder's weak decoder, RetroMAE's enhanced decoder). The
modules several objectives share stay beside the folders (``base``, ``masking``, ``pair_tasks``,
``two_tower``, ``two_tower_options``, ``vocabulary_tables``). A new folder is a new objective: nothing
else names it.

``OBJECTIVES`` finds the folders without importing them, imports an objective's options (no torch) when
settings are resolved, described or refused (``seedr config pretrain``, ``--describe``), and its objective
(torch) only when the objective is asked for. This package and each folder's ``__init__`` import nothing
from seedr, and the options import only the configuration, so that the configuration layer and the layers
above it can read the options (``pyproject.toml`` places ``objectives`` and ``objectives.*.options`` in
the configuration's layer, the rest in the objectives' layer); only the layers above the objectives ask
for an objective's class (``tests/test_import_graph.py``).
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any


class ObjectiveRegistry:
    """The objectives of the package ``package``: each sub-folder with an ``options.py`` and an
    ``objective.py`` is one, under the folder's name; an unknown name is an error that lists the valid ones
    (as ``seedr.registry.Registry``'s)."""

    kind = "objective"

    def __init__(self, package: ModuleType) -> None:
        self.package = package

    def names(self) -> list[str]:
        """The folders that hold an objective, read from the disk each time (no import)."""
        found = []
        for folder in pkgutil.iter_modules(self.package.__path__):
            spec = folder.module_finder.find_spec(folder.name, None) if folder.ispkg else None
            members = {member.name for member in pkgutil.iter_modules(spec.submodule_search_locations or [])
                       } if spec else set()
            if {"options", "objective"} <= members:
                found.append(folder.name)
        return sorted(found)

    def _module(self, name: str, part: str) -> ModuleType:
        if name not in self.names():
            valid = ", ".join(self.names()) or "(none registered)"
            raise KeyError(f"unknown {self.kind} {name!r}; valid names: {valid}")
        return importlib.import_module(f"{self.package.__name__}.{name}.{part}")

    def options(self, name: str) -> type:
        """The options dataclass of objective ``name``: the one its ``options.py`` defines (torch-free)."""
        module = self._module(name, "options")
        return _defined_in(module, dataclasses.is_dataclass, f"one options dataclass for objective {name!r}")

    def get(self, name: str) -> Any:
        """The objective class ``name``: the class its ``objective.py`` defines under that ``name``
        (importing it imports torch)."""
        module = self._module(name, "objective")
        return _defined_in(module, lambda value: getattr(value, "name", None) == name,
                           f"one objective class named {name!r}")

    def describe(self, name: str | None) -> str | None:
        """The first paragraph of the docstring of objective ``name``'s module (it opens by citing its
        paper), e.g. for a model card; ``None`` for a name that is not registered."""
        if not name or name not in self:
            return None
        module = sys.modules[self.get(name).__module__]
        return " ".join((module.__doc__ or "").strip().split("\n\n")[0].split()) or None

    def __contains__(self, name: object) -> bool:
        return name in self.names()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


def _defined_in(module: ModuleType, wanted: Any, what: str) -> type:
    """The one class that ``module`` defines (not imports) and ``wanted`` accepts."""
    found = [value for value in vars(module).values()
             if isinstance(value, type) and value.__module__ == module.__name__ and wanted(value)]
    if len(found) != 1:
        raise TypeError(f"{module.__name__} must define {what}; it defines {len(found)}")
    return found[0]


OBJECTIVES = ObjectiveRegistry(sys.modules[__name__])

__all__ = ["OBJECTIVES", "ObjectiveRegistry"]
