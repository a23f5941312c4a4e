"""The options of RetroMAE pre-training (``objective.*``), torch-free: settings resolve without torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from seedr.objectives.mlm.options import MLMConfig


@dataclass
class RetroMaeConfig(MLMConfig):
    """Options of RetroMAE pre-training (the released pre-training command's values).

    Attributes:
        decoder_mask_probability: share of the non-special tokens each decoder row cannot see, besides its
            own (released: 0.5; the paper: an aggressive 50-70%).
        decoder_weight: weight of the decoder's loss in ``L_enc + w · L_dec`` (released: 1).
    """

    trained_representation: ClassVar[str] = "RetroMAE's {pooling} sentence embedding"

    mask_probability: float = 0.3
    decoder_mask_probability: float = 0.5
    decoder_weight: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 < self.decoder_mask_probability < 1:
            raise ValueError(f"decoder_mask_probability must be in (0, 1), got {self.decoder_mask_probability}")
