"""Writing outputs so that a failed run never leaves half-written ones: atomic files and folders,
temporaries named by their process (and removed once it is gone), a full disk reported in one line, and
the JSON layout of results files (whether an output may be written at all is ``seedr.io.outputs``)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from seedr.io.errors import DataError, disk_full, no_space_left


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


class AtomicFiles:
    """The files of one ``atomic_files`` block: ``write(path)`` writes one to a temporary beside it, and the
    block moves them all into place, in the order written, only once it ends without error."""

    def __init__(self) -> None:
        self._written: list[tuple[Path, Path]] = []  # (temporary, path), in the order written

    @contextmanager
    def write(self, path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
        """A stream to a temporary beside ``path`` (the temporaries of killed processes cleaned first,
        ``remove_stale_temporaries``); on an error it is removed, and a full disk is one line naming
        ``path``."""
        path = Path(path)
        if path.is_dir():
            raise DataError(path, "is a folder, expected a file to write")
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path)
        handle, name = tempfile.mkstemp(dir=path.parent, prefix=_temporary_prefix(path), suffix=".tmp")
        os.close(handle)
        temporary = Path(name)
        os.chmod(temporary, _default_mode(directory=False))
        try:
            with open(temporary, mode, encoding=None if "b" in mode else encoding) as stream:
                yield stream
                stream.flush()
                os.fsync(stream.fileno())
        except BaseException as error:
            temporary.unlink(missing_ok=True)  # never moved into place, even if the caller goes on
            if disk_full(error):
                raise no_space_left(path) from None
            raise
        self._written.append((temporary, path))


@contextmanager
def atomic_files() -> Iterator[AtomicFiles]:
    """Write a command's output files as one unit: all of them, or none.

    Each file is written to a temporary (``AtomicFiles.write``); only when every one is written are they
    moved into place, in the order written. On any error every temporary is removed and the files already
    at those paths are left untouched, so a full disk at the second file leaves no first one behind (a
    run's record without its run, which would refuse the next attempt).

    Example:
        >>> with atomic_files() as files:
        ...     with files.write("run.trec.json") as stream: ...
        ...     with files.write("run.trec") as stream: ...
    """
    files = AtomicFiles()
    try:
        yield files
        for temporary, path in files._written:
            try:
                os.replace(temporary, path)
            except OSError as error:  # a folder's new entry may need a block the disk no longer has
                if disk_full(error):
                    raise no_space_left(path) from None
                raise
    except BaseException:
        for temporary, _ in files._written:
            temporary.unlink(missing_ok=True)
        raise


@contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Write to a temporary file beside ``path`` and move it into place only on success (``atomic_files``
    of one file).

    On any error the temporary file is removed and an existing ``path`` is left untouched; the
    temporaries of killed processes are cleaned first (``remove_stale_temporaries``).
    """
    with atomic_files() as files, files.write(path, mode, encoding) as stream:
        yield stream


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


def json_text(data: Any) -> str:
    """``data`` as JSON indented by two, each list of scalars (numbers, strings, booleans, nulls) on one
    line: a results file's per-query scores stay about a quarter of the size one value per line gives them
    (the runner, ``record`` and the GPU pack's ``combine`` write results.json so)."""
    inline: list[str] = []
    marker = f"@inline-{os.getpid()}-{id(inline)}-"

    def packed(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: packed(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            if value and all(item is None or isinstance(item, str | int | float | bool) for item in value):
                inline.append(json.dumps(list(value), separators=(",", ":")))
                return f"{marker}{len(inline) - 1}"
            return [packed(item) for item in value]
        return value

    text = json.dumps(packed(data), indent=2)
    return re.sub(f'"{re.escape(marker)}(\\d+)"', lambda match: inline[int(match.group(1))], text)


def write_jsonl(path: str | os.PathLike, records: Iterator[dict[str, Any]] | list[dict[str, Any]]) -> int:
    """Atomically write records as JSON lines; returns how many were written."""
    count = 0
    with atomic_write(path) as stream:
        for record in records:
            stream.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    return count
