"""Verdicts on an experiment's claims from its recorded figures.

``claim_results`` judges each claim — holds / does not hold / not significant, or inconclusive: at chance
(both systems below the task's floor, ``seedr.experiments.record.figures``) or because a system it needs learned
nothing — on the paired test's p-value, Holm-adjusted within the experiment (``holm``), and, where a
side was trained with several seeds, also on a test over the seeds (``_seed_test``). ``verdict_text``
says a verdict with the seeds it was judged on.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from scipy import stats

from seedr.evaluation.significance import compare_runs
from seedr.experiments.record.figures import NOT_MEASURED

#: The verdict of a claim whose systems are both below the floor.
AT_CHANCE = "inconclusive: at chance"
#: The one standard of every verdict and goal: an ordering holds (a goal is met) only where its test is
#: significant after the Holm correction of its family; in the expected direction without that, it is
#: this — also a difference beyond a diagnostic's tolerance, which no test gives a p-value ...
IN_DIRECTION = "in direction, not shown"
#: ... and the same against the expected direction.
AGAINST_DIRECTION = "against direction, not shown"
#: A goal's verdicts: met (enough rows shown), in direction (enough rows in direction), missed.
MET, MISSED = "met", "missed"


def seed_members(experiment: Any, system: str, systems: dict[str, Any]) -> list[str]:
    """The training runs behind ``system`` on a task whose systems are ``systems``: a group's members that
    were scored there, else the system itself (one seed)."""
    members = [member for member in (getattr(experiment, "groups", None) or {}).get(system, []) if member in systems]
    return members or [system]


def _seed_test(claim: Any, systems: dict[str, Any], members: tuple[list[str], list[str]], alpha: float
               ) -> dict[str, Any]:
    """The test over training seeds of a claim whose sides are groups of seeds: Welch's t-test (unequal
    variances, Welch 1947) on the members' figures, one mean over the task's queries per seed, with its
    ``1 − alpha`` confidence interval of the difference. Its resolution is that of the seeds: with three a
    side it has about 2–4 degrees of freedom, where a bootstrap that resamples three seeds understates their
    spread (its variance by a third) and a per-query test counts 10,000 queries as if each were a re-run;
    an exact permutation test over 3 + 3 seeds could not go below p = 0.1 (two-sided: 2 of the C(6, 3) =
    20 arrangements). A side of one seed has no spread of its own: the test is then Student's, the other
    side's spread standing for both. Computed from the recorded figures alone, so that ``rerender``
    re-derives it from any results.json."""
    values = [[systems[member][claim.metric]["mean"] for member in side] for side in members]
    welch = min(len(side) for side in values) > 1
    result = stats.ttest_ind(values[0], values[1], equal_var=not welch)
    delta = statistics.fmean(values[0]) - statistics.fmean(values[1])
    low, high = result.confidence_interval(1 - alpha)
    p_value = float(result.pvalue)
    if math.isnan(p_value):  # no spread on either side: only an exact tie is left undefined
        p_value, low, high = 1.0, delta, delta
    return {"test": "Welch's t-test on the seeds' means" if welch else "Student's t-test on the seeds' means",
            "delta": delta, "p_value": p_value, "df": float(result.df), "ci": [float(low), float(high)],
            "ci_level": 1 - alpha, "seeds": [len(side) for side in values]}


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
        return IN_DIRECTION if (delta > 0) == (expect == "higher") else AGAINST_DIRECTION
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


def claim_results(experiment: Any, comparisons: dict[str, dict[str, Any]],
                  scores: dict[str, dict[str, dict[str, dict[str, float]]]] | None,
                  diagnostics: dict[str, dict[str, float]] | None = None,
                  p_values: dict[tuple[str, str, str, str], float | None] | None = None
                  ) -> list[dict[str, Any]]:
    """Each claim with seedr's figures: both systems' means, the difference, the paired test's p-value
    (``condition`` against ``against``, on the experiment's test; ``scores``: per task, system, metric
    and query; ``p_values``: ones already computed, by (condition, against, task, metric), used instead)
    and the verdict at this scale — ``AT_CHANCE`` when neither system reaches the task's floor on the
    metric (``comparisons[task]["floor"]``, see ``seedr.experiments.record.figures.references``). Claims on
    ``diagnostics`` compare two models' diagnostic values; they have no p-value (one number per model) and
    are judged by their direction where the difference exceeds the metric's tolerance (what a re-run may
    move one value by), else "not significant". The directional claims judged above the floor are one family: their verdicts
    read Holm-adjusted p-values (``p_holm``, see ``holm``); ``p_value`` stays the raw one.

    Training seeds: each claim records how many seeds each side has (``seeds``: a group's members scored
    on the task, else 1) and each group's seed SD (``seed_sd``). Where a side has several seeds, the
    claim's test must include their variation: the t-test on the members' figures (``_seed_test``, Welch's)
    is recorded with its interval (``seed_test``), the per-query test's p-value stays as ``p_queries``, and
    ``p_value`` is the larger of the two — an intersection-union test (Berger 1982): a directional claim
    holds only where its difference stands against both the seeds' variation (another seed's run, on these
    queries) and the queries' (other questions, for these runs), so no p-value is finer than either test
    can give. A claim that two systems are *similar* reads the smaller (a difference found at either level
    refutes it)."""
    results = []
    for claim in experiment.claims:
        described = {"claim": claim.claim, "paper": claim.paper, "protocol": claim.protocol, "source": claim.source}
        if claim.central is not None:
            described["central"] = claim.central
        if claim.goals:
            described["goals"] = claim.goals
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
        for system in (claim.condition, *claim.candidates):
            if system not in systems:
                raise ValueError(f"{experiment.path}: claim {claim.claim!r} compares {system!r}, which "
                                 f"{claim.task} did not evaluate; evaluated: {', '.join(systems)}")
        against_name = _best_of(claim, systems)
        if len(claim.candidates) > 1:
            described["against_best_of"] = claim.candidates
        condition, against = systems[claim.condition][claim.metric], systems[against_name][claim.metric]
        key = (claim.condition, against_name, claim.task, claim.metric)
        untested = False
        if against_name == experiment.baseline:
            p_value = condition["p_value"]
        elif p_values is not None and key in p_values:
            p_value = p_values[key]
        elif scores is not None:  # a claim against another system than the table's baseline: test that pair
            p_value = _pair_p_value(experiment, claim.condition, against_name, claim.metric,
                                    scores[claim.task])
        elif p_values is not None:  # re-derived from a record that kept no test of this pair
            p_value, untested = None, True
        else:
            raise ValueError(f"{experiment.path}: claim {claim.claim!r} needs the per-query scores of "
                             f"{claim.condition} and {against_name} (not against the baseline)")
        members = (seed_members(experiment, claim.condition, systems),
                   seed_members(experiment, against_name, systems))
        seeded = {"seeds": {"condition": len(members[0]), "against": len(members[1])},
                  "seed_sd": {side: (statistics.stdev(systems[m][claim.metric]["mean"] for m in group)
                                     if len(group) > 1 else None)
                              for side, group in zip(("condition", "against"), members)}}
        if max(len(group) for group in members) > 1:
            test = _seed_test(claim, systems, members, experiment.alpha)
            seeded.update(seed_test=test, p_queries=p_value)
            if untested:
                pass  # the seeds' test alone is not the claim's: without the queries' it decides nothing
            elif p_value is None:
                p_value = test["p_value"]
            else:
                p_value = (min if claim.expect == "similar" else max)(test["p_value"], p_value)
        delta = condition["mean"] - against["mean"]
        level = (task.get("floor") or {}).get(claim.metric)
        above = level is None or max(condition["mean"], against["mean"]) >= level
        described["protocol"] = _filled_protocol(claim.protocol, task, claim.metric)
        checks = _learning_checks(claim, comparisons, experiment.path)
        if checks:
            described["requires_learning"] = checks
        if untested:
            described["untested"] = (f"the record keeps no per-query test of {claim.condition} against "
                                     f"{against_name}; a re-run tests it")
        if _identical(systems[claim.condition], systems[against_name]):
            described["collapsed"] = f"{claim.condition}'s figures are bit-identical to {against_name}'s"
        if claim.target is not None:
            described["target"] = claim.target
            described["target_met"] = (condition["mean"] <= claim.target if claim.expect == "lower"
                                       else condition["mean"] >= claim.target)
        results.append({**described, "task": claim.task, "metric": claim.metric,
                        "condition": claim.condition, "against": against_name, "expect": claim.expect,
                        "value": condition["mean"], "against_value": against["mean"], "delta": delta,
                        "p_value": p_value, **seeded, "above_floor": above,
                        "chance": (task.get("chance") or {}).get(claim.metric),
                        "bm25": (task.get("bm25") or {}).get(claim.metric), "floor": level,
                        "scale": experiment.scale})
    # a claim whose sanity conditions fail is not judged, so it is not one of the family's either; one whose
    # pair the record has no test of counts as p = 1, which can only raise the others' adjusted p-values
    family = [result for result in results
              if (result["p_value"] is not None or "untested" in result) and result.get("above_floor")
              and result["expect"] != "similar" and _not_learned(result.get("requires_learning", [])) is None]
    adjusted = holm([1.0 if result["p_value"] is None else result["p_value"] for result in family])
    for result, value in zip(family, adjusted, strict=True):
        if result["p_value"] is not None:
            result["p_holm"] = value
    for result in results:
        if "above_floor" in result:
            above = result.pop("above_floor")
            p_value = result.get("p_holm", result["p_value"])
            result["verdict"] = _verdict(result["expect"], result["delta"], p_value, experiment.alpha,
                                         above_floor=above)
            if above:
                result["verdict"] = (_not_learned(result.get("requires_learning", []))
                                     or _inconclusive(result) or result["verdict"])
    return results


def _best_of(claim: Any, systems: dict[str, Any]) -> str:
    """The system a claim is against: its one ``against``, or the best of its candidates on the claim's
    task and metric by the recorded figures (the lowest, for ``expect: lower``); ties go to the first."""
    best = min if claim.expect == "lower" else max
    return best(claim.candidates, key=lambda name: systems[name][claim.metric]["mean"])


def _identical(first: dict[str, Any], second: dict[str, Any]) -> bool:
    """Whether two systems' recorded figures are the same on every metric, to the last bit."""
    return first.keys() == second.keys() and all(first[m]["mean"] == second[m]["mean"] for m in first)


