"""Where a stage's input comes from: one rule, used by every stage that reads a corpus, queries or questions.

Each path a user gives (``--corpus``, ``--queries``, ``--questions``, ``--qa-answers`` ...; the options
are repeatable) is

- a **file** — read as is (``.gz``/``.xz``/``.bz2`` transparently);
- a **glob** — ``'wiki/enwiki-*.jsonl.xz'``, quoted so that the shell leaves it to seedr (unquoted, the shell
  expands it into several words, and an option takes one): the matching files, in name order;
- a **folder** — a data-set folder (one made by ``seedr prepare``, or a BEIR folder: it holds
  ``prepared.json`` or ``corpus.jsonl``) stands for its file of the kind asked for (``corpus.jsonl``,
  ``queries.jsonl``); a folder written by ``datasets``' ``save_to_disk`` is one input, read as a table
  (``seedr.data.tables``); any other folder is a folder of shards: every file inside, in name order,
  except hidden files and documentation (README, LICENSE, ``*.md``).

The files of all paths are read one after another, in the order given. From Python, a reader also takes
rows in memory instead of paths (``input_sources``): a ``datasets.Dataset``, a pandas ``DataFrame``, a
list of dicts.
"""

from __future__ import annotations

import glob
import itertools
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from seedr.data.tables import Table, is_dataset_folder, open_table, rows_table, table_object_kind
from seedr.io import OUTPUT_MARKERS, DataError

#: The file a data-set folder holds for each kind of input (kinds without one have no default).
MAIN_FILES = {"corpus": "corpus.jsonl", "queries": "queries.jsonl"}
#: The file that marks a folder as made by ``seedr prepare`` (``seedr.data.prepare``).
PREPARED_MARKER = OUTPUT_MARKERS["prepared corpus"]
#: Files that mark a folder as a data set rather than a folder of shards.
DATA_SET_MARKERS = (PREPARED_MARKER, "corpus.jsonl")
#: What a reader accepts: one path, or several (files, quoted globs, folders).
Sources = str | os.PathLike | Iterable[str | os.PathLike]
#: What a reader accepts from Python (``input_sources``): paths, or rows in memory — an iterable of
#: mappings (a list of dicts, a ``datasets.Dataset``), a pandas ``DataFrame``, a ``DatasetDict``, a ``Table``.
Inputs = Sources | Iterable[Mapping[str, Any]] | Table | Any

_DOCUMENTATION = ("readme", "license", "licence", "copying", "notice")


def _is_data_file(path: Path) -> bool:
    name = path.name.lower()
    return (path.is_file() and not name.startswith(".") and not name.startswith(_DOCUMENTATION)
            and not name.endswith(".md"))


def _folder_files(folder: Path, kind: str) -> list[Path]:
    if is_dataset_folder(folder):  # save_to_disk's Arrow shards are one data set (or one per split)
        return [folder]
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


def input_sources(given: Inputs, kind: str = "corpus") -> list[Path | Table]:
    """What a reader reads, one source after another: the files ``input_files`` finds for paths, or one
    ``Table`` for rows in memory — a ``datasets.Dataset`` or ``DatasetDict``, a pandas ``DataFrame``
    (``seedr.data.tables.TABLE_OBJECTS``), or an iterable of mappings (a list of dicts), told from paths
    by its first item.

    Raises:
        DataError: as ``input_files``; items that are neither paths nor mappings.

    Example:
        >>> input_sources("../shared/data/scifact/corpus.jsonl")  # doctest: +SKIP
        [PosixPath('../shared/data/scifact/corpus.jsonl')]
        >>> [str(table) for table in input_sources([{"_id": "1", "text": "Anarchism is a philosophy."}])]
        ['<list>']
    """
    if isinstance(given, Table) or table_object_kind(given) is not None:
        return [open_table(given, kind)]
    if isinstance(given, str | os.PathLike):
        return input_files(given, kind)
    where = f"<{type(given).__name__}>"
    if isinstance(given, Mapping) or not isinstance(given, Iterable):
        return [open_table(given, kind)]  # an error saying what it takes
    items = iter(given)
    first = next(items, None)
    if items is given:  # a one-shot iterator: its first item goes back
        given = itertools.chain([] if first is None else [first], items)
    if isinstance(first, Mapping):
        return [rows_table(given, where)]
    if first is not None and not isinstance(first, str | os.PathLike):
        raise DataError(where, f"holds a {type(first).__name__}: give {kind} files, or rows of named columns (dicts, "
                               "a datasets.Dataset, a pandas DataFrame)")
    return input_files(given, kind)


__all__ = ["DATA_SET_MARKERS", "Inputs", "MAIN_FILES", "PREPARED_MARKER", "Sources", "input_files", "input_sources"]
