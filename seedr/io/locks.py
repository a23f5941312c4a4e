"""The output lock: one process writes an output at a time, and the lock of a process that died is free."""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from seedr.io.errors import DataError, disk_full, no_space_left
from seedr.io.writing import _HOST

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


def _lock_holder(lock: Path) -> dict[str, Any]:
    """What the holder of ``lock`` wrote there: ``{}`` if it has not written it yet (or is gone)."""
    try:
        holder = json.loads(lock.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def _is_file(handle: int, lock: Path) -> bool:
    """Whether ``lock`` still names the file open as ``handle``: a holder removes its lock file before
    releasing it, so a taker that opened the file just before may lock one that no longer counts."""
    try:
        named = os.stat(lock)
    except FileNotFoundError:
        return False
    opened = os.fstat(handle)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def _take(lock: Path, path: str | os.PathLike) -> int:
    """Open and lock ``lock`` (``flock``, without waiting), returning its descriptor; a ``DataError``
    naming the holder if another open file holds it, this process's own included."""
    while True:
        handle = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(handle)
            holder = _lock_holder(lock)
            who = (f"process {holder.get('pid')} on {holder.get('host')} (since {holder.get('started')}: "
                   f"{holder.get('command')})" if holder else "a process that is still writing its lock")
            raise DataError(path, f"in use by {who}; wait for it to finish") from None
        except BaseException:
            os.close(handle)
            raise
        if _is_file(handle, lock):
            return handle
        os.close(handle)  # its holder released it meanwhile: take the file now in its place


@contextmanager
def output_lock(path: str | os.PathLike) -> Iterator[Path]:
    """Hold an exclusive lock on output ``path`` (file or folder) for the length of a run.

    The lock is the operating system's (``flock``) on a file beside the output (``lock_path``), so at
    most one process holds it, and a process that dies, however it dies, lets it go. The file names its
    holder (pid, host, start time and command) for the ``DataError`` a second run on the same output
    gets; a file that a dead process left, in this format or an older one, is simply taken. Released on
    exit, errors included, removing the file. A lock that cannot be written (a full disk) is a
    ``DataError`` naming it (the operating system's error names no file), and leaves neither the file nor
    the folders made for it.
    """
    lock = lock_path(path)
    made = [folder for folder in (lock.parent, *lock.parent.parents) if not folder.exists()]
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        handle = _take(lock, path)
        try:
            started = datetime.now(UTC).isoformat(timespec="seconds")
            me = {"pid": os.getpid(), "host": _HOST, "started": started, "command": " ".join(sys.argv)}
            os.ftruncate(handle, 0)  # a stale holder's record
            os.pwrite(handle, json.dumps(me).encode("utf-8"), 0)
        except BaseException:
            _release(handle, lock)
            raise
    except BaseException as error:
        for folder in made:  # deepest first: a lock not taken leaves no folder made for it
            with suppress(OSError):
                folder.rmdir()
        if isinstance(error, OSError) and disk_full(error):  # the OS's error names no file: the lock's
            raise no_space_left(lock) from None
        raise
    try:
        yield lock
    finally:
        _release(handle, lock)


def _release(handle: int, lock: Path) -> None:
    """Remove ``lock`` while still holding it, so no taker locks a file that no longer counts, then let go."""
    if _is_file(handle, lock):
        lock.unlink(missing_ok=True)
    os.close(handle)