def _inconclusive(result: dict[str, Any]) -> str | None:
    """The verdict of a claim that judges nothing for a reason of its own: a side collapsed into the
    other (bit-identical figures: what it trained changed nothing of what it kept), or no test of its
    pair in the record."""
    if "collapsed" in result:
        return f"inconclusive: collapsed ({result['collapsed']})"
    if "untested" in result:
        return f"inconclusive: not tested ({result['untested']})"
    return None


def collapsed_conditions(experiment: Any, comparisons: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The conditions that collapsed into an earlier one, per task: every recorded figure bit-identical
    (label_free's adapt-pre on SciFact and NQ-open, whose keep-best kept the model its MLM stage started
    from, so its fine-tuning was adapt-all's to the last bit). Groups are left out (a group of one seed is
    its member), and so are conditions without steps of their own (BM25, fusions of conditions that
    collapsed are named beside them: what they fuse is the same)."""
    order = list(experiment.conditions)
    found = []
    for task_name, task in comparisons.items():
        systems = [name for name in task["systems"] if name in experiment.conditions]
        for index, name in enumerate(systems):
            if not experiment.conditions[name].steps:
                continue
            earlier = next((other for other in systems[:index] if experiment.conditions[other].steps
                            and _identical(task["systems"][name], task["systems"][other])), None)
            if earlier is not None and order.index(earlier) < order.index(name):
                metrics = {metric: value["mean"] for metric, value in task["systems"][name].items()}
                found.append({"task": task_name, "condition": name, "into": earlier, "metrics": metrics})
    return found


def _in_direction(expect: str, delta: float) -> bool:
    return delta < 0 if expect == "lower" else delta > 0


def _target_test(experiment: Any, claim: dict[str, Any], comparisons: dict[str, dict[str, Any]]
                 ) -> tuple[bool, float | None]:
    """Whether a row's condition is beyond its target by its figure, and the p-value of a t-test of its
    seeds' figures against the target (None with one seed: nothing to test a single run's figure with)."""
    systems = comparisons[claim["task"]]["systems"]
    values = [systems[member][claim["metric"]]["mean"]
              for member in seed_members(experiment, claim["condition"], systems)]
    beyond = claim["target_met"]
    if len(values) < 2:
        return beyond, None
    p_value = float(stats.ttest_1samp(values, claim["target"]).pvalue)
    return beyond, 1.0 if math.isnan(p_value) else p_value


def goal_results(experiment: Any, claims: list[dict[str, Any]], comparisons: dict[str, dict[str, Any]]
                 ) -> list[dict[str, Any]]:
    """Each goal of the file (``seedr.experiments.spec.Goal``) judged by the one standard of every verdict:
    a row is *shown* only where its test is significant after its family's Holm correction in the expected
    direction — a comparison whose verdict "holds" (Holm within the experiment), or, for a goal ``on:
    target``, a t-test of the condition's seeds against the target (Holm within the goal's rows) — and
    *in direction* where its figure lies the expected way (also where the record has no test of its pair).
    A goal is ``MET`` when at least ``needs`` rows
    (every row where None) are shown, ``IN_DIRECTION`` when that many are in direction, else ``MISSED``;
    a row that judges nothing (inconclusive) counts as neither."""
    rows_of = {name: [(index, claim) for index, claim in enumerate(claims)
                      if name in (claim.get("goals") or [])] for name in experiment.goals}
    results = []
    for name, goal in experiment.goals.items():
        rows, judged = rows_of[name], []
        if goal.on == "target":
            tests = [_target_test(experiment, claim, comparisons) for _, claim in rows]
            family = [p for _, p in tests if p is not None]
            adjusted = iter(holm(family))
            for (index, claim), (beyond, p_value) in zip(rows, tests, strict=True):
                p_holm = None if p_value is None else next(adjusted)
                judged.append({"claim": index, "in_direction": beyond, "p_holm": p_holm,
                               "shown": beyond and p_holm is not None and p_holm < experiment.alpha})
        else:
            for index, claim in rows:
                # a pair the record did not test still lies one way; a row at chance, collapsed or on a
                # model that learned nothing says nothing either way
                judges = not claim["verdict"].startswith("inconclusive") or "untested" in claim
                judged.append({"claim": index, "shown": claim["verdict"] == "holds",
                               "in_direction": judges and _in_direction(claim["expect"], claim["delta"])})
        needs = len(rows) if goal.needs is None else goal.needs
        shown, direction = (sum(row[key] for row in judged) for key in ("shown", "in_direction"))
        verdict = MET if shown >= needs else IN_DIRECTION if direction >= needs else MISSED
        results.append({"goal": name, "statement": goal.statement, "on": goal.on, "needs": needs,
                        "rows": judged, "shown": shown, "in_direction": direction, "verdict": verdict})
    return results


def verdict_text(claim: dict[str, Any]) -> str:
    """A claim's verdict as the tables show it: with the seeds it was judged on — "(1 seed)" where a side
    is one training run, "(3 seeds each)" where both have several, "(3 vs 1 seeds, one side judged on 1
    seed)". Verdicts that judge nothing (inconclusive) stand alone, as do claims recorded before seeds
    were counted."""
    verdict, seeds = claim["verdict"], claim.get("seeds")
    if verdict.startswith("inconclusive") or not seeds:
        return verdict
    counts = (seeds["condition"], seeds["against"])
    return f"{verdict} ({seeds_text(seeds)}" + (", one side judged on 1 seed" if 1 == min(counts) < max(counts) else "") + ")"


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


def _pair_p_value(experiment: Any, condition: str, against: str, metric: str,
                  scores: dict[str, dict[str, dict[str, float]]]) -> float:
    """The p-value of ``condition`` vs ``against`` on one task's per-query scores."""
    pair = {against: scores[against][metric], condition: scores[condition][metric]}
    result = compare_runs(pair, against, experiment.test, experiment.alpha, experiment.resamples)
    return result.systems[condition].p_value


__all__ = ["AGAINST_DIRECTION", "AT_CHANCE", "IN_DIRECTION", "MET", "MISSED", "claim_results",
           "collapsed_conditions", "goal_results", "holm", "seed_members", "seeds_text", "verdict_text"]
