"""The options of unsupervised SimCSE (``objective.*``), torch-free: settings resolve without torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass
class SimCSEConfig:
    """Options of unsupervised SimCSE (the paper's and its released script's defaults).

    Attributes:
        temperature: τ of eq. 4 (paper: 0.05).
        mlp: pass [CLS] through a new dense + tanh layer during training only (the released unsupervised
            model: ``--pooler_type cls --mlp_only_train``); ``false``: contrast the bare [CLS].
        global_in_batch: the negatives are the second passes of the global batch, gathered from every
            process (``seedr.losses.gather``); ``false``: this process's only.
    """

    trained_representation: ClassVar[str] = "SimCSE's {pooling}"

    temperature: float = 0.05
    mlp: bool = True
    global_in_batch: bool = True

    def __post_init__(self) -> None:
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
