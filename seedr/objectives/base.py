"""What every pre-training objective is: a module that wraps the encoder, owns its auxiliary parts
(MLM head, decoder, projection ...), and returns its total loss together with the named parts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from seedr.modeling.encoder import save_encoder
from seedr.modeling.outputs import ObjectiveOutput
from seedr.registry import Registry


class Objective(nn.Module):
    """Base class of pre-training objectives.

    Subclasses set ``name`` and ``config_class`` (a dataclass of their options), build their
    auxiliary modules in ``__init__(encoder, tokenizer, config)``, and implement:

    - ``collate(examples) -> dict[str, Tensor]``: turn a list of examples (token id lists for
      single-text objectives; dicts for two-tower ones) into exactly the keys ``forward`` takes;
    - ``forward(**batch) -> ObjectiveOutput``.

    Only ``self.encoder`` (a ``transformers`` model) is the product; ``save_encoder`` writes it in
    Hugging Face + sentence-transformers form. Everything else is saved in the training state so a
    run can resume.
    """

    name: ClassVar[str] = ""
    config_class: ClassVar[type] = object
    #: "tokens": examples are token-id lists cut from a tokenised corpus (MLM, SEED, CPDAE);
    #: "pairs": examples are (query, document) text pairs from a pair builder (ICT, BFS, WLP).
    input_kind: ClassVar[str] = "tokens"

    def __init__(self, encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, config: Any) -> None:
        super().__init__()
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.config = config

    def collate(self, examples: list[Any]) -> dict[str, torch.Tensor]:
        raise NotImplementedError(f"{type(self).__name__} does not define collate")

    @property
    def pooling(self) -> str:
        """How the saved encoder pools: the objective's ``bottleneck`` option where it has one
        (the vector its decoder reads was trained to be the text's representation), else [CLS]."""
        return getattr(self.config, "bottleneck", "cls")

    def save_encoder(self, directory: str | os.PathLike, max_seq_length: int = 512) -> Path:
        return save_encoder(self.encoder, self.tokenizer, directory, pooling=self.pooling,
                            max_seq_length=max_seq_length)


OBJECTIVES: Registry[type[Objective]] = Registry("objective")

__all__ = ["OBJECTIVES", "Objective", "ObjectiveOutput"]
