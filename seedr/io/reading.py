"""Reading input files: transparent ``.gz/.xz/.bz2``, line-numbered text and JSON Lines, clear
errors for corrupt or truncated streams."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from seedr.io.errors import TOO_DEEP, DataError, json_problem, require_file

_OPENERS = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}


#: What a truncated or corrupt compressed file raises while it is read: EOFError (truncated gzip, xz,
#: bz2), gzip.BadGzipFile / OSError (not gzip; bz2's "Invalid data stream"), lzma.LZMAError, zlib.error.
CORRUPT_STREAM_ERRORS = (EOFError, OSError, lzma.LZMAError, zlib.error)


def open_binary(path: str | os.PathLike) -> IO[bytes]:
    """Open a file for reading bytes, decompressing ``.gz``, ``.xz`` and ``.bz2`` on the fly (whatever the
    suffix's case: ``corpus.JSONL.XZ`` too)."""
    path = require_file(path)
    return _OPENERS.get(path.suffix.lower(), open)(path, "rb")


def _corrupt(path: str | os.PathLike, error: BaseException, line: int | None = None) -> DataError:
    """The ``DataError`` for a read that failed inside the (de)compressor."""
    suffix = Path(path).suffix
    kind = f"truncated or corrupt {suffix} file" if suffix.lower() in _OPENERS else "unreadable file"
    detail = str(error) or type(error).__name__
    return DataError(path, f"{kind} ({detail})", line=line)


#: The byte-order mark some editors (Notepad, Excel's "UTF-8 CSV") put at the start of a UTF-8 file.
BOM = "\ufeff"


def iter_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Stream ``(line_number, text)`` of a (possibly compressed) UTF-8 file, without its newline.

    Streams: a whole corpus shard is never held in memory. A byte-order mark opening the file is
    dropped (``utf-8-sig``), so that it is never glued to the first id. Undecodable bytes, and a
    truncated or corrupt compressed stream, raise a ``DataError`` naming the line.
    """
    with open_binary(path) as raw:
        number = 0
        lines = iter(raw)
        while True:
            try:
                data = next(lines)
            except StopIteration:
                return
            except CORRUPT_STREAM_ERRORS as error:
                raise _corrupt(path, error, line=number + 1) from None
            number += 1
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as error:
                raise DataError(path, f"bytes that are not UTF-8 ({error.reason} at byte {error.start})",
                                line=number) from None
            if number == 1 and text.startswith(BOM):
                text = text[len(BOM):]
            yield number, text.rstrip("\r\n")


def read_bytes(path: str | os.PathLike) -> bytes:
    """The whole (decompressed) content of a file; a corrupt or truncated stream is a ``DataError``."""
    try:
        with open_binary(path) as raw:
            return raw.read()
    except CORRUPT_STREAM_ERRORS as error:
        raise _corrupt(path, error) from None


def parse_json(text: str, path: str | os.PathLike, line: int | None = None) -> Any:
    """``json.loads(text)``, its failures a ``DataError`` naming ``path`` and the line: malformed JSON, JSON
    nested past the recursion limit (which ``json`` raises as ``RecursionError``) and integers of more digits
    than Python converts (its plain ``ValueError``). A text whose line is not given (a whole document) is
    located by the decoder's line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise DataError(path, json_problem(error), line=line if line is not None else error.lineno) from None
    except RecursionError:
        raise DataError(path, TOO_DEEP, line=line if line is not None else 1) from None
    except ValueError as error:  # "Exceeds the limit (4300 digits) for integer string conversion"
        raise DataError(path, f"malformed JSON: {str(error).split(';')[0]}", line=line) from None


def iter_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """Stream ``(line_number, object)`` from a JSON-lines file; blank lines are skipped."""
    for number, text in iter_lines(path):
        if not text.strip():
            continue
        record = parse_json(text, path, number)
        if not isinstance(record, dict):
            raise DataError(path, f"expected a JSON object, got {type(record).__name__}", line=number)
        yield number, record


def read_text(path: str | os.PathLike) -> str:
    """A whole (possibly compressed) UTF-8 file, with or without a byte-order mark; a folder, a missing file,
    a corrupt stream or bytes that are not UTF-8 are a ``DataError`` naming the file (and the line)."""
    data = read_bytes(path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise DataError(path, "bytes that are not UTF-8", line=line) from None


def read_json(path: str | os.PathLike) -> Any:
    """Read a whole (possibly compressed) UTF-8 JSON document, with or without a byte-order mark, with
    errors that name the file and line."""
    return parse_json(read_text(path), path)
