"""Recorded results as Markdown: a task's comparison table, the claims table and a report's
"Comparison" section, all from ``results.json`` alone."""

from __future__ import annotations

from typing import Any

from seedr.evaluation.case_study import case_study_markdown
from seedr.evaluation.compare import BETTER, WORSE
from seedr.experiments.record.figures import FLOOR_BM25, FLOOR_CHANCE, MEASURED, NOT_MEASURED
from seedr.experiments.record.verdicts import verdict_text


def machine_label(machine: dict[str, Any] | None) -> str:
    """Where a run was made, in a few words: the GPU's name, else the CPU count and what decides its speed
    (its widest vector extension, e.g. "CPU: 2 cores (AVX2)"; for runs recorded before the extensions
    were, whether it computes bf16 natively, where that was recorded)."""
    if not machine:
        return "–"
    if machine.get("gpu"):
        return f"GPU: {machine['gpu']}"
    label = f"CPU: {machine.get('cpus')} cores"
    widest = [name for name in ("AVX512-BF16", "AVX-512", "AVX2") if name in machine.get("cpu_extensions", ())]
    if widest:
        return f"{label} ({widest[0]})"
    if "cpu_native_bf16" in machine:
        return f"{label} ({'native bf16' if machine['cpu_native_bf16'] else 'no native bf16'})"
    return label


def _figure(value: float | None) -> str:
    """A figure in a table: four decimals, or two significant digits below 0.001 (chance levels)."""
    if value is None:
        return "–"
    return f"{value:.4f}" if abs(value) >= 0.001 or value == 0 else f"{value:.2g}"


def floor_cell(claim: dict[str, Any]) -> str:
    """A claim's floor with what it comes from, e.g. ``0.1352 (chance 0.0009, BM25 0.6762)``; for a claim
    on a diagnostic (no floor), the tolerance its difference is judged against and where it comes from,
    e.g. ``± 0.02 (not measured)``."""
    if claim.get("floor") is None:
        if claim.get("tolerance") is not None:
            return f"± {claim['tolerance']:g} ({claim.get('tolerance_from', NOT_MEASURED)})"
        return "–"
    parts = [f"{name} {_figure(claim[key])}" for name, key in (("chance", "chance"), ("BM25", "bm25"))
             if claim.get(key) is not None]
    return f"{_figure(claim['floor'])} ({', '.join(parts)})"


def claims_markdown(claims: list[dict[str, Any]], link: str | None = None, machine: str | None = None,
                    first: tuple[str, str] = ("claim", "paper")) -> str:
    """The claims as a Markdown table (claim, paper, protocol, seedr's figures, floor, p, verdict; with
    ``link``, the report and the machine the run was made on). ``first``: the first two columns' names."""
    lines = [f"| {first[0]} | {first[1]} | protocol | seedr (" + (claims[0]["scale"] if claims else "cpu")
             + " scale) | floor | p | verdict |" + (" report | run on |" if link else ""),
             "|---|---|---|---|---|---:|---|" + ("---|---|" if link else "")]
    for claim in claims:
        seedr = claim_figures(claim)
        if claim.get("seed_test"):  # the difference's interval over the seeds (verdicts._seed_test)
            test = claim["seed_test"]
            low, high = test["ci"]
            seedr += (f"; difference {claim['delta']:+.4f}, {test['ci_level']:.0%} CI [{low:+.4f}, {high:+.4f}] "
                      f"over seeds ({test['test'].split()[0]} t, {test['df']:.1f} df)")
        if claim.get("target") is not None:  # an issue's goal for the condition's figure, apart from the verdict
            bound = "≤" if claim["expect"] == "lower" else "≥"
            seedr += f"; target {bound} {claim['target']:g}: {'met' if claim['target_met'] else 'MISSED'}"
        p_value = "–" if claim["p_value"] is None else f"{claim['p_value']:.3g}"
        if claim.get("p_holm") is not None and claim["p_holm"] != claim["p_value"]:
            p_value += f" (Holm {claim['p_holm']:.3g})"
        if claim.get("seed_test") and claim["p_value"] is not None and claim["expect"] == "similar":
            # a claim of similarity reads the finer of the two tests (verdicts.claim_results): say which
            seeds, queries = claim["seed_test"]["p_value"], claim.get("p_queries")
            p_value += (f" (queries; seeds {seeds:.3g})" if claim["p_value"] == queries and queries != seeds
                        else f" (seeds; queries {queries:.3g})" if queries is not None else " (seeds)")
        elif claim.get("seed_test") and claim["p_value"] is not None:
            p_value += " (seeds and queries)"  # the larger of the two tests (verdicts.claim_results)
        row = (f"| {claim['claim']} | {claim['paper'] or '–'} | {claim.get('protocol') or '–'} | {seedr} | "
               f"{floor_cell(claim)} | {p_value} | {verdict_text(claim)} |")
        lines.append(row + (f" [{link.split('/')[-2]}]({link}) | {machine or '–'} |" if link else ""))
    return "\n".join(lines) + "\n"


