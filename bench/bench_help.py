"""Help latency: ``seedr STAGE --help`` for every stage, against the goal of 2 s.

Each help runs as a user runs it: ``python -m seedr STAGE --help`` (the ``seedr`` command's entry
point) in a fresh process, so the interpreter's start, every import the help makes and its rendering
are counted; nothing is preloaded (``common.PRELOADED`` would hide exactly what is measured). The two
training stages list every settable key with its default, read from their config dataclasses
(``seedr.settings``, which imports no torch), and are also timed with a recipe, whose values the
help then shows (``--config NAME``). Each is timed ``repeats`` times after one untimed run (the
Python files' bytecode and the page cache warm, as for a user's second call); the median is reported,
with the slowest, and the goal is met when every median is under 2 s.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

from common import Goal, Section, Table, main, number, ratio

#: The goal: every stage's ``--help`` answers within this (seconds) on this CPU.
GOAL_SECONDS = 2.0
#: The training stages' help with a recipe's values, timed besides the plain helps.
WITH_RECIPES = (("pretrain", "--config", "seed"), ("finetune", "--config", "dpr"))


def help_seconds(arguments: tuple[str, ...]) -> float:
    """Wall time of ``python -m seedr ARGUMENTS --help`` in a new process (which must succeed)."""
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "seedr", *arguments, "--help"], capture_output=True, text=True,
                            check=False)
    seconds = time.perf_counter() - start
    if result.returncode != 0 or "Usage: seedr" not in result.stdout:
        raise RuntimeError(f"seedr {' '.join(arguments)} --help failed: {result.stderr[-2000:]}")
    return seconds


def run(tiny: bool, threads: int) -> Section:
    from seedr.stages import STAGES

    repeats = 1 if tiny else 5
    cases = [(stage,) for stage in STAGES] + list(WITH_RECIPES)
    measured: dict[str, dict[str, float]] = {}
    for arguments in cases:
        help_seconds(arguments)  # untimed: bytecode and page cache, as a user's second call finds them
        times = [help_seconds(arguments) for _ in range(repeats)]
        measured[" ".join(arguments)] = {"median": statistics.median(times), "max": max(times)}
    section = Section(
        key="help", title="Help latency",
        setup=[f"`python -m seedr STAGE --help` in a fresh process (nothing preloaded), median of {repeats} after "
               f"one untimed run; {len(STAGES)} stages, and the training stages with a recipe (--config)",
               "the training stages' help lists every settable key with its default or the recipe's value, read "
               "from seedr.settings (no torch)"],
        data={"goal_seconds": GOAL_SECONDS, "repeats": repeats, "seconds": measured})
    section.tables.append(Table(
        "Wall time of `seedr ... --help` (s), against the 2 s goal", ["command", "median", "slowest", "of the goal"],
        [[f"seedr {command} --help", number(times["median"]), number(times["max"]),
          ratio(times["median"] / GOAL_SECONDS)] for command, times in measured.items()]))
    slowest = max(measured, key=lambda command: measured[command]["median"])
    section.goals.append(Goal(f"every `seedr STAGE --help` < {GOAL_SECONDS:g} s",
                              f"slowest: {slowest} {number(measured[slowest]['median'])} s",
                              all(times["median"] < GOAL_SECONDS for times in measured.values())))
    return section


if __name__ == "__main__":
    main(run, __doc__.split("\n\n")[0])
