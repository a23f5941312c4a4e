"""The options of Condenser pre-training (``objective.*``), torch-free: settings resolve without torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from seedr.objectives.mlm.options import MLMConfig


@dataclass
class CondenserConfig(MLMConfig):
    """Options of Condenser pre-training (the paper's and released code's defaults).

    Attributes:
        head_layers: Transformer layers of the Condenser head, each of the backbone's shape (paper and
            README: 2).
        early_layer: the backbone layer whose token states the head reads, counted as
            ``hidden_states`` counts them (0 = embeddings, L = the last layer); None = the middle layer,
            L // 2 (the paper's 6 of BERT-base's 12).
        late_mlm: add the backbone's own MLM loss on its last layer (L_mlm; the README's ``--late_mlm``);
            false trains by the head's MLM alone.
    """

    trained_representation: ClassVar[str] = "Condenser's {pooling}"

    head_layers: int = 2
    early_layer: int | None = None
    late_mlm: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.head_layers < 1:
            raise ValueError(f"head_layers must be ≥ 1, got {self.head_layers}")
        if self.early_layer is not None and self.early_layer < 0:
            raise ValueError(f"early_layer must be ≥ 0 (0 = the embeddings), got {self.early_layer}")