def claim_figures(claim: dict[str, Any]) -> str:
    """The figures a claim compares, e.g. ``seed 0.1234 (SD 0.0115) vs mlm 0.1100 (scifact nDCG@10)``:
    each side's value, with its seed SD where it has several seeds, on the claim's task and metric."""
    best = f", the best of {', '.join(claim['against_best_of'])}" if claim.get("against_best_of") else ""
    return (f"{claim['condition']} {claim['value']:.4f}{_sd(claim, 'condition')} vs {claim['against']} "
            f"{claim['against_value']:.4f}{_sd(claim, 'against')} ({claim['task']} {claim['metric']}{best})")


def _sd(claim: dict[str, Any], side: str) -> str:
    """`` (SD 0.0115)``: one side's seed SD in a claim's figures, where it has several seeds."""
    sd = (claim.get("seed_sd") or {}).get(side)
    return "" if sd is None else f" (SD {sd:.4f})"


def comparison_markdown(task: dict[str, Any]) -> str:
    """One task of ``results.json`` as a Markdown table: every system's mean per metric, marked † / ‡
    where significantly higher / lower than the baseline (as ``ComparisonTable.to_markdown``), with the
    SD between its training seeds beside a group's mean (``figures.with_seed_sd``), then the task's chance
    level, BM25 (when no condition is BM25) and floor (``figures.references``)."""
    systems = task["systems"]
    metrics = list(task["queries"]) or list(next(iter(systems.values())))
    lines = ["| system | " + " | ".join(metrics) + " |", "|---|" + "---:|" * len(metrics)]
    for system, by_metric in systems.items():
        label = f"{system} (baseline)" if system == task["baseline"] and len(systems) > 1 else system
        cells = []
        for metric in metrics:
            value = by_metric[metric]
            mark = (BETTER if value["delta"] > 0 else WORSE) if value["significant"] else ""
            spread = f" ± {value['seed_sd']:.4f}" if value.get("seed_sd") is not None else ""
            cells.append(f"{value['mean']:.4f}{mark}{spread}")
        lines.append("| " + " | ".join([label, *cells]) + " |")
    if "chance" in task:
        pool = f" of {task['pool']:,}" if task.get("pool") else ""
        rows = [(f"*chance (random ranking{pool})*", task["chance"])]
        if task.get("bm25") and not task.get("bm25_system"):
            rows.append(("*BM25 (reference)*", task["bm25"]))
        rows.append(("*floor*", task["floor"]))
        lines += ["| " + " | ".join([label, *(_figure(values.get(metric)) for metric in metrics)]) + " |"
                  for label, values in rows]
    notes = []
    if len(systems) > 1:
        test = "paired randomisation test" if task["test"] == "permutation" else "paired t-test"
        notes.append(f"{BETTER}/{WORSE}: significantly higher/lower than {task['baseline']} "
                     f"({test}, two-sided, p < {task['alpha']}).")
    if any(value.get("seed_sd") is not None for by_metric in systems.values() for value in by_metric.values()):
        notes.append("± : the standard deviation of a group's figure between its training seeds (its members, "
                     "under \"Seed spread\").")
    if "chance" in task:
        notes.append(f"Chance: the expected value of a random ranking of the task's pool; floor: the larger of "
                     f"{FLOOR_CHANCE:g}× chance (as odds) and {FLOOR_BM25:.0%} of BM25 — a claim is judged only when one "
                     "of its two systems reaches it (docs/experiments.md, \"Experiments and the papers' claims\").")
    return "\n".join(lines) + ("\n\n" + " ".join(notes) if notes else "") + "\n"


