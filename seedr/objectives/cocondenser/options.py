"""The options of coCondenser pre-training (``objective.*``), torch-free: settings resolve without torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from seedr.objectives.condenser.options import CondenserConfig


@dataclass
class CoCondenserConfig(CondenserConfig):
    """Options of coCondenser pre-training (the paper's and released code's defaults).

    Attributes:
        span_length: the longest span, in content tokens (without [CLS] and [SEP]); each text is cut into
            chunks of at most this many tokens, two of which are a positive pair (see
            ``seedr.objectives.cocondenser``; the paper's spans were cut outside the released code). Default 128.
        contrastive_weight: weight of the span contrastive term in the loss (the paper's sum: 1).
        temperature: divides the dot products (released code: none, i.e. 1).
        global_in_batch: the negatives are the spans of the whole batch, gathered from every process
            (the README's "NPROC x BATCH_SIZE" of about 2048 is the global batch); ``false``: this
            process's spans only.
    """

    trained_representation: ClassVar[str] = "coCondenser's {pooling}"

    span_length: int = 128
    contrastive_weight: float = 1.0
    temperature: float = 1.0
    global_in_batch: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.span_length < 1:
            raise ValueError(f"span_length must be ≥ 1, got {self.span_length}")
        if self.contrastive_weight < 0:
            raise ValueError(f"contrastive_weight must be ≥ 0, got {self.contrastive_weight}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
