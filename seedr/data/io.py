"""Low-level I/O shared by every reader: transparent compression, line-numbered parsing, clear errors,
atomic writes (so a failed run never leaves half-written output)."""

from __future__ import annotations

import bz2
import errno
import gzip
import json
import lzma
import os
import re
import shutil
import socket
import sys
import tempfile
import zlib
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

#: What a truncated or corrupt compressed file raises while it is read: EOFError (truncated gzip, xz,
#: bz2), gzip.BadGzipFile / OSError (not gzip; bz2's "Invalid data stream"), lzma.LZMAError, zlib.error.
CORRUPT_STREAM_ERRORS = (EOFError, OSError, lzma.LZMAError, zlib.error)


def require_file(path: str | os.PathLike) -> Path:
    """``path`` as a ``Path``; a ``DataError`` when it is missing or is a folder."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, "no such file")
    if path.is_dir():
        raise DataError(path, "is a folder, expected a file")
    return path


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


def json_problem(error: json.JSONDecodeError) -> str:
    """What is wrong with a JSON text, for a ``DataError`` (``json``'s own messages may end in "at")."""
    return f"malformed JSON: {error.msg} (column {error.colno})"


#: What a JSON text nested deeper than Python's recursion limit (``[[[…]]]``) is refused with.
TOO_DEEP = "JSON nested too deeply (arrays or objects within each other past Python's recursion limit)"


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


def _default_mode(directory: bool) -> int:
    """The mode a plain ``open``/``mkdir`` would give under the current umask (mkstemp uses 0600/0700)."""
    umask = os.umask(0)
    os.umask(umask)
    return (0o777 if directory else 0o666) & ~umask


_HOST = socket.gethostname()


def _temporary_prefix(path: Path) -> str:
    """``.<name>.<pid>@<host>.``: a temporary beside ``path`` names the process that made it, so one
    left behind by a killed process can be told from one still being written (``remove_stale_temporaries``)."""
    return f".{path.name}.{os.getpid()}@{_HOST}."


def process_alive(pid: int, host: str) -> bool | None:
    """Whether process ``pid`` runs on ``host``: ``None`` (unknown) for another host."""
    if host != _HOST:
        return None
    if pid <= 0:  # os.kill would address a process group
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True


def _remove(path: Path) -> None:
    """Delete ``path`` whatever it is: a symbolic link (never what it points to), a file or a folder."""
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def remove_stale_temporaries(path: str | os.PathLike) -> list[Path]:
    """Delete the temporaries that killed processes of this host left beside ``path`` (by
    ``atomic_write``/``atomic_directory``, or ``.<name>.old`` of a replacement cut short); returns them."""
    path = Path(path)
    if not path.parent.is_dir():
        return []
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.(\d+)@(.+)\.[^.]+\.tmp$")
    removed = []
    for candidate in path.parent.iterdir():
        match = pattern.match(candidate.name)
        stale = match is not None and process_alive(int(match.group(1)), match.group(2)) is False
        if stale or (candidate.name == f".{path.name}.old" and path.exists()):
            _remove(candidate)  # a ``.old`` link (of a link replaced by older versions) too, never its target
            removed.append(candidate)
    return removed


@contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Write to a temporary file beside ``path`` and move it into place only on success.

    On any error the temporary file is removed and an existing ``path`` is left untouched; the
    temporaries of killed processes are cleaned first (``remove_stale_temporaries``).
    """
    path = Path(path)
    if path.is_dir():
        raise DataError(path, "is a folder, expected a file to write")
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=_temporary_prefix(path), suffix=".tmp")
    os.close(handle)
    os.chmod(temporary, _default_mode(directory=False))
    try:
        with open(temporary, mode, encoding=None if "b" in mode else encoding) as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        if disk_full(error):
            raise no_space_left(path) from None
        raise


@contextmanager
def atomic_directory(path: str | os.PathLike) -> Iterator[Path]:
    """Build a directory under a temporary name and rename it into place only on success.

    An existing directory at ``path`` is replaced only once the new one is complete. The temporaries
    of killed processes are cleaned first; a kill between moving the old folder aside and the new
    one in leaves ``.<name>.old``, which is put back when nothing took its place.

    A symbolic link at ``path`` stays: the folder it points to is the one replaced (``--out`` given as a
    link writes where the link leads, as every other stage's output does).
    """
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = path.with_name(f".{path.name}.old")
    if backup.is_dir() and not path.exists():
        os.replace(backup, path)
    remove_stale_temporaries(path)
    temporary = Path(tempfile.mkdtemp(dir=path.parent, prefix=_temporary_prefix(path), suffix=".tmp"))
    temporary.chmod(_default_mode(directory=True))
    try:
        yield temporary
        _open_up_modes(temporary)
        if path.exists():
            _remove(backup)
            os.replace(path, backup)
            os.replace(temporary, path)
            _remove(backup)
        else:
            os.replace(temporary, path)
    except BaseException as error:
        shutil.rmtree(temporary, ignore_errors=True)
        if disk_full(error):  # which of its files, the writer's own error says (``no_space_left``) when it can
            raise no_space_left(path) from None
        raise


def _open_up_modes(directory: Path) -> None:
    """Give files the umask's mode: some writers (safetensors) create theirs 0600 while their siblings
    are 0644, so a shared model folder would be half unreadable to the group."""
    wanted = _default_mode(directory=False)
    for file in directory.rglob("*"):
        if file.is_file() and not file.is_symlink() and (file.stat().st_mode & 0o777) != wanted:
            file.chmod(wanted)


# ------------------------------------------------------------------ output folders

#: The file that marks a folder as the output of each kind of stage; ``check_output_folder`` refuses
#: to write into a folder that holds another kind's.
OUTPUT_MARKERS: dict[str, str] = {
    "prepared corpus": "prepared.json",
    "embeddings": "settings.json",
    "faiss index": "index.json",
    "BM25 index": "seedr_bm25.json",
    "training run": "config.yaml",
    "negatives": "provenance.json",
}


#: What seedr writes into each kind of folder that a stage replaces whole (``fnmatch`` patterns of the
#: names at the top of the folder): ``--overwrite`` refuses a folder holding anything else, which a user
#: put there and which replacing the folder would delete.
OUTPUT_FILES: dict[str, tuple[str, ...]] = {
    "prepared corpus": ("prepared.json", "config.yaml", "run.json", "corpus.jsonl", "queries.jsonl", "qrels",
                        "links.jsonl", "tokenizer"),
    "faiss index": ("index.json", "index.faiss", "ids.txt"),
    "BM25 index": ("seedr_bm25.json", "ids.txt", "*.index.json", "*.index.npy", "*.tokenizer.json",
                   "corpus.jsonl", "corpus.mmindex.json"),
    "negatives": ("provenance.json", "negatives.jsonl"),
}


def foreign_files(path: str | os.PathLike, kind: str) -> list[str]:
    """The names at the top of a ``kind`` folder that seedr does not write there (``OUTPUT_FILES``)."""
    from fnmatch import fnmatchcase

    patterns = OUTPUT_FILES.get(kind)
    if patterns is None:
        return []
    return sorted(entry.name for entry in Path(path).iterdir()
                  if not any(fnmatchcase(entry.name, pattern) for pattern in patterns))


def output_kind(path: str | os.PathLike) -> str | None:
    """The kind of stage output ``path`` is (a key of ``OUTPUT_MARKERS``), ``None`` for anything else."""
    path = Path(path)
    found = [kind for kind, marker in OUTPUT_MARKERS.items() if (path / marker).is_file()]
    if "prepared corpus" in found:  # a prepared folder records its run (config.yaml) too
        return "prepared corpus"
    return found[0] if len(found) == 1 else None


def _a(kind: str) -> str:
    """``kind`` with its indefinite article: "an embeddings", "a faiss index"."""
    return f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind}"


def check_output_folder(path: str | os.PathLike, kind: str, *, replaces: bool, overwrite: bool = False) -> bool:
    """Check, before anything is written, that a stage making a ``kind`` folder may write to ``path``.

    A missing or empty folder is always fine. A file, or a folder that is not a ``kind`` output
    (its marker, ``OUTPUT_MARKERS[kind]``, missing, or another kind's present), is refused: the stage
    would delete it (``replaces``) or mix its files into it. A ``kind`` folder is continued by stages
    that resume (``replaces=False``); stages that replace the folder whole need ``overwrite``.
    Returns whether ``path`` is an existing ``kind`` folder.
    """
    path = Path(path)
    if not path.exists():
        return False
    if not path.is_dir():
        raise DataError(path, f"exists and is a file; --out needs a folder for the {kind}")
    if not any(path.iterdir()):
        return False
    found = output_kind(path)
    if found != kind:
        what = f"{_a(found)} folder" if found else f"not {_a(kind)} folder (no {OUTPUT_MARKERS[kind]})"
        raise DataError(path, f"exists and is {what}; writing the {kind} here would "
                              f"{'delete' if replaces else 'mix into'} it: choose a new --out")
    if replaces and not overwrite:
        raise DataError(path, f"{_a(kind)} folder is already here; pass --overwrite to replace it")
    foreign = foreign_files(path, kind) if replaces else []
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise DataError(path, f"holds {shown}, which seedr did not write; replacing the {kind} would delete "
                              f"{'them' if len(foreign) > 1 else 'it'}: move {'them' if len(foreign) > 1 else 'it'} "
                              "out or choose a new --out")
    return True


LOCK_SUFFIX = ".lock"


def lock_path(path: str | os.PathLike) -> Path:
    """Where ``output_lock`` keeps the lock of output ``path``: ``.<name>.lock`` beside it (a folder
    replaced whole by ``atomic_directory`` would otherwise take its lock away with it).

    The path is resolved first: a symbolic link to the output, or a path through a linked folder, takes
    the output's own lock, so no alias gets round it. The root folder, which has no name, is refused."""
    resolved = Path(path).resolve()
    if not resolved.name:
        raise DataError(path, "is the root of the file system; an output needs a folder of its own (such as "
                              "./out)")
    return resolved.with_name(f".{resolved.name}{LOCK_SUFFIX}")


def _lock_holder(lock: Path) -> dict[str, Any] | None:
    try:
        holder = json.loads(lock.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def _create_whole(source: str, target: Path) -> None:
    """Create ``target`` with the content of ``source``, failing with ``FileExistsError`` if it exists:
    a hard link (never seen half-written), or an exclusive create where the file system has no links."""
    try:
        os.link(source, target)
    except FileExistsError:
        raise
    except OSError:
        with open(target, "x", encoding="utf-8") as stream:
            stream.write(Path(source).read_text(encoding="utf-8"))


@contextmanager
def output_lock(path: str | os.PathLike) -> Iterator[Path]:
    """Hold an exclusive lock on output ``path`` (file or folder) for the length of a run.

    The lock is a file beside the output (``lock_path``) holding the pid, host, start time and command
    of its holder, created atomically (written whole, then hard-linked into place, which fails if the
    lock exists). A second run on the same output gets a ``DataError`` naming the holder; a lock whose
    process is dead (same host) is stale and taken over. Released on exit, errors included.
    """
    from datetime import UTC, datetime

    lock = lock_path(path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    me = {"pid": os.getpid(), "host": _HOST, "started": datetime.now(UTC).isoformat(timespec="seconds"),
          "command": " ".join(sys.argv)}
    handle, temporary = tempfile.mkstemp(dir=lock.parent, prefix=_temporary_prefix(lock), suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        json.dump(me, stream)
    try:
        for _ in range(3):
            try:
                _create_whole(temporary, lock)
                break
            except FileExistsError:
                holder = _lock_holder(lock)
                if holder is None:
                    continue  # released meanwhile
                alive = process_alive(int(holder.get("pid", -1)), str(holder.get("host", "")))
                if holder and alive is False:
                    if _lock_holder(lock) == holder:  # stale: its process is gone (and no one took it over)
                        lock.unlink(missing_ok=True)
                    continue
                who = (f"process {holder.get('pid')} on {holder.get('host')} (since {holder.get('started')}: "
                       f"{holder.get('command')})" if holder else "a process that is still writing its lock")
                raise DataError(path, f"in use by {who}; wait for it to finish, or delete {lock} if that "
                                      "process is gone") from None
        else:
            raise DataError(path, f"could not take the lock {lock}; try again")
    finally:
        Path(temporary).unlink(missing_ok=True)
    try:
        yield lock
    finally:
        if (_lock_holder(lock) or {}).get("pid") == me["pid"]:
            lock.unlink(missing_ok=True)


def write_jsonl(path: str | os.PathLike, records: Iterator[dict[str, Any]] | list[dict[str, Any]]) -> int:
    """Atomically write records as JSON lines; returns how many were written."""
    count = 0
    with atomic_write(path) as stream:
        for record in records:
            stream.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    return count


__all__ = [
    "CORRUPT_STREAM_ERRORS",
    "OUTPUT_FILES",
    "OUTPUT_MARKERS",
    "DataError",
    "atomic_directory",
    "atomic_write",
    "check_output_folder",
    "disk_full",
    "foreign_files",
    "iter_jsonl",
    "iter_lines",
    "json_problem",
    "lock_path",
    "no_space_left",
    "open_binary",
    "output_kind",
    "output_lock",
    "parse_json",
    "process_alive",
    "read_bytes",
    "read_json",
    "remove_stale_temporaries",
    "require",
    "require_file",
    "unique_id",
    "write_jsonl",
]
