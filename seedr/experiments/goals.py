"""An experiment file's goals (``goals:``): an issue's goals over several claims, each judged by the one
standard of every verdict (``seedr.experiments.record.verdicts.goal_results``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seedr.io import DataError

#: What a goal's rows are judged on: their comparison (its verdict) or their target.
GOAL_JUDGES = ("comparison", "target")


@dataclass
class Goal:
    """A goal of an issue over several claims (those naming it in their ``goal``): ``statement`` says it;
    it is met when at least ``needs`` of its rows (all of them where None) are shown — their comparison
    significant, after the experiment's Holm correction, in the expected direction, or, ``on: target``,
    their condition's figure significantly beyond the row's ``target`` (over its seeds) — and "in
    direction, not shown" when that many are in the expected direction without it
    (``seedr.experiments.record.verdicts.goal_results``)."""

    statement: str
    needs: int | None = None
    on: str = "comparison"


def read_goals(entries: dict[str, Any], claims: Sequence[Any], substituted: Callable[[Any], Any],
               path: Path) -> dict[str, Goal]:
    """The file's goals, their variables filled in (``substituted``), each claim's ``goal`` checked to name
    one of them; a ``DataError`` naming the file and the field otherwise."""
    goals = {}
    for name, entry in entries.items():
        try:
            goals[str(name)] = Goal(**substituted(entry))
        except TypeError as error:
            raise DataError(path, f"goals.{name}: {error}", field="goals") from None
        if goals[str(name)].on not in GOAL_JUDGES:
            raise DataError(path, f"goals.{name}: on must be one of {', '.join(GOAL_JUDGES)}", field="goals")
    for index, claim in enumerate(claims):
        unknown = sorted(set(claim.goals) - set(goals))
        if unknown:
            raise DataError(path, f"claims[{index}]: goal {unknown} is none of the file's goals "
                            f"({', '.join(goals) or 'none'})", field="claims")
        if claim.target is None and any(goals[name].on == "target" for name in claim.goals):
            raise DataError(path, f"claims[{index}]: a goal on targets counts rows with a target; this one "
                            "has none", field="claims")
    return goals
