"""Few-shot fine-tuning: the same recipe trained on a seeded sample of the training queries, once per
seed, and the dev metrics of the seeds averaged — CPDAE §4.4 (0.1k / 1k / 10k MS MARCO queries, "the
average of three samples"), SEED-Encoder Figure 6 (5% / 10% of the labels) and ICLR 2020 Tables 3-4
(1% / 5% / 80% of the questions). ``seedr finetune --few-shot N --seeds 1,2,3``."""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from seedr.data.queries import sample_queries
from seedr.data.training_sets import TrainingSet
from seedr.io import atomic_write
from seedr.provenance import record_run

console = Console(stderr=True)


def run_few_shot(config: Any, training: TrainingSet, dev: Any, out_dir: Path, resume: bool,
                 train: Callable[[Any, TrainingSet, Any, Path, bool], dict[str, Any]]) -> dict[str, Any]:
    """One run per seed on a seeded sample of the training queries (``sample_queries``: by count when
    ``few_shot`` ≥ 1, by fraction below), then the dev metrics of every seed and their mean and standard
    deviation in ``few-shot.json`` and ``few-shot.md`` (CPDAE §4.4: the average of three samples). One
    seed needs no dev set: its encoder is evaluated afterwards, as an experiment's conditions are.

    ``config`` is a ``FinetuneConfig``, ``dev`` its ``DevSet`` or None, and ``train`` what fine-tunes one
    seed's sample into a folder (``seedr.training.finetune``, which calls this for ``few_shot`` runs)."""
    seeds = config.seeds or [config.train.seed]
    if dev is None and len(seeds) > 1:
        raise ValueError("few-shot runs over several seeds are compared on a dev set: give --dev-qrels "
                         "(or one seed per run, and evaluate each encoder)")
    size = config.few_shot
    by_count = size is not None and size >= 1
    if by_count and not float(size).is_integer():
        raise ValueError(f"few_shot ≥ 1 is a number of queries and must be whole, got {size}")
    record_run(out_dir, config, None)
    runs = []
    for seed in seeds:
        sample = sample_queries(training.queries, count=int(size) if by_count else None,
                                fraction=None if by_count else size, seed=seed)
        console.rule(f"few-shot: {len(sample)} queries, seed {seed}")
        seed_config = dataclasses.replace(config, few_shot=None, seeds=[],
                                          train=dataclasses.replace(config.train, seed=seed))
        summary = train(seed_config, training.restricted_to(sample), dev, out_dir / f"seed-{seed}", resume)
        runs.append({"seed": seed, "queries": len(sample), "run": summary["run"], "dev": summary["dev"]})
    table = few_shot_table(runs)
    with atomic_write(out_dir / "few-shot.json") as stream:
        json.dump(table, stream, indent=2)
    with atomic_write(out_dir / "few-shot.md") as stream:
        stream.write(few_shot_markdown(table, size))
    return {"run": str(out_dir), "few_shot": table, "dev": table["mean"]}


def few_shot_table(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-seed dev metrics with their mean and (sample) standard deviation over seeds."""
    names = list(runs[0]["dev"]) if runs else []
    values = {name: [run["dev"][name] for run in runs] for name in names}
    return {"runs": runs, "mean": {n: statistics.fmean(v) for n, v in values.items()},
            "std": {n: statistics.stdev(v) if len(v) > 1 else 0.0 for n, v in values.items()}}


def few_shot_markdown(table: dict[str, Any], size: float | None) -> str:
    names = list(table["mean"])
    header = "| seed | queries | " + " | ".join(names) + " |\n|---|---|" + "---|" * len(names) + "\n"
    rows = "".join(f"| {run['seed']} | {run['queries']} | " + " | ".join(f"{run['dev'][n]:.4f}" for n in names)
                   + " |\n" for run in table["runs"])
    mean = "| mean ± std | | " + " | ".join(f"{table['mean'][n]:.4f} ± {table['std'][n]:.4f}" for n in names) + " |\n"
    return f"# Few-shot fine-tuning ({size:g} training queries)\n\n" + header + rows + mean


__all__ = ["few_shot_markdown", "few_shot_table", "run_few_shot"]
