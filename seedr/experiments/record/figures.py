"""The figures an experiment records and what each is read against.

Each figure of ``results.json`` — a (task, system, metric) mean — carries the tolerance a re-run may move
it by (``--verify``), measured from the spread of its training seeds where it has several
(``seed_spread``), else the experiment file's number. Each task carries its references (``references``):
its pool's chance level per metric, BM25's value and the floor.

The floor: a verdict between two encoders at chance says nothing, so a claim on a retrieval
metric is judged only when at least one of the two systems it compares reaches the task's floor on that
metric — at least ``FLOOR_CHANCE`` × the chance level (the expected value of a random ranking of the
task's pool, ``seedr.evaluation.chance``), taken on the odds scale so that it stays below 1 where chance
is high (``chance_floor``), and at least ``FLOOR_BM25`` × BM25's value on the same task
(``seedr.experiments.record.verdicts``). Diagnostics (one number per model, no ranking) have no chance level and
no floor.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

#: The floor: a claim is judged only when one of its systems reaches FLOOR_CHANCE × the chance level's
#: odds (``chance_floor``) ...
FLOOR_CHANCE = 5.0
#: ... and FLOOR_BM25 × BM25's value on the claim's task and metric.
FLOOR_BM25 = 0.2


def chance_floor(chance: float) -> float:
    """The value whose odds are ``FLOOR_CHANCE`` times chance's: m / (1 − m) = 5 c / (1 − c), so
    m = 5c / (1 + 4c). Where chance is small this is 5× chance (0.00448 for SciFact nDCG@10's 0.0009);
    where it is high it stays reachable — Top-100 coverage over an NQ-open pool with chance 0.198 asks
    0.553, where 5× chance would ask 0.99, beyond BM25 and any retriever on that pool."""
    return FLOOR_CHANCE * chance / (1 + (FLOOR_CHANCE - 1) * chance)


def floor(chance: float | None, bm25: float | None) -> float | None:
    """The lowest value a system must reach for a claim on it to be judged: the larger of
    ``chance_floor(chance)`` and ``FLOOR_BM25`` × ``bm25`` (each where known; None if neither is)."""
    parts = [chance_floor(chance)] if chance is not None else []
    parts += [FLOOR_BM25 * bm25] if bm25 is not None else []
    return max(parts) if parts else None


def references(chance: dict[str, float | None], bm25: dict[str, float] | None, bm25_system: str | None = None,
               pool: int | None = None) -> dict[str, Any]:
    """What a task's systems are read against, for its entry in ``results.json``: its ``pool`` size,
    each metric's ``chance`` level, ``bm25``'s value (the run of the condition ``bm25_system``, or a
    reference run when the experiment has no BM25 condition) and the ``floor`` (``floor``)."""
    return {"pool": pool, "chance": chance, "bm25": bm25, "bm25_system": bm25_system,
            "floor": {metric: floor(level, (bm25 or {}).get(metric)) for metric, level in chance.items()}}


def seed_spread(comparisons: dict[str, dict[str, Any]], groups: dict[str, list[str]]) -> dict[str, Any]:
    """Per task, group (of seeds) and metric: the members' figures, their count and sample standard
    deviation — how far one recipe's figure moves between training seeds (groups of one member, which a
    scale may run, have no spread and are left out)."""
    spread: dict[str, Any] = {}
    for task, comparison in comparisons.items():
        systems = comparison["systems"]
        for group, members in groups.items():
            if len(members) < 2 or not all(member in systems for member in members):
                continue
            for metric in systems[members[0]]:
                values = [systems[member][metric]["mean"] for member in members]
                spread.setdefault(task, {}).setdefault(group, {})[metric] = {
                    "seeds": len(values), "values": values, "sd": statistics.stdev(values)}
    return spread


#: How a figure's tolerance was found: the spread of its seeds, or the experiment file's number
#: (a convention, not a measurement).
MEASURED, NOT_MEASURED = "seeds", "not measured"


def _measured_tolerance(spread: dict[str, Any], groups: dict[str, list[str]], task: str, system: str,
                        metric: str) -> float | None:
    """The tolerance a seed spread implies for one figure: 2√2·sd/√k, the 95% bound (normal) on the
    difference between two independent re-runs of a mean over k seeds — k = 1 for one member of a
    group, k = n for the group's own figure; None where no group of this figure has a measured spread."""
    for group, members in groups.items():
        measured = spread.get(task, {}).get(group, {}).get(metric)
        if measured and system in (group, *members):
            seeds = measured["seeds"] if system == group else 1
            return 2 * math.sqrt(2) * measured["sd"] / math.sqrt(seeds)
    return None


def figures(comparisons: dict[str, dict[str, Any]], tolerance: dict[str, float],
            diagnostics: dict[str, dict[str, float]] | None = None, groups: dict[str, list[str]] | None = None,
            spread: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One entry per (task, system, metric) — task ``diagnostics`` for the diagnose steps' metrics —
    with its value and the tolerance of ``--verify``, measured where it can be: for a figure of a group of
    seeds, or of one of its members, the one its seeds' spread implies (``seed_spread``,
    ``_measured_tolerance``; ``tolerance_from``: "seeds"); for every other figure the experiment file's
    for the metric (0 when it gives none: then a re-run must reproduce it exactly), a convention that no
    re-run has measured (``tolerance_from``: "not measured")."""
    def entry(task: str, system: str, metric: str, value: float) -> dict[str, Any]:
        measured = _measured_tolerance(spread or {}, groups or {}, task, system, metric)
        return {"task": task, "system": system, "metric": metric, "value": value,
                "tolerance": tolerance.get(metric, 0.0) if measured is None else measured,
                "tolerance_from": NOT_MEASURED if measured is None else MEASURED}

    entries = [entry(task, system, metric, values["mean"]) for task, comparison in comparisons.items()
               for system, by_metric in comparison["systems"].items() for metric, values in by_metric.items()]
    entries += [entry("diagnostics", system, metric, value)
                for system, metrics in (diagnostics or {}).items() for metric, value in metrics.items()]
    return entries


def with_seed_sd(comparisons: dict[str, dict[str, Any]], spread: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``comparisons`` with each group's seed SD beside its mean (``seed_sd``, ``seeds`` in the group's
    entry per metric, from ``seed_spread``), in place; returned for convenience."""
    for task, by_group in spread.items():
        for group, by_metric in by_group.items():
            for metric, measured in by_metric.items():
                value = comparisons.get(task, {}).get("systems", {}).get(group, {}).get(metric)
                if value is not None:
                    value.update(seed_sd=measured["sd"], seeds=measured["seeds"])
    return comparisons


__all__ = ["FLOOR_BM25", "FLOOR_CHANCE", "MEASURED", "NOT_MEASURED", "chance_floor", "figures", "floor", "references",
           "seed_spread", "with_seed_sd"]
