"""Low-level I/O shared by every reader: transparent compression, line-numbered parsing, clear errors,
atomic writes (so a failed run never leaves half-written output)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


class DataError(ValueError):
    """Bad input: names the file, the (1-based) line and the field at fault."""

    def __init__(self, path: str | os.PathLike, message: str, line: int | None = None,
                 field: str | None = None) -> None:
        self.path, self.line, self.field, self.reason = str(path), line, field, message
        where = self.path + (f", line {line}" if line is not None else "")
        what = f"field {field!r}: " if field else ""
        super().__init__(f"{where}: {what}{message}")


_OPENERS = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}


def open_binary(path: str | os.PathLike) -> IO[bytes]:
    """Open a file for reading bytes, decompressing ``.gz``, ``.xz`` and ``.bz2`` on the fly."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, "no such file")
    return _OPENERS.get(path.suffix, open)(path, "rb")


def iter_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Stream ``(line_number, text)`` of a (possibly compressed) UTF-8 file, without its newline.

    Streams: a whole corpus shard is never held in memory. Undecodable bytes raise a ``DataError``
    naming the line.
    """
    with open_binary(path) as raw:
        for number, data in enumerate(raw, start=1):
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as error:
                raise DataError(path, f"bytes that are not UTF-8 ({error.reason} at byte {error.start})",
                                line=number) from None
            yield number, text.rstrip("\r\n")


def iter_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """Stream ``(line_number, object)`` from a JSON-lines file; blank lines are skipped."""
    for number, text in iter_lines(path):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as error:
            raise DataError(path, f"malformed JSON ({error.msg} at column {error.colno})", line=number) from None
        if not isinstance(record, dict):
            raise DataError(path, f"expected a JSON object, got {type(record).__name__}", line=number)
        yield number, record


def read_json(path: str | os.PathLike) -> Any:
    """Read a whole (possibly compressed) JSON document, with errors that name the file and line."""
    with open_binary(path) as raw:
        data = raw.read()
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise DataError(path, "bytes that are not UTF-8", line=line) from None
    except json.JSONDecodeError as error:
        raise DataError(path, f"malformed JSON ({error.msg} at column {error.colno})", line=error.lineno) from None


def require(record: dict[str, Any], field: str, path: str | os.PathLike, line: int,
            kind: type | tuple[type, ...] = str, allow_empty: bool = False) -> Any:
    """Fetch ``record[field]`` or raise a ``DataError`` naming file, line and field."""
    if field not in record or record[field] is None:
        raise DataError(path, "missing", line=line, field=field)
    value = record[field]
    if kind is str and isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)  # numeric ids are common (SciFact's _id, MS MARCO's pid)
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise DataError(path, f"expected {names}, got {type(value).__name__}", line=line, field=field)
    if not allow_empty and isinstance(value, str | list) and not (value.strip() if isinstance(value, str) else value):
        raise DataError(path, "empty", line=line, field=field)
    return value


def unique_id(seen: dict[str, int], value: str, path: str | os.PathLike, line: int | None,
              field: str = "id") -> str:
    """Remember that ``value`` was read on ``line``; a value seen before raises a ``DataError`` naming
    both lines (``seen`` maps each id to its line, and is kept by the caller for the whole file)."""
    if value in seen:
        first = f" (first on line {seen[value]})" if seen[value] else ""
        raise DataError(path, f"duplicate {field} {value!r}{first}", line=line, field=field)
    seen[value] = line or 0
    return value


def _default_mode(directory: bool) -> int:
    """The mode a plain ``open``/``mkdir`` would give under the current umask (mkstemp uses 0600/0700)."""
    umask = os.umask(0)
    os.umask(umask)
    return (0o777 if directory else 0o666) & ~umask


@contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Write to a temporary file beside ``path`` and move it into place only on success.

    On any error the temporary file is removed and an existing ``path`` is left untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    os.chmod(temporary, _default_mode(directory=False))
    try:
        with open(temporary, mode, encoding=None if "b" in mode else encoding) as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@contextmanager
def atomic_directory(path: str | os.PathLike) -> Iterator[Path]:
    """Build a directory under a temporary name and rename it into place only on success.

    An existing directory at ``path`` is replaced only once the new one is complete.
    """
    import shutil

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    temporary.chmod(_default_mode(directory=True))
    try:
        yield temporary
        if path.exists():
            backup = path.with_name(f".{path.name}.old")
            shutil.rmtree(backup, ignore_errors=True)
            os.replace(path, backup)
            os.replace(temporary, path)
            shutil.rmtree(backup, ignore_errors=True)
        else:
            os.replace(temporary, path)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def write_jsonl(path: str | os.PathLike, records: "Iterator[dict[str, Any]] | list[dict[str, Any]]") -> int:
    """Atomically write records as JSON lines; returns how many were written."""
    count = 0
    with atomic_write(path) as stream:
        for record in records:
            stream.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    return count


__all__ = ["DataError", "open_binary", "iter_lines", "iter_jsonl", "read_json", "require", "unique_id", "atomic_write",
           "atomic_directory", "write_jsonl"]