def results_markdown(results: dict[str, Any]) -> str:
    """A report's "Comparison" section from its ``results.json``: each task's table, the diagnostics,
    the case study and the claims."""
    blocks = []
    for name, task in results["tasks"].items():
        blocks += [f"### {name}", "", comparison_markdown(task)]
    if results.get("diagnostics"):
        metrics = sorted({metric for values in results["diagnostics"].values() for metric in values})
        blocks += ["### Diagnostics", "", "| condition | " + " | ".join(metrics) + " |",
                   "|---|" + "---:|" * len(metrics)]
        blocks += [f"| {name} | " + " | ".join(f"{values[m]:.4f}" if m in values else "–" for m in metrics) + " |"
                   for name, values in results["diagnostics"].items()]
        blocks.append("")
    if results.get("case_study"):
        study = results["case_study"]
        blocks += [f"### Case study: {' vs '.join(study['systems'])} on {study['task']}", "",
                   "Queries one system ranks a relevant document first and the other does not (SEED-Encoder "
                   "Table 5), with each system's top document and the rank of its first relevant one.", "",
                   case_study_markdown(study)]
    if results.get("seed_spread"):
        blocks += ["### Seed spread", "", ("Each group's figure is the mean over its training seeds; between "
                   "seeds one recipe's figure moves by this much. A figure's `--verify` tolerance is measured "
                   "from it, 2√2·SD/√k (k seeds in the figure); a figure outside these groups keeps the "
                   "experiment file's tolerance, which no re-run has measured (results.json: "
                   "`tolerance_from`)."), "",
                   "| task | group | metric | seeds | per seed | SD |", "|---|---|---|---:|---|---:|"]
        blocks += [f"| {task} | {group} | {metric} | {m['seeds']} | "
                   + ", ".join(f"{value:.4f}" for value in m["values"]) + f" | {m['sd']:.4f} |"
                   for task, by_group in results["seed_spread"].items()
                   for group, by_metric in by_group.items() for metric, m in by_metric.items()]
        blocks.append("")
    tolerances = [figure.get("tolerance_from") for figure in results.get("figures", [])]
    if NOT_MEASURED in tolerances:
        measured = tolerances.count(MEASURED)
        blocks += [(f"`--verify` tolerances: {measured} figure{'s' * (measured != 1)} measured from the spread "
                    f"of their seeds, {tolerances.count(NOT_MEASURED)} with the experiment file's (not measured: "
                    "one run each, or figures no seeds vary)."), ""]
    if results.get("collapsed"):
        blocks += ["### Collapsed conditions", "", collapsed_markdown(results["collapsed"])]
    if results.get("claims"):
        blocks += ["### Claims", "", claims_markdown(results["claims"])]
    if results.get("goals"):
        blocks += ["### Goals", "", goals_markdown(results["goals"], results["claims"])]
    return "\n".join(blocks)


def collapsed_markdown(collapsed: list[dict[str, Any]]) -> str:
    """The conditions that collapsed into another (``verdicts.collapsed_conditions``), one line each."""
    lines = ["A condition whose every figure is bit-identical to another's collapsed into it: the model it "
             "kept is the one the other kept (its own stage changed nothing of it: a keep-best that kept its "
             "start), so it is reported as that condition, not as a result of its own.", ""]
    lines += [f"- {entry['task']}: **{entry['condition']}** collapsed into {entry['into']} ("
              + ", ".join(f"{metric} {value!r}" for metric, value in entry["metrics"].items()) + " both)"
              for entry in collapsed]
    return "\n".join(lines) + "\n"


def goals_markdown(goals: list[dict[str, Any]], claims: list[dict[str, Any]]) -> str:
    """The goals (``verdicts.goal_results``) as a table: each with its rows, how many it needs, how many
    are in direction and how many shown, and its verdict in the words every goal uses."""
    lines = ["A goal is **met** only where enough of its rows are shown — significant after the Holm "
             "correction of their family, in the expected direction —, **in direction, not shown** where "
             "enough lie the expected way without that, else **missed**.", "",
             "| goal | rows | needs | in direction | shown | verdict |", "|---|---|---:|---:|---:|---|"]
    for goal in goals:
        rows = "; ".join(_goal_row(goal, row, claims[row["claim"]]) for row in goal["rows"]) or "–"
        lines.append(f"| {goal['goal']}: {goal['statement']} | {rows} | {goal['needs']} | "
                     f"{goal['in_direction']} | {goal['shown']} | {goal['verdict']} |")
    return "\n".join(lines) + "\n"


def _goal_row(goal: dict[str, Any], row: dict[str, Any], claim: dict[str, Any]) -> str:
    state = "shown" if row["shown"] else "in direction" if row["in_direction"] else "not in direction"
    if goal["on"] == "target":
        bound = "≤" if claim["expect"] == "lower" else "≥"
        test = "one seed: not tested" if row["p_holm"] is None else f"p {row['p_holm']:.3g} (Holm, seeds)"
        return (f"{claim['condition']} {claim['value']:.4f} against {bound} {claim['target']:g} "
                f"({claim['task']} {claim['metric']}): {state} — {test}")
    return f"{claim_figures(claim)}: {state} — {verdict_text(claim)}"


__all__ = ["claim_figures", "claims_markdown", "collapsed_markdown", "comparison_markdown", "floor_cell",
           "goals_markdown", "machine_label", "results_markdown"]
