"""Scoring an experiment's runs: a task's systems per query, its groups (of seeds) averaged in, tested
against the baseline (``compare``, by ``seedr evaluate``'s own tests: ``seedr.pipeline.evaluate.compare``) —
what the runner does with the runs it made, and what ``seedr.experiments.record.combine`` does with the
per-query scores of seeds that ran apart."""

from __future__ import annotations

from typing import Any

from seedr.pipeline import evaluate as evaluation


def group_scores(members: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Per-query scores averaged over a group's members (e.g. seeds), on the queries all of them have."""
    result = {}
    for metric in members[0]:
        common = set.intersection(*(set(member[metric]) for member in members))
        result[metric] = {qid: sum(member[metric][qid] for member in members) / len(members) for qid in common}
    return result


def compare(experiment: Any, metrics: list[str], scores: dict[str, dict[str, dict[str, float]]],
            task_references: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """One task's systems (``scores``, per query) with its groups averaged in, tested against the baseline:
    the comparison table, and the task's entry of ``results.json`` (the table with ``task_references``,
    ``seedr.experiments.record.figures.references``). ``scores`` gains the groups."""
    for group, members in experiment.groups.items():
        if all(member in scores for member in members):  # validate(): a group's members share their tasks
            scores[group] = group_scores([scores[member] for member in members])
    table = evaluation.compare(scores, experiment.baseline, metrics, experiment.test, experiment.alpha,
                               experiment.resamples)
    return table, {**table.to_dict(), **task_references}


__all__ = ["compare", "group_scores"]
