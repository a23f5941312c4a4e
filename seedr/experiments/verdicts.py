"""Verdicts on an experiment's claims from its recorded figures.

``claim_results`` judges each claim — holds / does not hold / not significant, or inconclusive: at chance
(both systems below the task's floor, ``seedr.experiments.figures``) or because a system it needs learned
nothing — on the paired test's p-value, Holm-adjusted within the experiment (``holm``), and, where a
side was trained with several seeds, on a test that includes their variation (``seed_scores`` keeps
what it needs in results.json). ``verdict_text`` says a verdict with the seeds it was judged on.
"""

from __future__ import annotations

import statistics
from typing import Any

from seedr.experiments.figures import NOT_MEASURED

#: The verdict of a claim whose systems are both below the floor.
AT_CHANCE = "inconclusive: at chance"


def seed_members(experiment: Any, system: str, systems: dict[str, Any]) -> list[str]:
    """The training runs behind ``system`` on a task whose systems are ``systems``: a group's members that
    were scored there, else the system itself (one seed)."""
    members = [member for member in (getattr(experiment, "groups", None) or {}).get(system, []) if member in systems]
    return members or [system]


def seed_scores(experiment: Any, per_query: dict[str, dict[str, dict[str, dict[str, float]]]]) -> dict[str, Any]:
    """What results.json keeps for seed-aware tests to be re-computed from it: per task, the query ids,
    and per claim metric each member's per-query scores (in the ids' order), for the members of every
    group of several seeds that a claim compares. Scores are rounded to 6 decimals (0/1 coverage stays
    an integer), which keeps a ReQA task's three seeds × two groups within a few hundred kB."""
    kept: dict[str, Any] = {}
    for claim in experiment.claims:
        if claim.task == "diagnostics" or claim.task not in per_query:
            continue
        scores = per_query[claim.task]
        for system in (claim.condition, claim.against):
            members = seed_members(experiment, system, scores)
            if len(members) < 2:
                continue
            task = kept.setdefault(claim.task, {"queries": None, "metrics": {}})
            if task["queries"] is None:
                task["queries"] = sorted(set().union(*(scores[m][claim.metric].keys() for m in members)))
            by_member = task["metrics"].setdefault(claim.metric, {})
            for member in members:
                values = [scores[member][claim.metric].get(qid, 0.0) for qid in task["queries"]]
                by_member[member] = [int(v) if float(v).is_integer() else round(v, 6) for v in values]
    return kept


def recorded_seed_scores(recorded: dict[str, Any] | None) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """``seed_scores`` of a results.json back as per-query scores (task → member → metric → query → score)."""
    scores: dict[str, Any] = {}
    for task, kept in (recorded or {}).items():
        for metric, by_member in kept["metrics"].items():
            for member, values in by_member.items():
                scores.setdefault(task, {}).setdefault(member, {})[metric] = dict(zip(kept["queries"], values))
    return scores


def _seed_test(experiment: Any, claim: Any, task_scores: dict[str, Any], members: tuple[list[str], list[str]]
               ) -> dict[str, Any] | None:
    """The two-level bootstrap (seeds, then queries; ``hierarchical_bootstrap``) of a claim whose sides
    were trained with several seeds, from the members' per-query scores; None when they are not at hand."""
    import numpy as np

    from seedr.evaluation.significance import hierarchical_bootstrap

    if not all(member in task_scores and claim.metric in task_scores[member] for side in members for member in side):
        return None
    qids = sorted(set().union(*(task_scores[m][claim.metric].keys() for side in members for m in side)))
    arrays = [np.array([[task_scores[m][claim.metric].get(qid, 0.0) for qid in qids] for m in side]) for side in members]
    result = hierarchical_bootstrap(arrays[0], arrays[1], getattr(experiment, "resamples", 10_000),
                                    alpha=experiment.alpha)
    return {"test": "hierarchical bootstrap: seeds, then queries", "delta": result.delta,
            "p_value": result.p_value, "ci": list(result.ci), "seeds": list(result.seeds),
            "queries": result.queries, "resamples": result.resamples}


