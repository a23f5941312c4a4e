"""What the stages share: the types of their inputs, how paths, rows and runs are told apart, and the lock
held on an output for a whole call."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from seedr.io import output_lock

#: A stage's settings: ``{"train.max_steps": 20}`` or ``{"train": {"max_steps": 20}}``.
Settings = Mapping[str, Any]
#: A corpus or queries: a path (file, folder, quoted glob), several paths, a ``datasets.Dataset`` or a list
#: of dicts.
Source = Any
#: Files read by path only: a path (file, folder, quoted glob) or several.
Paths = str | os.PathLike | Sequence[str | os.PathLike]

#: The stages whose settings are a config (``resolve_settings``), with their config classes' modules.
CONFIG_STAGES = ("pretrain", "finetune")


def is_paths(source: Source) -> bool:
    """Whether ``source`` names files (a path, or a list of paths) rather than holding rows in memory."""
    if isinstance(source, str | os.PathLike):
        return True
    return (isinstance(source, Sequence) and not isinstance(source, str | bytes) and len(source) > 0
            and all(isinstance(item, str | os.PathLike) for item in source))


def path_strings(source: Source) -> list[str]:
    """A path or several as the strings a config holds."""
    return [os.fspath(source)] if isinstance(source, str | os.PathLike) else [os.fspath(item) for item in source]


def input_paths(*sources: Any) -> list[Path]:
    """The existing files and folders among a command's inputs (paths, lists of paths, run objects; rows in
    memory and built-in model names are none), for ``seedr.io.check_output`` to keep its output apart."""
    found = []
    for source in sources:
        if source is None or isinstance(source, Mapping) or not (
                isinstance(source, str | os.PathLike) or is_paths(source)):
            continue
        try:
            named = path_strings(source)
        except TypeError:  # a run held in memory only (``SearchRun`` of ``search(out=None)``)
            continue
        found += [Path(path) for path in named if Path(path).exists()]
    return found


def model_name(model: str | os.PathLike | None) -> str | None:
    """A model as a config names it: a built-in name, a folder, or a ``TrainingRun`` (its folder)."""
    return None if model is None else os.fspath(model)


@contextmanager
def locked(out: str | os.PathLike | None) -> Iterator[None]:
    """Hold ``seedr.io.output_lock`` on ``out`` for the whole call, so two runs, from Python or the
    shell, never write one output at once. Under a launcher (``torchrun``, ``accelerate launch``) only the
    main process (``RANK`` 0) holds it."""

    main = os.environ.get("RANK", "0") == "0"
    with output_lock(out) if out is not None and main else nullcontext():
        yield


def length_of(rows: Any) -> int | None:
    """How many rows an in-memory source holds, when it can tell (a generator cannot)."""
    try:
        return len(rows)
    except TypeError:
        return None
