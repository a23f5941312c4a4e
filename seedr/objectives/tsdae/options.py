"""The options of TSDAE pre-training (``objective.*``), torch-free: settings resolve without torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from seedr.config.settings import Pooling


@dataclass
class TsdaeConfig:
    """Options of TSDAE pre-training (paper defaults).

    Attributes:
        deletion_ratio: share of each text's tokens deleted from the encoder's input (paper: 0.6,
            the best noise of its comparison of noise types and ratios).
        tie_encoder_decoder: the decoder's embeddings, self-attention and feed-forward are the encoder's
            own parameters (paper and sentence-transformers' default: true); false gives the decoder its
            own copy, initialised from the encoder.
        bottleneck: the sentence vector ``s`` the decoder reads: ``"cls"`` (the paper's choice) or
            ``"mean"``; the saved encoder records it as its pooling.
    """

    trained_representation: ClassVar[str] = "TSDAE's {pooling} sentence vector"

    deletion_ratio: float = 0.6
    tie_encoder_decoder: bool = True
    bottleneck: Pooling = "cls"

    def __post_init__(self) -> None:
        if not 0 <= self.deletion_ratio < 1:
            raise ValueError(f"deletion_ratio must be in [0, 1), got {self.deletion_ratio}")
        if self.bottleneck not in ("cls", "mean"):
            raise ValueError(f"bottleneck must be 'cls' or 'mean', got {self.bottleneck!r}")
