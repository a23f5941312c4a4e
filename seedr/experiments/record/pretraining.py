"""What each condition's pre-training really ran, read from its run folders: a ``flops_budget`` sets a run's
steps when it starts (``seedr.training.compute_budget``), so an experiment's variables do not say them; the
results file keeps them (``pretraining``) and the claims page reads them from there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def pretraining_record(chains: dict[str, list[tuple[Any, Path]]]) -> dict[str, dict[str, int]]:
    """Each condition's pre-training as its runs recorded it (each run folder's ``config.yaml``): the steps
    they took (summed over a chain's pre-trainings: coCondenser's warm start from Condenser is two), the
    batch and the length (the last run's)."""
    recorded: dict[str, dict[str, int]] = {}
    for name, chained in chains.items():
        for step, folder in chained:
            if step.kind == "pretrain" and (folder / "config.yaml").is_file():
                config = yaml.safe_load((folder / "config.yaml").read_text(encoding="utf-8"))
                train = config["train"]
                steps = recorded.get(name, {}).get("steps", 0) + train["max_steps"]
                recorded[name] = {"steps": steps, "batch": train.get("global_batch_size") or train["batch_size"],
                                  "length": config["data"]["max_seq_length"]}
    return recorded
