"""What a trained model's ``forward`` returns to the trainer (``seedr.engine.trainer.Trainer``): the
pre-training objectives (``seedr.objectives``) and the fine-tuning dual encoder
(``seedr.retrieval.dual_encoder``) alike, as transformers' models return their ``ModelOutput``s."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class ObjectiveOutput:
    """``loss`` is what is back-propagated; ``parts`` are its named components (already weighted as
    they enter ``loss``), each logged by the trainer, e.g. ``{"mlm": ..., "weak_decoder": ...}``;
    ``metrics`` are other numbers worth logging that are not part of the loss (e.g. in-batch accuracy)."""

    loss: torch.Tensor
    parts: dict[str, torch.Tensor] = field(default_factory=dict)
    metrics: dict[str, torch.Tensor] = field(default_factory=dict)


__all__ = ["ObjectiveOutput"]
