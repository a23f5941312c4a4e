"""An experiment's progress line and its ETA, honest from the first unit: each unit's work is sized
before it runs (``ExperimentStep.work``: tokens × parameters for training, one per set-up step), and
the time per unit of work is measured on the units of that kind that have finished."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

#: A unit's kind of work and its size (``ExperimentStep.work``); ``None``: not known yet.
Work = Callable[[], tuple[str, float | None]]


class Progress:
    """Units of work done / to do, with an ETA from the units' sizes: each kind of work (training,
    retrieval on a task, BM25 ...) takes time in proportion to its size (tokens × parameters for training,
    the model's size × the documents' length for a task's dense retrieval), at the rate its units computed
    so far ran. Units of a kind that has not run yet, or whose size is not known yet (a model another step
    makes), are counted apart rather than guessed: "ETA 0:04:10 + 3 units not yet timed"."""

    def __init__(self, units: dict[Path, Work], console: Console) -> None:
        self.units, self.pending = units, list(units)
        self.total, self.done = len(units), 0
        self.seconds: dict[str, float] = {}
        self.sizes: dict[str, float] = {}
        self.console = console
        self.started = time.perf_counter()

    def finished(self, unit: Path, what: str, seconds: float | None) -> None:
        self.done += 1
        if unit in self.pending:
            self.pending.remove(unit)
        if seconds is not None:
            kind, size = self.units[unit]() if unit in self.units else ("other", None)
            if size:
                self.seconds[kind] = self.seconds.get(kind, 0.0) + seconds
                self.sizes[kind] = self.sizes.get(kind, 0.0) + size
        how = "reused" if seconds is None else f"{seconds:.0f} s"
        self.console.print(f"[{self.done}/{self.total}] {what} ({how}); elapsed "
                           f"{self._clock(time.perf_counter() - self.started)}{self.eta()}", highlight=False)

    def eta(self) -> str:
        """``, ETA h:mm:ss`` of the units left, ``+ N units not yet timed`` for those it cannot size."""
        if not self.pending:
            return ""
        estimate, untimed = 0.0, 0
        for unit in self.pending:
            kind, size = self.units[unit]() if unit in self.units else ("other", None)
            if size is None or kind not in self.sizes:
                untimed += 1
            else:
                estimate += size * self.seconds[kind] / self.sizes[kind]
        if untimed == len(self.pending):
            return f", ETA once a unit of each kind has run ({untimed} not yet timed)"
        rest = f" + {untimed} unit{'s' if untimed != 1 else ''} not yet timed" if untimed else ""
        return f", ETA {self._clock(estimate)}{rest}"

    @staticmethod
    def _clock(seconds: float) -> str:
        minutes, seconds = divmod(int(seconds), 60)
        return f"{minutes // 60}:{minutes % 60:02d}:{seconds:02d}"

__all__ = ["Progress", "Work"]
