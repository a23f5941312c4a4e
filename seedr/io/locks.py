"""The output lock: one process writes an output at a time, and a lock left by a killed process is
taken over."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from seedr.io.errors import DataError
from seedr.io.writing import _HOST, _temporary_prefix, process_alive

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
