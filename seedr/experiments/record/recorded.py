"""A recorded report in the checkout (``docs/results/NAME``): which experiment file may record one, and which
folder a recording may replace. Read from the files alone, apart from ``docs_results`` (which renders and
checks the figures, over the experiments' libraries), so that ``seedr experiment --record`` and ``--verify``
refuse a file or a folder at once, before the experiment is validated and its stages' libraries imported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seedr.io import DataError


def load_results(path: str | Path) -> dict[str, Any]:
    """A ``results.json`` file, or the one inside a report / results folder."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no recorded results (run `seedr experiment NAME --record` first)")
    return json.loads(path.read_text(encoding="utf-8"))


def recorded_results(folder: Path) -> dict[str, Any]:
    """The results.json of the report ``folder`` holds, or an empty mapping."""
    try:
        recorded = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return recorded if isinstance(recorded, dict) else {}


def shipped_file(name: str) -> tuple[str, ...]:
    """The last parts of the path of experiment ``name``'s own file in a checkout: a report is recorded
    only when that file made it (not a file of the same name elsewhere)."""
    return ("seedr", "experiments", f"{name}.yaml")


def made_by_shipped_file(recorded: dict[str, Any], name: str) -> bool:
    """Whether the results ``recorded`` are of experiment ``name``, run from its own file."""
    file = Path(str(recorded.get("file", "")))
    return recorded.get("experiment") == name and file.parts[-3:] == shipped_file(name)


def check_own_file(path: Path, results_dir: Path) -> None:
    """Refuse to record from the experiment file ``path`` unless it is the checkout's own file of its name
    (``results_dir`` is that checkout's ``docs/results/NAME``): a file of the same name elsewhere would
    replace the experiment's record."""
    own = results_dir.parents[2].joinpath(*shipped_file(path.stem))
    if path.resolve() != own.resolve():
        raise DataError(path, f"--record records only the experiment's own file ({own}); this file is "
                              "another of the same name: run it without --record")


def check_record_destination(results_dir: Path, name: str) -> None:
    """Refuse a ``results_dir`` that a recording of experiment ``name`` may not replace: a link, or anything
    but a folder holding a results.json of that experiment run from its own file. Asked before the
    experiment runs, and again when its report is recorded."""
    if results_dir.is_symlink():
        raise DataError(results_dir, "is a link: a recorded report is a folder of its own; refusing to "
                                     "replace where it leads")
    if results_dir.exists() and not (results_dir.is_dir()
                                     and made_by_shipped_file(recorded_results(results_dir), name)):
        raise DataError(results_dir, f"not a recorded report of experiment {name!r} (a folder holding its "
                                     "results.json): refusing to replace it; move it away to record here")


__all__ = ["check_own_file", "check_record_destination", "load_results", "made_by_shipped_file",
           "recorded_results", "shipped_file"]
