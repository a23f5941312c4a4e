"""Experiment files on disk: finding the shipped ones, and reading one into a single mapping — its YAML
merged over the shared block files it extends (``seedr.experiments.spec`` then resolves that mapping).

Experiments that run the same blocks (a task, a pre-training, a fine-tuning recipe) name them instead of
copying them::

    extends: [scifact, minilm_calibrated]   # or a single name: extends: scifact

Each name is a shared file ``NAME.yaml`` of the folder ``shared/`` beside the experiment file or, when that
has none of the name, of the shared files shipped with seedr (``seedr/experiments/shared/``, which
``seedr experiment --list`` does not list): a file of one's own, or a shipped experiment copied elsewhere,
extends the shipped blocks by name. The shared files are merged in the order named, then the experiment
file's own keys over them: mappings merge key by key (``tasks``, ``defaults.finetune``,
``scales.paper.variables``), anything else — a list, a string, a number, null — is replaced whole. Keys are
compared as written: a condition named ``a.b`` is one key, and a setting overridden as ``train.seed`` over a
shared ``train: {seed: …}`` is layered later by the defaults' own rule (``seedr.config.loading.merge_settings``), the
experiment's value winning. A shared file holds any of an experiment file's keys and may extend other
shared files, found the same way; a cycle, a missing or malformed file, and a name that is not a plain
name (``../x``, ``/x``, ``sub/x``: only files of the shared folders can be named) are refused in one line
naming the file. Nothing in these files runs code: they are read as YAML data (``seedr.config.loading.parse_yaml``,
a safe loader).
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from seedr.config.loading import YAMLExpansionError, parse_yaml, yaml_problem
from seedr.io import DataError, read_text

#: The key of an experiment (or shared) file naming the shared files it extends.
EXTENDS = "extends"
#: Top-level keys of an experiment file (and of a shared file, which holds parts of one).
KEYS = {EXTENDS, "title", "description", "variables", "setup", "tasks", "defaults", "conditions", "baseline",
        "groups", "tolerance", "claims", "goals", "scales", "test", "alpha", "resamples", "case_study"}
#: The folder of shared files, beside the experiment files that extend them.
SHARED_FOLDER = "shared"
#: An experiment's name (its file's stem) names ``OUT/reports/NAME`` and the ``docs/results/NAME`` that
#: ``--record`` replaces: a plain identifier, so that no file name reaches another folder (``..yaml``
#: has the stem ``.``, ``...yaml`` the stem ``..``).
EXPERIMENT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
#: A shared file's name in ``extends``: the stem of a file of a shared folder, so that no name reaches
#: another folder (no separator, no ``..``, not hidden) or is too long for a file name.
SHARED_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,99}")


def experiments_dir() -> Path:
    """The experiment files shipped with seedr (``seedr/experiments/*.yaml``), found with
    ``importlib.resources`` so that ``seedr experiment NAME`` works from any folder. seedr is installed
    as files (a wheel unpacks; a checkout is files), so the resource is a folder on disk."""
    return Path(str(resources.files(__package__)))


def experiment_names() -> list[str]:
    """The names ``seedr experiment`` takes, sorted (the shared files, in a folder of their own, are none)."""
    return sorted(path.stem for path in experiments_dir().glob("*.yaml"))


def experiment_titles() -> dict[str, str]:
    """Name → title of every shipped experiment (``seedr experiment --list``), read without validating
    the files, which would import the stages' libraries."""
    return {name: str(read_experiment_file(experiments_dir() / f"{name}.yaml").get("title", ""))
            for name in experiment_names()}


def experiment_path(name: str | Path) -> Path:
    """The file of experiment ``name`` (``seedr/experiments/NAME.yaml``), or ``name`` itself when it is a
    path (a ``.yaml`` name or an existing file)."""
    path = Path(name)
    if path.suffix in (".yaml", ".yml") or path.is_file():
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such experiment file")
        return path
    candidate = experiments_dir() / f"{name}.yaml"
    if path.name != str(name) or not candidate.is_file():  # a plain name: no shared/NAME either
        known = ", ".join(experiment_names()) or "(none)"
        raise FileNotFoundError(f"{candidate}: no experiment {str(name)!r}; known: {known}")
    return candidate


def is_experiment_name(name: str) -> bool:
    """Whether ``name`` is a plain identifier that may name an experiment (``EXPERIMENT_NAME``)."""
    return bool(EXPERIMENT_NAME.fullmatch(name)) and ".." not in name


def check_experiment_name(path: Path) -> str:
    """The experiment's name, ``path``'s stem; a ``DataError`` naming the file when it is not a plain
    identifier (``is_experiment_name``), before anything is read or written."""
    if not is_experiment_name(path.stem):
        raise DataError(path, f"{path.stem!r} is no experiment's name: the file's name before .yaml names "
                              "its report folder (OUT/reports/NAME, docs/results/NAME), so it is letters, "
                              "digits, '_', '-' and '.', starting with a letter, digit or '_', without '..'")
    return path.stem


def checkout(path: str | Path) -> Path | None:
    """The nearest folder above ``path`` holding ``pyproject.toml`` and ``docs/results`` (a checkout of
    seedr, or of a project laid out like it), or None."""
    for folder in Path(path).resolve().parents:
        if (folder / "pyproject.toml").is_file() and (folder / "docs" / "results").is_dir():
            return folder
    return None


def results_folder(path: Path) -> Path:
    """Where the recorded report of the experiment file ``path`` lives: ``docs/results/NAME`` of its
    checkout. Recorded results belong to the repository that holds the file, not to wherever seedr is
    installed, so outside a checkout there is none: ``--record`` and ``--verify`` are refused with one clear
    line, before the file is validated (which imports the stages' libraries)."""
    root = checkout(path)
    if root is None:
        raise DataError(path, "not in a seedr checkout (a folder with pyproject.toml and docs/results); "
                              "--record and --verify read and write docs/results/NAME of one: run them from "
                              "a clone of the repository")
    return root / "docs" / "results" / check_experiment_name(path)


def read_experiment_file(path: Path) -> dict[str, Any]:
    """The mapping of the experiment file ``path``: the shared files it extends, merged in order, under
    its own keys (the module's docstring has the rule). ``DataError`` naming the file at fault."""
    return _SharedFiles(path.parent / SHARED_FOLDER).merged(path, chain=())


def merge_mappings(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``update`` over it: mappings merge key by key, anything else is replaced; keys are
    compared as written (no dotted-key nesting: names may hold dots). Neither input is changed."""
    merged = dict(base)
    for key, value in update.items():
        current = merged.get(key)
        both_mappings = isinstance(current, dict) and isinstance(value, dict)
        merged[key] = merge_mappings(current, value) if both_mappings else value
    return merged


def read_yaml_mapping(path: Path) -> dict[str, Any]:
    """One experiment or shared file as a mapping of known keys (``KEYS``), ``extends`` included."""
    try:
        raw = parse_yaml(read_text(path)) or {}
    except YAMLExpansionError as error:
        raise DataError(path, str(error)) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise DataError(path, f"malformed YAML: {yaml_problem(error)}",
                        line=mark.line + 1 if mark else None) from None
    if not isinstance(raw, dict):
        raise DataError(path, "expected a mapping at the top level")
    unknown = sorted(map(str, set(raw) - KEYS))
    if unknown:
        raise DataError(path, f"unknown key(s) {unknown}; valid: {sorted(KEYS)}")
    return raw


class _SharedFiles:
    """The shared files one experiment file may name: those of the folder ``beside`` it, then the shipped
    ones. Each is read and merged once however many files extend it (a diamond of extends costs no more
    reads: crafted files cannot multiply the work)."""

    def __init__(self, beside: Path) -> None:
        shipped = experiments_dir() / SHARED_FOLDER
        self.folders = [beside] if beside.resolve() == shipped.resolve() else [beside, shipped]
        self.resolved: dict[Path, dict[str, Any]] = {}

    def find(self, path: Path, name: str) -> Path:
        """The shared file ``name`` that ``path`` extends: in the first folder that has it."""
        for folder in self.folders:
            if (folder / f"{name}.yaml").is_file():
                return folder / f"{name}.yaml"
        searched = " nor in ".join(map(str, self.folders))
        present = ", ".join(sorted({file.stem for folder in self.folders for file in folder.glob("*.yaml")}))
        raise DataError(path, f"no shared file {name!r}: no {name}.yaml in {searched} (shared files: "
                              f"{present or '(none)'})", field=EXTENDS)

    def merged(self, path: Path, chain: tuple[Path, ...]) -> dict[str, Any]:
        """``path``'s mapping over the shared files it extends; ``chain``: the files extending it, each
        through the next, to refuse a cycle."""
        if path in self.resolved:
            return self.resolved[path]
        raw = read_yaml_mapping(path)
        merged: dict[str, Any] = {}
        for name in _extended_names(path, raw.pop(EXTENDS, None)):
            shared = self.find(path, name)
            extending = (*chain, path)
            if shared in extending:
                route = " → ".join(file.stem for file in (*extending, shared)[extending.index(shared):])
                raise DataError(path, f"{name!r} extends this file again: {route} (a cycle)", field=EXTENDS)
            merged = merge_mappings(merged, self.merged(shared, extending))
        self.resolved[path] = merge_mappings(merged, raw)
        return self.resolved[path]


def _extended_names(path: Path, extends: Any) -> list[str]:
    """The names of ``extends`` (one name or a list of them), each checked to be a plain name."""
    names = [extends] if isinstance(extends, str) else [] if extends is None else extends
    if not isinstance(names, list):
        raise DataError(path, f"takes a shared file's name or a list of them, not {extends!r}", field=EXTENDS)
    for name in names:
        if not isinstance(name, str) or not SHARED_NAME.fullmatch(name):
            raise DataError(path, f"{name!r} is not a shared file's plain name (letters, digits, '_' and "
                                  f"'-', naming NAME.yaml of a folder {SHARED_FOLDER}/)", field=EXTENDS)
    return names
