"""Columnar inputs: parquet and Arrow files, Hugging Face ``datasets`` folders, and rows in memory, read as
numbered rows by column name wherever a corpus, queries or qrels file is accepted.

A **table** is

- a **parquet file** (``*.parquet``: BEIR's Hugging Face data sets are published so), read a batch of rows
  at a time (``pyarrow.parquet.ParquetFile.iter_batches``), only the columns the reader needs;
- an **Arrow file** (``*.arrow``, ``*.feather``: Arrow IPC, stream or file format);
- a **``datasets`` folder** written by ``Dataset.save_to_disk`` (``state.json`` and ``data-*.arrow``
  files in Arrow IPC stream format), or by ``DatasetDict.save_to_disk`` (``dataset_dict.json`` and one
  such folder per split: the split is picked by ``pick_split``);
- rows **in memory**, from Python: a ``datasets.Dataset`` (or ``DatasetDict``), a pandas ``DataFrame``,
  or any iterable of mappings (a list of dicts).

Files and folders are read with pyarrow alone, and in-memory objects are recognised by what they do
(``column_names``, ``itertuples``), so neither ``datasets`` nor pandas is needed at run time. Each
reader names the columns it wants (``Table.column``: a field by the names it goes by, BEIR's first); a
missing column is one ``DataError`` naming the input, the field and the columns there are. Rows are
numbered from 1, and the number is given as the ``line`` of an error; an input in memory is named by
its type, ``<list>``, ``<Dataset>``, ``<DataFrame>``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from seedr.io import DataError, read_json, require_file
from seedr.registry import Registry

#: Rows per batch read from a file: a few MB of text at most, however big the file.
BATCH_ROWS = 1024


def _one_line(error: BaseException) -> str:
    """pyarrow's message of ``error`` on one line (some span several)."""
    return " ".join(str(error).split()) or type(error).__name__


@dataclass(frozen=True)
class Table:
    """Rows read by column name, from a file, a folder or memory.

    Attributes:
        where: what errors name: the file or folder, or ``<list>``, ``<Dataset>`` ... for rows in memory.
        columns: the column names; ``None`` when unknown (an empty iterable of rows).
        read: the rows, as mappings holding at least the given columns, in order.
        count: how many rows there are, ``None`` when that would mean reading them.
        errors: what ``read`` raises on a damaged file (turned into a ``DataError`` naming the row).
    """

    where: str
    columns: tuple[str, ...] | None
    read: Callable[[Sequence[str]], Iterator[Any]]
    count: Callable[[], int | None]
    errors: tuple[type[BaseException], ...] = ()

    def __str__(self) -> str:
        return self.where  # a DataError given the table names it so

    def column(self, names: Sequence[str], required: bool = True) -> str | None:
        """The first of ``names`` (one field's names, the usual first) that is a column; ``None`` for an
        optional field the table lacks.

        Raises:
            DataError: a required field none of whose names is a column, naming the field and the
                columns there are.
        """
        if self.columns is None:
            return names[0] if required else None
        found = next((name for name in names if name in self.columns), None)
        if found is None and required:
            also = f", nor {', '.join(repr(name) for name in names[1:])}" if len(names) > 1 else ""
            there = ", ".join(map(str, self.columns)) or "none"
            raise DataError(self.where, f"no such column{also}; its columns: {there}", field=names[0])
        return found

    def rows(self, columns: Sequence[str]) -> Iterator[tuple[int, Mapping[str, Any]]]:
        """``(row number, row)`` for every row, counted from 1; a row that is not a mapping, or a damaged
        file, is a ``DataError`` naming the row."""
        rows = self.read(list(columns))
        number = 0
        while True:
            try:
                row = next(rows)
            except StopIteration:
                return
            except self.errors as error:
                raise DataError(self.where, f"truncated or corrupt ({_one_line(error)})", line=number + 1) from None
            number += 1
            if not isinstance(row, Mapping):
                raise DataError(self.where, f"expected a row of named columns (a mapping), got {type(row).__name__}",
                                line=number)
            yield number, row


