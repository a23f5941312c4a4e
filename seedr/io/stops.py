"""What a stopped command keeps: the one line a stop (SIGTERM, SIGINT: ``seedr.cli``) ends it with.

The library says what a stop would leave as it goes (``keeps``: a training run, its newest checkpoint),
rather than when the stop comes: a command cut inside a long step never unwinds to say it, and the line
is printed by whichever ends the process first, the command unwound or the watcher that cuts it."""

from __future__ import annotations

#: What a stop keeps of a command that said nothing else (``keeps``): outputs are written whole or not at all.
NOTHING_HALF_WRITTEN = "what it finished writing is kept, nothing half-written"

_kept: str | None = None


def keeps(what: str | None) -> None:
    """Say what a stop from now on leaves (``None``: nothing to say beyond ``NOTHING_HALF_WRITTEN``)."""
    global _kept
    _kept = what


def stop_line(signal_name: str) -> str:
    """The line a command stopped by ``signal_name`` (``SIGTERM``) ends with."""
    return f"stopped by {signal_name}: {_kept or NOTHING_HALF_WRITTEN}"
