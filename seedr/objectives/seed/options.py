"""The options of SEED-Encoder pre-training (``objective.*``), torch-free: settings resolve without torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from seedr.config.settings import DROPOUT, Pooling
from seedr.objectives.mlm.options import MLMConfig


#: How [CLS] enters SEED-Encoder's weak decoder (``seedr.objectives.seed.weak_decoder``): a cross-attention
#: sub-layer per layer, or one extra key of the windowed self-attention.
ClsPath = Literal["cross_attention", "joint"]


@dataclass
class SeedConfig(MLMConfig):
    """Options of SEED-Encoder pre-training (paper defaults).

    Attributes:
        decoder_layers: depth of the weak decoder (paper: 3; its Figure 3 also tries 1 and 5).
        attention_span: how many most recent positions each decoder position attends to, besides
            [CLS] (paper: 2); ``"all"`` = full causal attention, the strong-decoder baseline.
        decoder_weight: weight ``w`` of the decoder loss in ``L_MLM + w · L_dec`` (paper: 1).
        decoder_dropout: dropout inside the decoder (paper: 0.1, as the encoder).
        tie_embeddings: decoder input embeddings and output projection shared with the encoder's
            word embeddings (authors' code shares the input embeddings; default True).
        cls_path: how [CLS] enters the decoder: ``"cross_attention"`` (the authors' released code: a
            cross-attention sub-layer per layer, every position also sees position 0) or ``"joint"``
            (the ablation: [CLS] as one extra key of the windowed self-attention); see ``seedr.objectives.seed.weak_decoder``.
        pre_layer_norm: pre-LN decoder layers with a final LayerNorm (released code) or post-LN (BERT).
        bottleneck: the vector the decoder reads: ``"cls"`` (h0, the paper) or ``"mean"`` (the masked
            mean of the encoder states, for encoders that are used with mean pooling); the saved
            encoder records it as its pooling.
    """

    trained_representation: ClassVar[str] = "SEED-Encoder's {pooling} bottleneck"

    decoder_layers: int = 3
    attention_span: int | str = 2
    decoder_weight: float = 1.0
    decoder_dropout: float = DROPOUT
    tie_embeddings: bool = True
    cls_path: ClsPath = "cross_attention"
    pre_layer_norm: bool = True
    bottleneck: Pooling = "cls"

    def __post_init__(self) -> None:
        if self.cls_path not in ("cross_attention", "joint"):
            raise ValueError(f"cls_path must be 'cross_attention' or 'joint', got {self.cls_path!r}")
        if self.bottleneck not in ("cls", "mean"):
            raise ValueError(f"bottleneck must be 'cls' or 'mean', got {self.bottleneck!r}")
        super().__post_init__()
        if isinstance(self.attention_span, str) and self.attention_span != "all":
            raise ValueError(f"attention_span must be a positive integer or 'all', got {self.attention_span!r}")
        if isinstance(self.attention_span, int) and self.attention_span < 1:
            raise ValueError(f"attention_span must be ≥ 1, got {self.attention_span}")
        if self.decoder_layers < 1:
            raise ValueError(f"decoder_layers must be ≥ 1, got {self.decoder_layers}")

    @property
    def span(self) -> int | None:
        """The window as ``WeakDecoder`` takes it: None for full attention."""
        return None if self.attention_span == "all" else int(self.attention_span)