def _verdict(expect: str, delta: float, p_value: float | None, alpha: float, tolerance: float = 0.0,
             above_floor: bool = True) -> str:
    if not above_floor:  # both systems at chance: no difference between them means anything
        return AT_CHANCE
    if p_value is None:  # a diagnostic: one number per model, no per-query test
        if expect == "similar":
            return "not tested"
        # a difference that a re-run may produce by itself (the metric's tolerance) decides nothing:
        # re-training the tokenizer alone has flipped such differences' sign
        if abs(delta) <= tolerance:
            return "not significant"
        return "holds" if (delta > 0) == (expect == "higher") else "does not hold"
    significant = p_value < alpha
    if expect == "similar":
        return "holds" if not significant else "does not hold"
    if not significant:
        return "not significant"
    return "holds" if (delta > 0) == (expect == "higher") else "does not hold"


def _filled_protocol(protocol: str, task: dict[str, Any], metric: str) -> str:
    """A claim's protocol with the task's recorded sizes in it: ``{task.pool}`` (the pool's passages or
    documents) and ``{task.queries}`` (the questions scored on the claim's metric), so that these
    figures come from results.json, not from the file's text (left by the file's reader, as
    ``{setup.NAME}`` is, for the names with a dot)."""
    for placeholder, value in (("{task.pool}", task.get("pool")), ("{task.queries}", (task.get("queries") or {}).get(metric))):
        if placeholder in protocol:
            if value is None:
                raise ValueError(f"the protocol names {placeholder}, which the task's record lacks: {protocol!r}")
            protocol = protocol.replace(placeholder, f"{value:,}")
    return protocol


def _learning_checks(claim: Any, comparisons: dict[str, dict[str, Any]], where: Any) -> list[dict[str, Any]]:
    """The claim's ``requires_learning`` conditions, each with the recorded figures it compares and whether
    it holds (``system`` above ``above`` on the task and metric, by default the claim's)."""
    wanted = claim.requires_learning or []
    checks = []
    for entry in [wanted] if isinstance(wanted, dict) else wanted:
        if not isinstance(entry, dict) or not {"system", "above"} <= set(entry) \
                or set(entry) - {"system", "above", "task", "metric"}:
            raise ValueError(f"{where}: claim {claim.claim!r}: requires_learning takes {{system, above, task, "
                             f"metric}} (task and metric default to the claim's), got {entry!r}")
        task, metric = entry.get("task", claim.task), entry.get("metric", claim.metric)
        systems = comparisons.get(task, {}).get("systems", {})
        for system in (entry["system"], entry["above"]):
            if metric not in systems.get(system, {}):
                raise ValueError(f"{where}: claim {claim.claim!r}: requires_learning names {system!r} on {task} "
                                 f"{metric}, which the experiment did not evaluate")
        value, above = systems[entry["system"]][metric]["mean"], systems[entry["above"]][metric]["mean"]
        checks.append({"system": entry["system"], "above": entry["above"], "task": task, "metric": metric,
                       "value": value, "above_value": above, "holds": value > above})
    return checks


def _not_learned(checks: list[dict[str, Any]]) -> str | None:
    """The verdict of a claim whose sanity conditions fail: "inconclusive: <reason>" (None when all hold)."""
    failed = [check for check in checks if not check["holds"]]
    if not failed:
        return None
    reasons = [f"{c['system']} learned nothing ({c['task']} {c['metric']} {c['value']:.4f}, not above "
               f"{c['above']}'s {c['above_value']:.4f})" for c in failed]
    return "inconclusive: " + "; ".join(reasons)


#: Why a claim between recipes trained with several seeds was tested on the queries only.
NOT_SEED_AWARE = "not seed-aware: per-seed per-query scores not recorded"


