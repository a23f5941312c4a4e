"""Where a stage's input comes from: one rule, used by every stage that reads a corpus, queries or questions.

Each path a user gives (``--corpus``, ``--queries``, ``--questions``, ``--qa-answers`` ...; the options
are repeatable) is

- a **file** — read as is (``.gz``/``.xz``/``.bz2`` transparently);
- a **glob** — ``'wiki/enwiki-*.jsonl.xz'``, quoted so that the shell leaves it to seedr (unquoted, the shell
  expands it into several words, and an option takes one): the matching files, in name order;
- a **folder** — a data-set folder (one made by ``seedr prepare``, or a BEIR folder: it holds
  ``prepared.json`` or ``corpus.jsonl``) stands for its file of the kind asked for (``corpus.jsonl``,
  ``queries.jsonl``); any other folder is a folder of shards: every file inside, in name order, except
  hidden files and documentation (README, LICENSE, ``*.md``).

The files of all paths are read one after another, in the order given.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from pathlib import Path

from seedr.data.io import OUTPUT_MARKERS, DataError

#: The file a data-set folder holds for each kind of input (kinds without one have no default).
MAIN_FILES = {"corpus": "corpus.jsonl", "queries": "queries.jsonl"}
#: The file that marks a folder as made by ``seedr prepare`` (``seedr.data.prepare``).
PREPARED_MARKER = OUTPUT_MARKERS["prepared corpus"]
#: Files that mark a folder as a data set rather than a folder of shards.
DATA_SET_MARKERS = (PREPARED_MARKER, "corpus.jsonl")
#: What a reader accepts: one path, or several (files, quoted globs, folders).
Sources = str | os.PathLike | Iterable[str | os.PathLike]

_DOCUMENTATION = ("readme", "license", "licence", "copying", "notice")


def _is_data_file(path: Path) -> bool:
    name = path.name.lower()
    return (path.is_file() and not name.startswith(".") and not name.startswith(_DOCUMENTATION)
            and not name.endswith(".md"))


def _folder_files(folder: Path, kind: str) -> list[Path]:
    if any((folder / marker).is_file() for marker in DATA_SET_MARKERS):
        main = MAIN_FILES.get(kind)
        if main is None or not (folder / main).is_file():
            wanted = f"no {main}" if main else f"no single file of {kind}"
            raise DataError(folder, f"this data-set folder holds {wanted}: name the {kind} file itself")
        return [folder / main]
    inside = sorted(path for path in folder.iterdir() if _is_data_file(path))
    if not inside:
        raise DataError(folder, f"the folder holds no {kind} files")
    return inside


def input_files(paths: Sources, kind: str = "corpus") -> list[Path]:
    """The files ``paths`` name (files, quoted globs, folders; see the module docstring), in order.

    ``kind`` (``corpus``, ``queries``, ``questions`` ...) picks a data-set folder's file and names
    the input in errors. A file named twice is read once.

    Raises:
        DataError: a path that does not exist, a glob that matches no file, a folder without files.

    Example:
        >>> input_files(["../shared/data/wiki"])             # the eight shards  # doctest: +SKIP
        >>> input_files("../shared/data/wiki/*-0[01].jsonl.xz")  # two of them    # doctest: +SKIP
        >>> input_files("runs/wiki-passages")                 # [runs/wiki-passages/corpus.jsonl]  # doctest: +SKIP
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    files: list[Path] = []
    for given in paths:
        path = Path(given).expanduser()
        if path.is_dir():
            found = _folder_files(path, kind)
        elif path.is_file():
            found = [path]
        elif glob.has_magic(str(path)):
            found = sorted(Path(match) for match in glob.glob(str(path)) if _is_data_file(Path(match)))
            if not found:
                raise DataError(path, f"no {kind} file matches this pattern")
        else:
            raise DataError(path, f"no such {kind} file or folder")
        files.extend(found)
    return list(dict.fromkeys(files))


__all__ = ["DATA_SET_MARKERS", "MAIN_FILES", "PREPARED_MARKER", "Sources", "input_files"]
