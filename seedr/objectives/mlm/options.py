"""The options of masked language modelling (``objective.*``), torch-free: settings resolve without torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass
class MLMConfig:
    """Options of masked language modelling.

    Attributes:
        mask_probability: share of each sequence's non-special tokens chosen as targets (BERT: 0.15;
            80% of them become [MASK], 10% a random token, 10% stay unchanged).
        mlm_head_from: a Hugging Face checkpoint folder whose safetensors hold an MLM head
            (``cls.predictions.*``, as ``BertForMaskedLM`` saves), or a seedr run folder of an objective
            with one (its newest checkpoint's head). Default: the folder the encoder was loaded from
            (or the run it is the product of), when it has one; otherwise the head is freshly initialised
            (MiniLM has none).
        save_head: also write the head into the saved encoder's safetensors (``cls.predictions.*``, as
            ``BertForMaskedLM`` names it), so the product is a masked-LM checkpoint that pre-training can
            continue from with its head (the seedr base); off by default, as a retriever needs no head.
    """

    #: The pooled vector the objective trains to stand for the text, in words, ``{pooling}`` for how it pools
    #: (``[CLS]`` or ``mean``): "SEED-Encoder's {pooling} bottleneck"; empty where the loss never reads a
    #: pooled vector (MLM). Fine-tuning a seed keeps the pooling its objective trained, and says so
    #: (``seedr.modeling.folders.pretrained_seed``). Each objective's options class sets it; MLM trains none.
    trained_representation: ClassVar[str] = ""

    mask_probability: float = 0.15
    mlm_head_from: str | None = None
    save_head: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.mask_probability <= 1:
            raise ValueError(f"mask_probability must be in (0, 1], got {self.mask_probability}")
