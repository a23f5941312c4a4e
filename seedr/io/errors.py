"""The one error of bad input (``DataError``: file, line, field), and the checks that raise it."""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path
from typing import Any


class DataError(ValueError):
    """Bad input: names the file, the (1-based) line and the field at fault."""

    def __init__(self, path: str | os.PathLike, message: str, line: int | None = None,
                 field: str | None = None) -> None:
        self.path, self.line, self.field, self.reason = str(path), line, field, message
        where = self.path + (f", line {line}" if line is not None else "")
        what = f"field {field!r}: " if field else ""
        super().__init__(f"{where}: {what}{message}")


def require_file(path: str | os.PathLike) -> Path:
    """``path`` as a ``Path``; a ``DataError`` when it is missing or is a folder."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, "no such file")
    if path.is_dir():
        raise DataError(path, "is a folder, expected a file")
    return path


def json_problem(error: json.JSONDecodeError) -> str:
    """What is wrong with a JSON text, for a ``DataError`` (``json``'s own messages may end in "at")."""
    return f"malformed JSON: {error.msg} (column {error.colno})"


#: What a JSON text nested deeper than Python's recursion limit (``[[[…]]]``) is refused with.
TOO_DEEP = "JSON nested too deeply (arrays or objects within each other past Python's recursion limit)"


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


def disk_full(error: BaseException) -> bool:
    """Whether a failed write means the file system (or the user's quota) is full: ``ENOSPC``/``EDQUOT``,
    numpy's short write ("19200 requested and 8160 written", which has no errno) or faiss's message."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(error)
    return ("No space left on device" in text or "Disk quota exceeded" in text
            or re.search(r"\d+ requested and \d+ written", text) is not None)


def no_space_left(path: str | os.PathLike) -> DataError:
    """The one-line error of a write to ``path`` that found the disk full (``disk_full``)."""
    return DataError(path, "no space left on the device (or the quota is used up); the half-written file was "
                           "removed: free some space, then run the command again")
