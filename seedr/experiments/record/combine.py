"""One experiment whose training seeds ran apart — on leases of their own where one lease is not enough
(``gpu/queue.yaml``: as many seeds a lease as fit its minutes) — judged as if it had run whole.

Each seed's run brings back its ``results.json`` and the per-query scores of every system on every task
(``per_query.json``, ``runner.experiment_scores``). ``combine_seed_runs`` merges the systems of all
seeds, averages each group over its seeds, tests every system against the baseline
(``scoring.compare``) and judges the claims with the seed-aware tests of a whole run
(``verdicts.claim_results``: a t-test over the seeds beside the per-query test), so a claim over three seeds
that ran on three machines reads as one over three seeds. A task's references (its pool, chance levels,
BM25 and floor) do not depend on the seed: they are taken from the first run, and a run whose references
differ is refused, as is a system scored in two runs.
"""

from __future__ import annotations

from typing import Any

from seedr.experiments.record.figures import figures, seed_spread, with_seed_sd
from seedr.experiments.record.verdicts import claim_results
from seedr.experiments.scoring import compare

#: What ``results.json`` holds of a task besides its comparison: the references the task's systems are
#: read against (``seedr.experiments.record.figures.references``).
REFERENCE_KEYS = ("pool", "chance", "bm25", "bm25_system", "floor")


def _merged_scores(experiment: Any, runs: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """``{task: {system: scores}}`` over every run, in the order of the experiment's conditions; a system
    scored differently by two runs is an error (BM25, the same in every run, is kept once)."""
    merged: dict[str, dict[str, Any]] = {}
    for index, run in enumerate(runs):
        for task, systems in run["per_query"].items():
            for system, scores in systems.items():
                kept = merged.setdefault(task, {}).get(system)
                if kept is not None and kept != scores:
                    raise ValueError(f"run {index + 1}: system {system!r} on task {task!r} was already scored "
                                     "differently by another run; each seed's systems must have their own names")
                merged[task][system] = scores
    return {task: {name: systems[name] for name in experiment.conditions if name in systems}
            for task, systems in merged.items()}


def _references(runs: list[dict[str, Any]], task: str) -> dict[str, Any]:
    first = {key: runs[0]["results"]["tasks"][task].get(key) for key in REFERENCE_KEYS}
    for index, run in enumerate(runs[1:], start=2):
        other = {key: run["results"]["tasks"][task].get(key) for key in REFERENCE_KEYS}
        if other != first:
            raise ValueError(f"run {index}: task {task!r} has other references ({other}) than run 1 ({first}): "
                             "were they run on the same data?")
    return first


def combine_seed_runs(experiment: Any, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """``results.json`` of ``experiment`` (loaded with every seed) from ``runs``: each a mapping with the
    ``results`` (its results.json) and ``per_query`` (its per_query.json) of one or more of its seeds."""
    if not runs:
        raise ValueError("nothing to combine: no run")
    per_query = _merged_scores(experiment, runs)
    comparisons = {}
    for task, scores in per_query.items():
        _, comparisons[task] = compare(experiment, experiment.tasks[task].metrics, scores, _references(runs, task))
    spread = seed_spread(comparisons, experiment.groups)
    with_seed_sd(comparisons, spread)
    first = runs[0]["results"]
    return {
        "experiment": experiment.name, "title": experiment.title, "scale": experiment.scale,
        "file": str(experiment.path), "command": "combined from runs of its seeds (seedr.experiments.record.combine)",
        "machine": first.get("machine"), "started": min(run["results"].get("started") or "" for run in runs),
        "wall_seconds": round(sum(run["results"].get("wall_seconds") or 0 for run in runs), 1),
        "compute_seconds": round(sum(run["results"].get("compute_seconds") or 0 for run in runs), 1),
        "variables": experiment.variables, "skipped": experiment.skipped, "tasks": comparisons,
        "diagnostics": {}, "seed_spread": spread,
        "figures": figures(comparisons, experiment.tolerance, {}, experiment.groups, spread),
        "claims": claim_results(experiment, comparisons, per_query, {}),
        "cls_reliance": {}, "case_study": None, "steps": {},
        "code": first.get("code"),
        "combined_from": [{"started": run["results"].get("started"), "machine": run["results"].get("machine"),
                           "code": run["results"].get("code"),
                           "systems": sorted({system for systems in run["per_query"].values() for system in systems})}
                          for run in runs],
        "provenance": [],
    }


__all__ = ["combine_seed_runs"]
