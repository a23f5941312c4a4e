"""The ``seedr`` command: one sub-command per pipeline stage, in data-flow order."""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import socket
import sys
import threading
import time

import typer

from seedr.allocator import keep_freed_memory
from seedr.io.stops import stop_line
from seedr.progress import plain_progress
from seedr.stages import STAGES
from seedr.stages.common import DEBUG_VARIABLE, StageCommand, one_line_warnings
from seedr.version import __version__

app = typer.Typer(
    name="seedr",
    help="Better seeds for dense retrievers: pre-train, fine-tune, encode, index, search, evaluate, report.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"seedr {__version__}")
        raise typer.Exit()


@app.callback()
def main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                      help="Print the version and exit."),
         debug: bool = typer.Option(False, "--debug", help="Show the traceback of an unexpected error, which is "
                                                           "otherwise one line.")) -> None:
    """Better seeds for dense retrievers."""
    one_line_warnings()  # here, where every command starts, from the shell or typer's test runner
    if debug:  # an environment variable, so that the processes a launcher starts see it too
        os.environ[DEBUG_VARIABLE] = "1"


for _stage in STAGES:
    _module = importlib.import_module(f"seedr.stages.{_stage}")
    app.command(name=_stage, cls=getattr(_module, "COMMAND_CLASS", StageCommand))(_module.command)


#: How long a stop signal (SIGTERM, SIGINT) leaves a command to unwind by itself (its temporaries removed,
#: its lock released) before the process ends where it stands: with that end, within 3 s of the signal.
STOP_GRACE_SECONDS = 2.0

_stopped_by: int | None = None  # the signal that stopped the command
_ending = threading.Lock()  # taken by whichever ends a stopped command first: the command or the watcher


def _exit_on_terminate(signal_number: int, frame: object) -> None:
    """SIGTERM (``kill``, a job scheduler, ``timeout``) and SIGINT as an ordinary exit: Python's default for
    SIGTERM ends the process at once, leaving the temporaries of an output half-written; an exit unwinds,
    so ``atomic_write``/``atomic_directory`` remove them and locks are released. A second signal is let
    be: raised inside the cleanup the first one started, it would cut it short (the watcher ends the
    command within the grace period anyway)."""
    global _stopped_by
    if _stopped_by is None:
        _stopped_by = signal_number
        raise SystemExit(128 + signal_number)


def _end_stopped(signal_number: int) -> None:
    """End a stopped command now, with the one line that says what it keeps (``seedr.io.stops``).

    ``os._exit``, not Python's own exit: that finalises the interpreter, a garbage collection over every
    object torch and transformers made, which took 2–5 s after the work had stopped, and during which
    the watcher, a Python thread, can no longer run to cut it. Nothing is lost by skipping it: the
    command's own cleanup ran as it unwound (or is what the watcher's cut gives up), the trackers were
    finished by the trainer, and the standard streams are flushed here."""
    _ending.acquire()  # never released: the other waits here for the process to end
    if os.environ.get("RANK", "0") == "0":  # under a launcher, one line for the whole run
        sys.stderr.write(("\n" if sys.stderr.isatty() else "") + stop_line(signal.Signals(signal_number).name)
                         + "\n")
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed or broken pipe: the exit matters more
            stream.flush()
    os._exit(128 + signal_number)


def _forget_stop_signals() -> None:
    """In a forked child: no wake-up socket (it is the parent's), so the child's signals stay its own."""
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:  # forked from another thread than the main one: Python set none up there
        pass


def _stop_within_seconds() -> None:
    """SIGTERM and SIGINT end a command within ``STOP_GRACE_SECONDS``, whatever it is doing.

    Python runs a signal's handler between two of the main thread's bytecodes, so a command inside one
    long operation (a training step of a large batch on a CPU takes tens of seconds) went on for as long.
    Here the C-level handler also writes the signal to a socket (``signal.set_wakeup_fd``), which a
    watching thread reads at once, torch's kernels releasing the GIL: it gives the main thread the grace
    period to unwind as usual, then ends the process with the stop's line (``_end_stopped``), as the main
    thread does once unwound. What that cut leaves stays safe: the last
    checkpoint is whole (checkpoints are written atomically), the output's lock is the operating system's
    and goes with the process, and temporaries named after the process are removed by the next write to
    that output. No signal mask changes, so the processes a command starts keep the usual signals."""
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    # a forked child (a data loader's worker) shares the socket: a signal to it must not end this process
    os.register_at_fork(after_in_child=_forget_stop_signals)

    def watch(reader: socket.socket, writer: socket.socket) -> None:
        # both held for the process's life by the thread's arguments: a writer garbage-collected would
        # leave its descriptor's number to the next file opened, which every signal would then write to
        received = reader.recv(1)
        if received:
            time.sleep(STOP_GRACE_SECONDS)
            _end_stopped(received[0])

    threading.Thread(target=watch, args=(reader, writer), name="seedr-stop", daemon=True).start()


def run() -> None:
    """The ``seedr`` console command: the allocator policy first (it must precede the run's allocations),
    SIGTERM and SIGINT turned into an exit that cleans up and ends the process at once with one line
    (``_end_stopped``), within 3 s whatever the command is doing (``_stop_within_seconds``), and progress
    lines when the output is not a terminal (``seedr.progress``), then the stage."""
    signal.signal(signal.SIGTERM, _exit_on_terminate)
    signal.signal(signal.SIGINT, _exit_on_terminate)
    _stop_within_seconds()
    keep_freed_memory()
    plain_progress()  # before any bar: output to a file gets progress lines, not carriage-return redraws
    try:
        app(prog_name="seedr")
    finally:
        if _stopped_by is not None:  # unwound: end now, with its line
            _end_stopped(_stopped_by)
