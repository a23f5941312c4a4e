"""Give the experiments recorded before issue 21 their chance levels, BM25 and floor, and re-render them.

Experiments recorded since issue 21 store each task's references in results.json (``run_experiment``:
``seedr.experiments.figures.references``). For those recorded before, this script computes them
without training, encoding or retrieving anything:

- chance levels from each task's definition and data (``RetrievalTask.chance``: the pool and the
  relevant items of each query); a task on a set-up folder gets that folder rebuilt in a temporary
  directory, without its tokenizer (from_scratch's NQ pool: the first 100-word passages of Wikipedia
  shard 00, as ``seedr prepare --passages 100`` cuts them);
- BM25 from the experiment's own BM25 condition, else from another recorded experiment whose task has
  the same definition (BM25 is deterministic: the five recorded BM25 runs on SciFact test agree to every
  digit), named in the report as "BM25 (reference)".

Then every recorded experiment is re-rendered (``seedr.experiments.records.rerender``: its claims, with
the texts and protocols of its file, judged under the floor; report.md's Comparison section and
report.html) and the README's claims table refreshed. Figures and p-values are the recorded ones.

    nice -n 19 .venv/bin/python docs/results/backfill_floor.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from seedr.experiments.claims_page import update_claims_page
from seedr.experiments.figures import references
from seedr.experiments.records import rerender
from seedr.experiments.spec import load_experiment, substitute
from seedr.experiments.steps import build_step
from seedr.experiments.tasks import TASKS
from seedr.io import atomic_write

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"


def _definition(task: Any) -> str:
    return json.dumps([task.kind, task.settings], sort_keys=True)


def _setup_folders(experiment: Any, needed: set[str], scratch: Path) -> dict[str, str]:
    """The set-up folders the tasks read, rebuilt under ``scratch`` (a prepared corpus without its
    tokenizer, cut to the articles the pool needs)."""
    folders = {}
    for name in needed:
        spec = experiment.setup[name]
        settings = dict(spec.settings)
        if spec.kind == "prepare":
            settings.update(tokenizer_vocab=0, max_articles=settings.get("max_articles") or 5000)
        step = build_step(spec.kind, settings, f"{experiment.path}: setup.{name}")
        folder = scratch / f"{experiment.name}-{name}"
        step.run(folder)
        folders[f"setup.{name}"] = str(step.product(folder) or folder)
    return folders


def main() -> int:
    recorded = {path.parent.name: json.loads(path.read_text(encoding="utf-8"))
                for path in sorted(RESULTS.glob("*/results.json")) if (path.parent / "report.md").is_file()}
    experiments = {name: load_experiment(name, "cpu") for name in recorded}
    bm25_by_definition: dict[str, dict[str, float]] = {}
    for name, results in recorded.items():
        experiment = experiments[name]
        bm25 = [c for c, condition in experiment.conditions.items() if condition.retrieve == "bm25"]
        for task_name, task in results["tasks"].items():
            if bm25 and bm25[0] in task["systems"] and "{setup." not in _definition(experiment.tasks[task_name]):
                means = {metric: values["mean"] for metric, values in task["systems"][bm25[0]].items()}
                known = bm25_by_definition.setdefault(_definition(experiment.tasks[task_name]), {})
                for metric, value in means.items():
                    if metric in known and abs(known[metric] - value) > 1e-12:
                        raise SystemExit(f"{name}/{task_name}: BM25 {metric} {value} differs from {known[metric]}")
                    known[metric] = value
    with tempfile.TemporaryDirectory() as scratch:
        for name, results in recorded.items():
            experiment = experiments[name]
            bm25 = next((c for c, condition in experiment.conditions.items() if condition.retrieve == "bm25"), None)
            for task_name, task in results["tasks"].items():
                spec = experiment.tasks[task_name]
                needed = {setup for setup in experiment.setup if f"{{setup.{setup}}}" in _definition(spec)}
                folders = _setup_folders(experiment, needed, Path(scratch)) if needed else {}
                retrieval = TASKS.get(spec.kind)(task_name, substitute(spec.settings, folders, name), spec.metrics,
                                                 f"{experiment.path}: tasks.{task_name}")
                pool = len(retrieval.documents())
                if spec.kind == "qa" and retrieval.config.max_passages and pool < retrieval.config.max_passages:
                    raise SystemExit(f"{name}/{task_name}: the rebuilt pool holds {pool} passages, not "
                                     f"{retrieval.config.max_passages}")
                if bm25 and bm25 in task["systems"]:
                    bm25_means = {metric: values["mean"] for metric, values in task["systems"][bm25].items()}
                    system = bm25
                else:
                    known = bm25_by_definition.get(_definition(spec), {})
                    bm25_means = {metric: known[metric] for metric in spec.metrics if metric in known} or None
                    system = None
                task.update(references(retrieval.chance(), bm25_means, system, pool))
                print(f"{name}/{task_name}: pool {pool:,}, chance {task['chance']}, floor {task['floor']}",
                      flush=True)
            with atomic_write(RESULTS / name / "results.json") as stream:
                json.dump(results, stream, indent=2)
            rerender(RESULTS / name, experiment)
    update_claims_page(ROOT / "docs" / "claims.md", RESULTS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