def claim_results(experiment: Any, comparisons: dict[str, dict[str, Any]],
                  scores: dict[str, dict[str, dict[str, dict[str, float]]]] | None,
                  diagnostics: dict[str, dict[str, float]] | None = None,
                  p_values: dict[tuple[str, str, str, str], float | None] | None = None,
                  seed_tests: dict[tuple[str, str, str, str], dict[str, Any] | None] | None = None
                  ) -> list[dict[str, Any]]:
    """Each claim with seedr's figures: both systems' means, the difference, the paired test's p-value
    (``condition`` against ``against``, on the experiment's test; ``scores``: per task, system, metric
    and query; ``p_values``: ones already computed, by (condition, against, task, metric), used instead)
    and the verdict at this scale — ``AT_CHANCE`` when neither system reaches the task's floor on the
    metric (``comparisons[task]["floor"]``, see ``seedr.experiments.figures.references``). Claims on
    ``diagnostics`` compare two models' diagnostic values; they have no p-value (one number per model) and
    are judged by their direction where the difference exceeds the metric's tolerance (what a re-run may
    move one value by), else "not significant". The directional claims judged above the floor are one family: their verdicts
    read Holm-adjusted p-values (``p_holm``, see ``holm``); ``p_value`` stays the raw one.

    Training seeds: each claim records how many seeds each side has (``seeds``: a group's members scored
    on the task, else 1) and each group's seed SD (``seed_sd``). Where a side has several seeds, the
    claim's test must include their variation: the two-level bootstrap over seeds, then queries
    (``_seed_test``), from the members' per-query scores in ``scores`` — or one recorded before
    (``seed_tests``, by the key of ``p_values``) — becomes ``p_value`` (the per-query test's stays as
    ``p_queries``) with its confidence interval (``seed_test``). Without the members' scores the claim is
    judged on the queries alone and says so (``seed_aware`` false, ``NOT_SEED_AWARE``)."""
    results = []
    for claim in experiment.claims:
        described = {"claim": claim.claim, "paper": claim.paper, "protocol": claim.protocol, "source": claim.source}
        if claim.central is not None:
            described["central"] = claim.central
        if claim.task == "diagnostics":
            measured = [(diagnostics or {}).get(system, {}) for system in (claim.condition, claim.against)]
            if any(claim.metric not in values for values in measured):
                raise ValueError(f"{experiment.path}: claim {claim.claim!r} reads {claim.metric!r}, which the "
                                 f"diagnose steps did not measure; measured: {sorted(measured[0])}")
            value, against_value = (values[claim.metric] for values in measured)
            tolerance = experiment.tolerance.get(claim.metric, 0.0)
            results.append({**described, "task": claim.task,
                            "metric": claim.metric, "condition": claim.condition, "against": claim.against,
                            "expect": claim.expect, "value": value, "against_value": against_value,
                            "delta": value - against_value, "p_value": None,
                            "verdict": _verdict(claim.expect, value - against_value, None, experiment.alpha,
                                                tolerance),
                            # one diagnose step per model: one seed, and no re-run has measured the spread
                            "tolerance": tolerance, "tolerance_from": NOT_MEASURED,
                            "seeds": {"condition": 1, "against": 1},
                            "chance": None, "bm25": None, "floor": None, "scale": experiment.scale})
            continue
        task = comparisons[claim.task]
        systems = task["systems"]
        for system in (claim.condition, claim.against):
            if system not in systems:
                raise ValueError(f"{experiment.path}: claim {claim.claim!r} compares {system!r}, which "
                                 f"{claim.task} did not evaluate; evaluated: {', '.join(systems)}")
        condition, against = systems[claim.condition][claim.metric], systems[claim.against][claim.metric]
        key = (claim.condition, claim.against, claim.task, claim.metric)
        if claim.against == experiment.baseline:
            p_value = condition["p_value"]
        elif p_values is not None and key in p_values:
            p_value = p_values[key]
        else:  # a claim against another system than the table's baseline: test that pair
            if scores is None:
                raise ValueError(f"{experiment.path}: claim {claim.claim!r} needs the per-query scores of "
                                 f"{claim.condition} and {claim.against} (not against the baseline)")
            p_value = _pair_p_value(experiment, claim, scores[claim.task])
        members = (seed_members(experiment, claim.condition, systems), seed_members(experiment, claim.against, systems))
        seeded = {"seeds": {"condition": len(members[0]), "against": len(members[1])},
                  "seed_sd": {side: (statistics.stdev(systems[m][claim.metric]["mean"] for m in group)
                                     if len(group) > 1 else None)
                              for side, group in zip(("condition", "against"), members)}}
        if max(len(group) for group in members) > 1:
            test = (_seed_test(experiment, claim, (scores or {}).get(claim.task, {}), members)
                    or (seed_tests or {}).get(key))
            seeded["seed_aware"] = test is not None
            if test is not None:
                seeded.update(seed_test=test, p_queries=p_value)
                p_value = test["p_value"]
        delta = condition["mean"] - against["mean"]
        level = (task.get("floor") or {}).get(claim.metric)
        above = level is None or max(condition["mean"], against["mean"]) >= level
        described["protocol"] = _filled_protocol(claim.protocol, task, claim.metric)
        checks = _learning_checks(claim, comparisons, experiment.path)
        if checks:
            described["requires_learning"] = checks
        if claim.target is not None:
            described["target"] = claim.target
            described["target_met"] = (condition["mean"] <= claim.target if claim.expect == "lower"
                                       else condition["mean"] >= claim.target)
        results.append({**described, "task": claim.task, "metric": claim.metric,
                        "condition": claim.condition, "against": claim.against, "expect": claim.expect,
                        "value": condition["mean"], "against_value": against["mean"], "delta": delta,
                        "p_value": p_value, **seeded, "above_floor": above,
                        "chance": (task.get("chance") or {}).get(claim.metric),
                        "bm25": (task.get("bm25") or {}).get(claim.metric), "floor": level,
                        "scale": experiment.scale})
    # a claim whose sanity conditions fail is not judged, so it is not one of the family's either
    family = [result for result in results
              if result["p_value"] is not None and result["above_floor"] and result["expect"] != "similar"
              and _not_learned(result.get("requires_learning", [])) is None]
    for result, adjusted in zip(family, holm([result["p_value"] for result in family]), strict=True):
        result["p_holm"] = adjusted
    for result in results:
        if "above_floor" in result:
            above = result.pop("above_floor")
            p_value = result.get("p_holm", result["p_value"])
            result["verdict"] = _verdict(result["expect"], result["delta"], p_value, experiment.alpha,
                                         above_floor=above)
            if above:
                result["verdict"] = _not_learned(result.get("requires_learning", [])) or result["verdict"]
    return results


