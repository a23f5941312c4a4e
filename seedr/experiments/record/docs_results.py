"""Recording an experiment's results in the checkout, checking a re-run against them, re-rendering them.

``results.json`` (written by ``run_experiment`` into ``OUT/report``; committed under
``docs/results/NAME/`` by ``seedr experiment NAME --record``, ``record``) holds every figure — a (task,
system, metric) mean with the tolerance a re-run may move it by — each task's chance level, BM25 and
floor (``seedr.experiments.record.figures.references``), and every claim's verdict. ``verify`` compares a fresh
run with the recorded one; ``rerender`` re-derives a recorded experiment's verdicts and report from its
results.json (no model is trained or run).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from seedr.experiments.files import is_experiment_name
from seedr.experiments.record.figures import figures, floor, with_seed_sd
from seedr.experiments.record.recorded import (
    check_record_destination,
    load_results,
    made_by_shipped_file,
    recorded_results,
    shipped_file,
)
from seedr.experiments.record.results_markdown import results_markdown
from seedr.experiments.record.verdicts import claim_results, collapsed_conditions, goal_results
from seedr.io import DataError, atomic_directory, atomic_write, json_text


def verify(new: dict[str, Any], recorded: dict[str, Any]) -> list[str]:
    """Figures of ``recorded`` that ``new`` misses or moves by more than their tolerance (empty: all hold)."""
    fresh = {(f["task"], f["system"], f["metric"]): f["value"] for f in new["figures"]}
    problems = []
    for figure in recorded["figures"]:
        key = (figure["task"], figure["system"], figure["metric"])
        if key not in fresh:
            problems.append(f"{'/'.join(key)}: recorded {figure['value']:.4f}, missing from the re-run")
        elif abs(fresh[key] - figure["value"]) > figure["tolerance"]:
            problems.append(f"{'/'.join(key)}: recorded {figure['value']:.4f} ± {figure['tolerance']}, "
                            f"re-run {fresh[key]:.4f}")
    return problems


def record(report_dir: str | Path, results_dir: str | Path) -> Path:
    """Copy a run's report (``report.md``, ``plots/``, ``results.json``) to the experiment's results folder
    ``results_dir`` (``docs/results/NAME``), replacing what the previous report wrote there; what else the
    folder holds (``PROVENANCE.md``, earlier trials) stays. Written whole (``atomic_directory``). Its
    ``report.html`` stays behind: the record keeps what is read in the repository (Markdown, PNG, JSON)
    and ``seedr report docs/results/NAME`` makes the page again.

    Only a recorded report of that experiment is replaced, by a report its own file made: ``NAME`` must be
    an experiment's name (``seedr.experiments.files.is_experiment_name``), the report one of experiment
    NAME run from ``seedr/experiments/NAME.yaml`` (not a stray file of the same name), and an existing
    ``results_dir`` a folder (not a link) holding a results.json of the same; anything else is refused
    before anything is removed, so that no name or stray file can point the removal at another folder."""
    report_dir, results_dir = Path(report_dir), Path(results_dir)
    name = results_dir.name
    if not (report_dir / "results.json").is_file():
        raise DataError(report_dir, "no results.json: not a finished experiment report")
    if not is_experiment_name(name):
        raise DataError(results_dir, f"{name!r} is no experiment's name: refusing to record into it")
    reported = recorded_results(report_dir)
    if reported.get("experiment") != name:
        raise DataError(report_dir, f"is a report of experiment {reported.get('experiment')!r}, not of {name!r}: "
                                    f"refusing to record it in {results_dir}")
    if not made_by_shipped_file(reported, name):
        raise DataError(report_dir, f"was made by {reported.get('file')}, not by experiment {name!r}'s own file "
                                    f"({'/'.join(shipped_file(name))}): refusing to record it in {results_dir}")
    check_record_destination(results_dir, name)
    written = {entry.name for entry in report_dir.iterdir()} - {"report.html"}
    with atomic_directory(results_dir) as folder:
        if results_dir.is_dir():  # what the report does not write (PROVENANCE.md, trials) is kept
            for entry in results_dir.iterdir():
                if entry.name in written:
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.copytree(entry, folder / entry.name, symlinks=True)
                else:
                    shutil.copy2(entry, folder / entry.name, follow_symlinks=False)
        shutil.copytree(report_dir, folder, ignore=shutil.ignore_patterns("report.html"), dirs_exist_ok=True)
    return results_dir


def _replace_comparison(markdown: str, section: str) -> str:
    """``markdown`` (a report.md) with its "## Comparison" section's body replaced by ``section``: the
    body ends at the plots (``![``) or the next "## " heading."""
    head, marker, rest = markdown.partition("## Comparison\n")
    if not marker:
        raise ValueError("the report has no '## Comparison' section")
    lines = rest.splitlines(keepends=True)
    end = next((i for i, line in enumerate(lines) if line.startswith(("![", "## "))), len(lines))
    return f"{head}{marker}\n{section.strip()}\n\n" + "".join(lines[end:])


def rerender(results_dir: str | Path, experiment: Any) -> dict[str, Any]:
    """Re-derive a recorded experiment's claims from its ``results.json`` under the current rules and
    the claims of its file (``experiment``: texts, protocols, the floor), then re-write results.json, the
    report's title and the "Comparison" section of report.md (``seedr report`` makes its HTML page again).
    Figures are not touched and nothing is run: p-values come from the recorded comparisons and claims,
    tests over seeds from the recorded figures of each group's members (per-query scores of the members,
    which the tests over seeds once read, are no longer kept: ``seed_scores`` is dropped); each figure's
    tolerance is re-derived from the recorded seed spread and the file's tolerances; each task
    needs its recorded references (``figures.references``: chance levels, BM25, floor)."""
    results_dir = Path(results_dir)
    results = load_results(results_dir)
    for task in results["tasks"].values():  # the floor under the current rule, from the recorded references
        if task.get("chance") is not None:
            task["floor"] = {metric: floor(level, (task.get("bm25") or {}).get(metric))
                             for metric, level in task["chance"].items()}
    # each figure's tolerance under the current rule (measured from its seeds where they were), and each
    # group's seed SD beside its mean; the figures themselves are not touched
    spread = results.get("seed_spread") or {}
    with_seed_sd(results["tasks"], spread)
    tolerances = {(f["task"], f["system"], f["metric"]): f for f in
                  figures(results["tasks"], experiment.tolerance, results.get("diagnostics"), experiment.groups, spread)}
    for figure in results.get("figures", []):
        current = tolerances.get((figure["task"], figure["system"], figure["metric"]))
        if current is not None:
            figure.update(tolerance=current["tolerance"], tolerance_from=current["tolerance_from"])
    # a pair the record has no test of stays untested: its seeds' test alone is not the claim's p-value
    keyed = {(c["condition"], c["against"], c["task"], c["metric"]): c for c in results.get("claims", [])
             if "untested" not in c}
    p_values = {key: c.get("p_queries", c["p_value"]) for key, c in keyed.items()}
    results.pop("seed_scores", None)
    results["claims"] = claim_results(experiment, results["tasks"], None, results.get("diagnostics"), p_values)
    results["collapsed"] = collapsed_conditions(experiment, results["tasks"])
    results["goals"] = goal_results(experiment, results["claims"], results["tasks"])
    results["title"] = experiment.title  # a title reworded in the file (what a run measured) is the report's
    with atomic_write(results_dir / "results.json") as stream:
        stream.write(json_text(results))
    report = (results_dir / "report.md").read_text(encoding="utf-8")
    if report.startswith("# "):
        body = report.partition("\n")[2]
        report = f"# {experiment.title}\n{body}"
    markdown = _replace_comparison(report, results_markdown(results))
    with atomic_write(results_dir / "report.md") as stream:
        stream.write(markdown)
    return results


__all__ = ["record", "rerender", "verify"]