def pick_split(splits: Sequence[str], kind: str, where: str | os.PathLike, naming: Callable[[str], str]) -> str:
    """The split of a ``DatasetDict`` to read as ``kind``: the only one, or the one named after the kind
    (``corpus``, ``queries``: BEIR's Hugging Face layout).

    Raises:
        DataError: several splits, none named ``kind``; lists them and shows (``naming``) how to name one.
    """
    if len(splits) == 1:
        return splits[0]
    if kind in splits:
        return kind
    listed = ", ".join(splits) or "none"
    example = f": name one, e.g. {naming(splits[0])}" if splits else ""
    raise DataError(where, f"holds the splits {listed}, none of them named {kind!r}; which is the {kind}?{example}")


# ------------------------------------------------------------------------------------------ files and folders


#: What reading a damaged Arrow or parquet file raises: ArrowInvalid (malformed data), OSError (ArrowIOError:
#: a short read), UnicodeDecodeError (bad text).
_ARROW_ERRORS = (pa.ArrowException, OSError, UnicodeDecodeError)


def _rows_of(batches: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """The rows of Arrow record batches, each checked whole first: a damaged file's offsets or text must
    be an error here, not a crash when Python reads the values."""
    for batch in batches:
        batch.validate(full=True)
        yield from batch.to_pylist()


def _unreadable(path: Path, what: str, error: BaseException) -> DataError:
    return DataError(path, f"truncated or corrupt {what} ({_one_line(error)})")


def _open_parquet(path: Path, kind: str) -> Table:
    try:
        metadata = pq.read_metadata(path)  # the footer only: schema and row count
    except _ARROW_ERRORS as error:
        raise _unreadable(path, "parquet file", error) from None

    def read(columns: Sequence[str]) -> Iterator[dict[str, Any]]:
        with pq.ParquetFile(path) as file:
            yield from _rows_of(file.iter_batches(batch_size=BATCH_ROWS, columns=list(columns)))

    return Table(str(path), tuple(metadata.schema.to_arrow_schema().names), read, lambda: metadata.num_rows,
                 _ARROW_ERRORS)


_ARROW_FILE_MAGIC = b"ARROW1"  # an IPC file (Feather 2) opens with it; a stream does not


def _ipc_reader(source: Any) -> Any:
    """An Arrow IPC reader of ``source`` (an open file), file format or stream format."""
    magic = source.read(len(_ARROW_FILE_MAGIC))
    source.seek(0)
    return pa.ipc.open_file(source) if magic == _ARROW_FILE_MAGIC else pa.ipc.open_stream(source)


def _arrow_batches(path: Path) -> Iterator[Any]:
    """The record batches of an Arrow IPC file, read through a memory map."""
    with pa.memory_map(str(path)) as source:
        reader = _ipc_reader(source)
        if isinstance(reader, pa.ipc.RecordBatchFileReader):
            yield from (reader.get_batch(index) for index in range(reader.num_record_batches))
        else:
            yield from reader


def _open_arrow_files(where: Path, files: Sequence[Path]) -> Table:
    """A table over Arrow IPC files read one after another (a ``datasets`` folder's shards)."""
    try:
        with pa.memory_map(str(files[0])) as source:
            columns = tuple(_ipc_reader(source).schema.names)
    except _ARROW_ERRORS as error:
        raise _unreadable(files[0], "Arrow file", error) from None

    def read(wanted: Sequence[str]) -> Iterator[dict[str, Any]]:
        for file in files:
            for batch in _arrow_batches(file):
                missing = [name for name in wanted if name not in batch.schema.names]
                if missing:
                    raise DataError(file, f"no such column; its columns: {', '.join(batch.schema.names)}",
                                    field=missing[0])
                yield from _rows_of([batch.select(list(wanted))])

    def count() -> int:
        try:
            return sum(batch.num_rows for file in files for batch in _arrow_batches(file))
        except _ARROW_ERRORS as error:
            raise _unreadable(where, "Arrow file", error) from None

    return Table(str(where), columns, read, count, _ARROW_ERRORS)


def _dataset_files(folder: Path) -> list[Path]:
    """The data files of a ``Dataset.save_to_disk`` folder, in order, as its ``state.json`` lists them; each
    must resolve inside the folder (no ``..``, absolute path or link leading out)."""
    state_path = folder / "state.json"
    state = read_json(state_path)
    entries = state.get("_data_files") if isinstance(state, dict) else None
    if not isinstance(entries, list) or not entries or not all(
            isinstance(entry, dict) and isinstance(entry.get("filename"), str) for entry in entries):
        raise DataError(state_path, "expected a list of {\"filename\": ...} (the folder's data files)",
                        field="_data_files")
    inside = folder.resolve()
    for entry in entries:  # another dataset's rows, or any file, must not be read as this folder's
        if not (folder / entry["filename"]).resolve().is_relative_to(inside):
            raise DataError(state_path, f"data file {entry['filename']!r} lies outside the folder; a saved "
                                        "dataset's files are inside it", field="_data_files")
    return [require_file(folder / entry["filename"]) for entry in entries]


def _open_dataset_dict(folder: Path, kind: str) -> Table:
    splits = read_json(folder / "dataset_dict.json")
    names = splits.get("splits") if isinstance(splits, dict) else None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise DataError(folder / "dataset_dict.json", "expected a list of split names", field="splits")
    split = folder / pick_split(names, kind, folder, lambda name: folder / name)
    return _open_arrow_files(split, _dataset_files(split))


@dataclass(frozen=True)
class TableFile:
    """A kind of table on disk: how to recognise its path, and how to open it as a ``Table`` of ``kind``
    (corpus, queries, qrels: which split of a ``DatasetDict`` to read)."""

    recognise: Callable[[Path], bool]
    open: Callable[[Path, str], Table]


TABLE_FILES: Registry[TableFile] = Registry("table file")
TABLE_FILES.register("parquet")(TableFile(
    recognise=lambda path: path.suffix.lower() == ".parquet" and path.is_file(),
    open=_open_parquet,
))
TABLE_FILES.register("arrow")(TableFile(
    recognise=lambda path: path.suffix.lower() in (".arrow", ".feather") and path.is_file(),
    open=lambda path, kind: _open_arrow_files(path, [path]),
))
TABLE_FILES.register("dataset")(TableFile(  # Dataset.save_to_disk
    recognise=lambda path: (path / "state.json").is_file(),
    open=lambda path, kind: _open_arrow_files(path, _dataset_files(path)),
))
TABLE_FILES.register("dataset-dict")(TableFile(  # DatasetDict.save_to_disk
    recognise=lambda path: (path / "dataset_dict.json").is_file(),
    open=_open_dataset_dict,
))


def table_file_kind(path: str | os.PathLike) -> str | None:
    """The name in ``TABLE_FILES`` of the table at ``path``; ``None`` for anything else (a text file)."""
    path = Path(path)
    return next((name for name in TABLE_FILES if TABLE_FILES.get(name).recognise(path)), None)


def is_dataset_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder written by ``datasets``' ``save_to_disk``: one input, not shards."""
    return Path(path).is_dir() and table_file_kind(path) is not None


# ---------------------------------------------------------------------------------------------- in memory


def _length(rows: Any) -> Callable[[], int | None]:
    return lambda: len(rows) if hasattr(rows, "__len__") else None


def _is_dataset(value: Any) -> bool:
    """A ``datasets.Dataset`` (or ``IterableDataset``): rows as dicts, and a list of column names."""
    return isinstance(getattr(value, "column_names", None), list) and not isinstance(value, Mapping | str)


def _open_dataset(dataset: Any, kind: str, where: str = "<Dataset>") -> Table:
    def read(columns: Sequence[str]) -> Iterator[Any]:
        return iter(dataset.select_columns(list(columns)))  # the wanted columns only (no image decoding ...)

    return Table(where, tuple(dataset.column_names), read, _length(dataset))


def _open_dataset_dict_object(splits: Mapping[str, Any], kind: str) -> Table:
    names = list(splits)
    split = pick_split(names, kind, "<DatasetDict>", lambda name: f"dataset_dict[{name!r}]")
    return _open_dataset(splits[split], kind, f"<DatasetDict>[{split!r}]")


def _open_data_frame(frame: Any, kind: str) -> Table:
    def read(columns: Sequence[str]) -> Iterator[dict[str, Any]]:
        for start in range(0, len(frame), BATCH_ROWS):
            part = frame.iloc[start:start + BATCH_ROWS][list(columns)].astype(object)  # Python values ...
            part = part.where(part.notna(), None)  # ... and None for NaN / NA, a missing value
            for values in part.itertuples(index=False, name=None):
                yield dict(zip(columns, values, strict=True))

    return Table("<DataFrame>", tuple(frame.columns), read, _length(frame))


@dataclass(frozen=True)
class TableObject:
    """A kind of table in memory: how to recognise the object, and how to open it as a ``Table``."""

    recognise: Callable[[Any], bool]
    open: Callable[[Any, str], Table]


TABLE_OBJECTS: Registry[TableObject] = Registry("table object")
TABLE_OBJECTS.register("Dataset")(TableObject(recognise=_is_dataset, open=_open_dataset))
TABLE_OBJECTS.register("DatasetDict")(TableObject(
    recognise=lambda value: isinstance(value, Mapping) and bool(value) and all(map(_is_dataset, value.values())),
    open=_open_dataset_dict_object,
))
TABLE_OBJECTS.register("DataFrame")(TableObject(
    recognise=lambda value: hasattr(value, "itertuples") and hasattr(value, "columns"),
    open=_open_data_frame,
))


def table_object_kind(value: Any) -> str | None:
    """The name in ``TABLE_OBJECTS`` of the in-memory table ``value``; ``None`` for anything else."""
    return next((name for name in TABLE_OBJECTS if TABLE_OBJECTS.get(name).recognise(value)), None)


def rows_table(rows: Iterable[Any], where: str) -> Table:
    """A table over an iterable of mappings (a list of dicts, a generator of them): its columns are those
    of its first row, and every row is checked as it is read. A list is read afresh each time; a one-shot
    iterator once."""
    if iter(rows) is rows:  # a generator: its first row is taken to see the columns, then put back
        first = next(rows, None)
        rows = itertools.chain([] if first is None else [first], rows)
    else:
        first = next(iter(rows), None)
    # no rows, or a first that is no mapping (``Table.rows`` says so): columns unknown, none checked
    columns = tuple(first) if isinstance(first, Mapping) else None
    return Table(where, columns, lambda wanted: iter(rows), _length(rows))


# --------------------------------------------------------------------------------------------------- opening


def is_table(source: Any) -> bool:
    """Whether ``source`` is read as a table: a ``Table``, a table file or folder, or a table in memory
    (a ``Dataset``, a ``DataFrame``; an iterable of mappings is told only by its first item, see
    ``seedr.data.inputs.input_sources``)."""
    if isinstance(source, Table):
        return True
    if isinstance(source, str | os.PathLike):
        return table_file_kind(source) is not None
    return table_object_kind(source) is not None


def open_table(source: Any, kind: str) -> Table:
    """``source`` as a ``Table`` of ``kind`` (corpus, queries, qrels): a ``Table`` as it is, a table file or
    folder (``TABLE_FILES``), a table in memory (``TABLE_OBJECTS``), or else an iterable of rows.

    Raises:
        DataError: a damaged file, a ``DatasetDict`` without a split to pick, a path that is no table.
    """
    if isinstance(source, Table):
        return source
    if isinstance(source, str | os.PathLike):
        name = table_file_kind(source)
        if name is None:
            raise DataError(source, f"not a table (a parquet or Arrow file, or a datasets folder) of {kind}")
        return TABLE_FILES.get(name).open(Path(source), kind)
    name = table_object_kind(source)
    if name is not None:
        return TABLE_OBJECTS.get(name).open(source, kind)
    if isinstance(source, Mapping | bytes) or not isinstance(source, Iterable):
        raise DataError(f"<{type(source).__name__}>", f"cannot read {kind} from it: give a file, a folder, or rows "
                                                      "(a list of dicts, a datasets.Dataset, a pandas DataFrame)")
    return rows_table(source, f"<{type(source).__name__}>")


__all__ = [
    "BATCH_ROWS",
    "TABLE_FILES",
    "TABLE_OBJECTS",
    "Table",
    "TableFile",
    "TableObject",
    "is_dataset_folder",
    "is_table",
    "open_table",
    "pick_split",
    "rows_table",
    "table_file_kind",
    "table_object_kind",
]
