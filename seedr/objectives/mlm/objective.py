"""Masked language modelling (Devlin et al., 2019), the base of every single-text objective here.

SEED-Encoder (Lu et al., 2021, eq. 11: L = L_MLM + L_dec) and CPDAE (Ma et al., 2022, eq. 6) both add
their auxiliary loss to this one, so both subclass ``MaskedLanguageModel``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import torch
from torch.nn import functional as F
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from seedr.config.settings import MAX_LENGTH
from seedr.engine.checkpoint import run_part_weights
from seedr.io import DataError
from seedr.modeling.folders import EncoderShape
from seedr.modeling.mlm_head import MaskedLMHead
from seedr.objectives.base import Objective, ObjectiveOutput
from seedr.objectives.masking import IGNORE_INDEX, mask_tokens, pad_token_ids, special_tokens_mask
from seedr.objectives.mlm.options import MLMConfig


class MaskedLanguageModel(Objective):
    """BERT's MLM: predict the chosen tokens of a BERT-masked input from the encoder's states.

    Logits are computed only at the chosen positions (gather the hidden states, then the head): the
    head's V-wide projection dominates the cost otherwise (about 2.5× faster on CPU).

    Example:
        >>> objective = OBJECTIVES.get("mlm")(encoder, tokenizer, MLMConfig())
        >>> batch = objective.collate([[101, 7592, 2088, 102], [101, 2088, 102]])
        >>> objective(**batch).parts["mlm"]
    """

    name = "mlm"
    config_class = MLMConfig
    diagnostics = frozenset({"masked_lm"})

    @classmethod
    def multiply_adds_per_example(cls, options: MLMConfig, max_seq_length: int, shape: EncoderShape,
                                  *, batch_size: int) -> float:
        """The text through the encoder, and the head (a dense layer, then the vocabulary) at its masked
        tokens only (``mlm_logits``)."""
        head = options.mask_probability * max_seq_length * (shape.hidden ** 2 + shape.prediction_multiply_adds)
        return shape.sequence_multiply_adds(max_seq_length) + head

    def __init__(self, encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                 config: MLMConfig | None = None) -> None:
        super().__init__(encoder, tokenizer, config or self.config_class())
        if tokenizer.mask_token_id is None or tokenizer.pad_token_id is None:
            raise ValueError(f"{type(self).__name__} needs a tokenizer with [MASK] and [PAD] tokens")
        self.mlm_head = MaskedLMHead(encoder.config)
        self._load_mlm_head(self.config.mlm_head_from, encoder)

    def _load_mlm_head(self, explicit: str | None, encoder: PreTrainedModel) -> None:
        """Load the head from ``explicit`` (``mlm_head_from``), else from the encoder's folder or its run;
        ``self.head_loaded`` says whether one was found (``changes`` announces a new one)."""
        if explicit is not None:
            if not (self.mlm_head.load_from_checkpoint(explicit) or self._load_run_head(Path(explicit))):
                raise DataError(explicit, "no MLM head in this folder: neither cls.predictions.* in its "
                                          "safetensors nor an MLM-family seedr run's checkpoint",
                                field="mlm_head_from")
            self.head_loaded = True
            return
        loaded_from = getattr(encoder, "name_or_path", "")
        self.head_loaded = bool(loaded_from) and Path(loaded_from).is_dir() and (
            self.mlm_head.load_from_checkpoint(loaded_from)
            or self._load_run_head(Path(loaded_from).parent))  # a seedr run's product is <run>/encoder

    def changes(self, init: str) -> list[str]:
        """The base's, after the MLM head's when ``init`` has none: a new head guesses over the vocabulary,
        so the first MLM loss is about ln V (10.3 for BERT's 30,522 tokens), not the encoder's own."""
        vocabulary = self.encoder.config.vocab_size
        head = (f"MLM head: new, from random weights ({init} has no cls.predictions.*, nor a seedr run's head): "
                f"the first MLM loss is about ln {vocabulary:,} = {math.log(vocabulary):.1f}")
        return ([] if self.head_loaded else [head]) + super().changes(init)

    def _load_run_head(self, run_dir: Path) -> bool:
        """Load the head trained by a seedr run (MLM, SEED-Encoder or CPDAE): ``mlm_head.*`` of its newest
        checkpoint's full weights, whose encoder is the run's product. False when ``run_dir`` is not such
        a run."""
        head = run_part_weights(run_dir, "mlm_head")
        if not head:
            return False
        self.mlm_head.load_state_dict(head)
        return True

    def save_encoder(self, directory: str | os.PathLike, max_seq_length: int = MAX_LENGTH) -> Path:
        """The encoder as every objective saves it, with the MLM head when ``config.save_head``."""
        path = super().save_encoder(directory, max_seq_length)
        if self.config.save_head:
            self.mlm_head.save_to_checkpoint(path)
        return path

    # ----- batches ---------------------------------------------------------------------------------

    def pad(self, examples: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(input_ids, attention_mask)``, both ``(B, T)``, from ``[CLS] … [SEP]`` token-id lists."""
        return pad_token_ids(examples, self.tokenizer.pad_token_id)

    def mask(self, input_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """BERT-mask a padded batch (specials and padding never chosen): ``(masked_input_ids, labels)``."""
        specials = special_tokens_mask(input_ids, self.tokenizer.all_special_ids)  # (B, T)
        return mask_tokens(input_ids, specials, self.tokenizer.mask_token_id, len(self.tokenizer),
                           self.config.mask_probability)

    def collate(self, examples: Sequence[Sequence[int]]) -> dict[str, torch.Tensor]:
        input_ids, attention_mask = self.pad(examples)
        masked_input_ids, labels = self.mask(input_ids)
        return {"input_ids": masked_input_ids, "attention_mask": attention_mask, "labels": labels}

    # ----- losses ----------------------------------------------------------------------------------

    def mlm_logits(self, sequence_output: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Logits ``(N, V)`` at the N target positions (``labels != IGNORE_INDEX``), in row-major order."""
        targets = labels != IGNORE_INDEX  # (B, T)
        word_embeddings = self.encoder.get_input_embeddings().weight  # (V, H)
        return self.mlm_head(sequence_output[targets], word_embeddings)  # (N, V)

    def mlm_loss(self, sequence_output: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy over the target positions (BERT's L_MLM); 0 for a batch without any
        (texts that are only [CLS] [SEP]), where a plain mean would be NaN."""
        logits = self.mlm_logits(sequence_output, labels)  # (N, V)
        total = F.cross_entropy(logits, labels[labels != IGNORE_INDEX], reduction="sum")
        return total / max(1, logits.shape[0])

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                labels: torch.Tensor) -> ObjectiveOutput:
        """``input_ids`` is the masked text (B, T); ``labels`` the originals at targets, else -100."""
        sequence_output = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        loss = self.mlm_loss(sequence_output, labels)
        return ObjectiveOutput(loss=loss, parts={"mlm": loss})
