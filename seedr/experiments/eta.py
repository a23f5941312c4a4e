"""An experiment's progress line and its ETA, estimated from the units' sizes from the first unit on.

Each unit of work is sized before it runs (``seedr.experiments.sizing``): training
and dense retrieval in floating-point operations (``UnitWork.compute``), set-up and analysis steps one
each. Units of a kind that has run take its measured time per unit of size. Arithmetic-bound units of a
kind that has not run yet are estimated from the machine's measured matrix-product rate
(``seedr.hardware.matmul_rate``) and the share of it such work reaches (``SHARE_OF_MATMUL``), corrected by
how long the units of the same sort (pre-training, fine-tuning, inference; else any) that have run took
against the same estimate; the ETA says "about" while any of it rests on such an estimate. Other units of
a kind not yet run, and the units of models it cannot size (the BoW-MLP), are counted apart.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

#: The share of ``seedr.hardware.matmul_rate`` that seedr's pre-training, fine-tuning and encoding reach,
#: by the dtype they compute in, as their sizes (``seedr.experiments.sizing``) count operations
#: (``multiply_adds_per_example`` × 2, × 3 for a training step's backward pass): each unit's size over the
#: seconds its ``step.json`` or ``settings.json`` records, over the rate. Measured on the 2-core Intel Xeon
#: (AVX512-BF16) on ``seedr demo`` in bf16 and in float32 and on ``reqa_from_base`` in bf16: pre-training
#: 0.17-0.22 in bf16 and 0.38-0.42 in float32; fine-tuning, sized at the lengths its batches are padded to,
#: 0.16-0.25 in bf16 and as much as pre-training in float32 (1.0×, the same run); encoding 0.37-0.59 and
#: 0.49-0.6. The float32 rate itself varies by a fifth between measurements. Other dtypes (float16) take
#: bf16's. A kind's own rate replaces them once a unit of it has run, and the correction from the units
#: that have run carries them to other machines (a GPU reaches far less of its rate on models this small).
SHARE_OF_MATMUL = {"pre-training": {"float32": 0.4, "bfloat16": 0.19},
                   "fine-tuning": {"float32": 0.4, "bfloat16": 0.2},
                   "inference": {"float32": 0.55, "bfloat16": 0.5}}


@dataclass(frozen=True)
class UnitWork:
    """What one unit of an experiment computes, sized before it runs.

    Attributes:
        kind: units of one kind take time in proportion to their size ("pre-training (seed)",
            "fine-tuning", "dense retrieval", "BM25 on heldout", "retrieval_task").
        size: in the kind's measure; ``None`` while it depends on what an earlier unit makes.
        compute: ``"pre-training"``, ``"fine-tuning"`` or ``"inference"`` for arithmetic-bound work, whose
            size is then its floating-point operations; ``None`` for the rest (one per unit).
        dtype: what arithmetic-bound work computes in ("float32", "bfloat16").
    """

    kind: str
    size: float | None = 1.0
    compute: str | None = None
    dtype: str = "float32"


#: A unit's work, asked when the ETA needs it (a size may depend on what an earlier unit made).
Work = Callable[[], UnitWork]


class Progress:
    """Units of work done / to do, with an ETA from the units' sizes: "ETA 0:04:10", "ETA about
    0:04:10" while part of it is estimated from the machine's matrix-product rate, "+ 3 units not yet
    timed" for units it cannot size yet."""

    def __init__(self, units: dict[Path, Work], console: Console,
                 matmul_rate: Callable[[str], float] | None = None) -> None:
        """``matmul_rate(dtype)``: the machine's FLOP/s at matrix products (``seedr.hardware.matmul_rate``
        on the device the experiment trains on), measured on first need and once per dtype."""
        self.units, self.pending = units, list(units)
        self.total, self.done = len(units), 0
        self.seconds: dict[str, float] = {}
        self.sizes: dict[str, float] = {}
        # arithmetic-bound units run, by ``compute``: [seconds taken, seconds estimated from the matmul rate]
        self.computed: dict[str, list[float]] = {}
        self.console = console
        self.started = time.perf_counter()
        self._matmul_rate = matmul_rate
        self._rates: dict[str, float] = {}
        self._sized: dict[Path, UnitWork] = {}

    def work(self, unit: Path) -> UnitWork:
        """``unit``'s work, asked once it is known (sizing may read a corpus)."""
        if unit in self._sized:
            return self._sized[unit]
        work = self.units[unit]() if unit in self.units else UnitWork("other", None)
        if work.size is not None:
            self._sized[unit] = work
        return work

    def finished(self, unit: Path, what: str, seconds: float | None) -> None:
        self.done += 1
        if unit in self.pending:
            self.pending.remove(unit)
        if seconds is not None:
            work = self.work(unit)
            if work.size:
                self.seconds[work.kind] = self.seconds.get(work.kind, 0.0) + seconds
                self.sizes[work.kind] = self.sizes.get(work.kind, 0.0) + work.size
                estimate = self._from_matmul(work)
                if estimate is not None:
                    taken = self.computed.setdefault(str(work.compute), [0.0, 0.0])
                    taken[0], taken[1] = taken[0] + seconds, taken[1] + estimate
        how = "reused" if seconds is None else f"{seconds:.0f} s"
        self.console.print(f"[{self.done}/{self.total}] {what} ({how}); elapsed "
                           f"{self._clock(time.perf_counter() - self.started)}{self.eta()}", highlight=False)

    def eta(self) -> str:
        """``, ETA h:mm:ss`` of the units left (``about`` where part is estimated from the matrix-product
        rate), ``+ N units not yet timed`` for those it cannot size."""
        if not self.pending:
            return ""
        total, untimed, estimated = 0.0, 0, False
        for unit in self.pending:
            work = self.work(unit)
            guess = self._from_matmul(work) if work.kind not in self.sizes else None
            if work.size is not None and work.kind in self.sizes:
                total += work.size * self.seconds[work.kind] / self.sizes[work.kind]
            elif guess is not None:
                total, estimated = total + guess * self._correction(str(work.compute)), True
            else:
                untimed += 1
        if untimed == len(self.pending):
            return f", ETA once a unit of each kind has run ({untimed} not yet timed)"
        rest = f" + {untimed} unit{'s' if untimed != 1 else ''} not yet timed" if untimed else ""
        return f", ETA {'about ' if estimated else ''}{self._clock(total)}{rest}"

    def _correction(self, compute: str) -> float:
        """Seconds taken per second estimated by the arithmetic-bound units run so far: those of the same
        ``compute`` where one has run, else all of them, else 1."""
        taken = self.computed.get(compute) or [sum(values) for values in zip(*self.computed.values(), strict=True)]
        return taken[0] / taken[1] if taken and taken[1] else 1.0

    def _from_matmul(self, work: UnitWork) -> float | None:
        """Seconds for arithmetic-bound ``work`` at its kind's share of the machine's matrix-product rate."""
        if work.compute is None or work.size is None or self._matmul_rate is None:
            return None
        if work.dtype not in self._rates:
            self._rates[work.dtype] = self._matmul_rate(work.dtype)
        shares = SHARE_OF_MATMUL[work.compute]
        return work.size / (self._rates[work.dtype] * shares.get(work.dtype, shares["bfloat16"]))

    @staticmethod
    def _clock(seconds: float) -> str:
        minutes, seconds = divmod(int(seconds), 60)
        return f"{minutes // 60}:{minutes % 60:02d}:{seconds:02d}"

__all__ = ["SHARE_OF_MATMUL", "Progress", "UnitWork", "Work"]