def verdict_text(claim: dict[str, Any]) -> str:
    """A claim's verdict as the tables show it: with the seeds it was judged on — "(1 seed)" where a side
    is one training run, "(3 seeds each)" where both have several and the test included their variation,
    or that it did not (``NOT_SEED_AWARE``). Verdicts that judge nothing (inconclusive) stand alone, as do
    claims recorded before seeds were counted."""
    verdict, seeds = claim["verdict"], claim.get("seeds")
    if verdict.startswith("inconclusive") or not seeds:
        return verdict
    counts = (seeds["condition"], seeds["against"])
    if max(counts) == 1:
        return f"{verdict} ({seeds_text(seeds)})"
    told = seeds_text(seeds) + (", one side judged on 1 seed" if min(counts) == 1 else "")
    return f"{verdict} ({told}" + ("" if claim.get("seed_aware") else f"; {NOT_SEED_AWARE}") + ")"


def seeds_text(seeds: dict[str, int] | None) -> str:
    """How many training seeds a claim's two sides had, in words: "1 seed" (one run each, or not
    counted), "3 seeds each" or "3 vs 1 seeds"."""
    condition, against = (seeds["condition"], seeds["against"]) if seeds else (1, 1)
    if max(condition, against) == 1:
        return "1 seed"
    return f"{condition} seeds each" if condition == against else f"{condition} vs {against} seeds"


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment (Holm 1979) of a family of p-values: the i-th smallest of m is
    multiplied by m − i + 1 (i from 1), made non-decreasing and capped at 1. A claim is significant at
    ``alpha`` when its adjusted p-value is below it, which keeps the chance of any false "holds" or
    "does not hold" among an experiment's claims at most ``alpha``."""
    order = sorted(range(len(p_values)), key=p_values.__getitem__)
    adjusted, running = [0.0] * len(p_values), 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def _pair_p_value(experiment: Any, claim: Any, scores: dict[str, dict[str, dict[str, float]]]) -> float:
    """The p-value of ``claim.condition`` vs ``claim.against`` on one task's per-query scores."""
    from seedr.evaluation.significance import compare_runs

    pair = {claim.against: scores[claim.against][claim.metric], claim.condition: scores[claim.condition][claim.metric]}
    result = compare_runs(pair, claim.against, experiment.test, experiment.alpha, experiment.resamples)
    return result.systems[claim.condition].p_value


__all__ = ["AT_CHANCE", "NOT_SEED_AWARE", "claim_results", "holm", "recorded_seed_scores", "seed_members",
           "seed_scores", "seeds_text", "verdict_text"]
