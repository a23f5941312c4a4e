"""The options of Contriever pre-training (``objective.*``), torch-free: settings resolve without torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from seedr.config.settings import Pooling


@dataclass
class ContrieverConfig:
    """Options of Contriever pre-training (the released ``contriever.sh`` defaults).

    Attributes:
        temperature: τ of the InfoNCE loss (released script: 0.05).
        ratio_min: shortest crop, as a share of the text's tokens (released script: 0.05).
        ratio_max: longest crop, as a share of the text's tokens (released script: 0.5).
        deletion_probability: each token of a crop is deleted with this probability (released: 0.1; 0 = none).
        pooling: how a crop's vector is pooled: ``"mean"`` over real tokens (Contriever) or ``"cls"``; the
            saved encoder records it.
        normalize: score by the cosine (unit vectors) instead of the dot product (released default: dot);
            the saved encoder then normalises its vectors.
        queue_size: keys kept from earlier batches as further negatives (MoCo); 0 (default) = in-batch
            negatives only. The paper's released model: 131072, a multiple of the global batch.
        momentum: m of the key encoder's update ``k ← m·k + (1 − m)·θ`` (released: 0.9995); used with a queue.
        global_in_batch: the in-batch keys are those of the global batch, gathered from every process
            (``seedr.losses.gather``); ``false``: this process's only.
    """

    trained_representation: ClassVar[str] = "Contriever's {pooling}-pooled vector"

    temperature: float = 0.05
    ratio_min: float = 0.05
    ratio_max: float = 0.5
    deletion_probability: float = 0.1
    pooling: Pooling = "mean"
    normalize: bool = False
    queue_size: int = 0
    momentum: float = 0.9995
    global_in_batch: bool = True

    def __post_init__(self) -> None:
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if not 0 <= self.ratio_min <= self.ratio_max <= 1:
            raise ValueError(f"need 0 ≤ ratio_min ≤ ratio_max ≤ 1, got {self.ratio_min} and {self.ratio_max}")
        if not 0 <= self.deletion_probability < 1:
            raise ValueError(f"deletion_probability must be in [0, 1), got {self.deletion_probability}")
        if self.pooling not in ("cls", "mean"):
            raise ValueError(f"pooling must be 'cls' or 'mean', got {self.pooling!r}")
        if self.queue_size < 0:
            raise ValueError(f"queue_size must be ≥ 0, got {self.queue_size}")
        if not 0 <= self.momentum <= 1:
            raise ValueError(f"momentum must be in [0, 1], got {self.momentum}")
