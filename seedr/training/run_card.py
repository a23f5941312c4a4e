"""What a run's model card says it trained with: its objective, or its loss and negatives, each described
by the first paragraph of its module's docstring (which cites its paper).

Training knows its registries; the card (``seedr.modeling.model_card``) knows none of them. So, as
transformers' ``Trainer.create_model_card`` and sentence-transformers' model-card callback are handed
what the trainer knows, ``seedr.training.pretrain`` and ``seedr.training.finetune`` give ``Trainer`` the
descriptions (``describe_run``), and it hands them to ``seedr.engine.checkpoint.publish_product``
each time it publishes ``<run>/encoder``. ``write_run_card`` writes the same card for an encoder folder
from its run folder alone (e.g. a model copied out of a run).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from seedr.config.loading import read_recipe
from seedr.losses import LOSSES
from seedr.modeling.model_card import write_model_card
from seedr.negatives import NEGATIVES
from seedr.objectives import OBJECTIVES


def describe_run(config: Mapping[str, Any], changes: Sequence[str] = ()) -> dict[str, str]:
    """``{"objective" | "loss" | "negatives": description}`` of a run from its resolved config (a
    ``PretrainConfig`` or ``FinetuneConfig`` as a dict, as ``config.yaml`` holds it); names that are not
    registered are left out. ``changes``: what the run changed of the model it started from, one line each
    (``Objective.changes``: a new MLM head or decoder, another pooling), under ``"changes"``, one per line."""
    components = {"objective": (OBJECTIVES, config.get("objective_name")),
                  "loss": (LOSSES, config.get("loss")), "negatives": (NEGATIVES, config.get("negatives"))}
    described = {role: registry.describe(name) for role, (registry, name) in components.items()}
    if changes:
        described["changes"] = "\n".join(changes)
    return {role: text for role, text in described.items() if text}


def write_run_card(encoder_dir: str | os.PathLike, run_dir: str | os.PathLike, step: int | None = None) -> Path:
    """Write the model card of ``encoder_dir`` with what ``run_dir`` records, its objective, loss and
    negatives described (``describe_run`` of its ``config.yaml``); returns the card's path.

    Example:
        >>> write_run_card("models/seedr-base", "runs/seedr-base/phase2")  # doctest: +SKIP
    """
    config_file = Path(run_dir) / "config.yaml"
    config = read_recipe(config_file) if config_file.exists() else {}  # bounded YAML (seedr.config.loading)
    return write_model_card(encoder_dir, run_dir, step, describe_run(config))


__all__ = ["describe_run", "write_run_card"]
