"""Unsupervised SimCSE (Gao, Yao & Chen, EMNLP 2021, "SimCSE: Simple Contrastive Learning of Sentence
Embeddings", §3): the same text through the encoder twice, dropout on, so that the two passes differ only
by their dropout masks z and z'; each text's second pass is its positive, the other texts' second passes
in the batch its negatives:

    h_i^z = f_θ(x_i, z)                                                                       (§3)
    ℓ_i = −log exp(sim(h_i^{z_i}, h_i^{z'_i}) / τ) / Σ_{j=1}^N exp(sim(h_i^{z_i}, h_j^{z'_j}) / τ)  (eq. 4)
    sim(h1, h2) = h1ᵀh2 / (‖h1‖·‖h2‖),  τ = 0.05                                              (§2, eq. 1)

What seedr takes from the authors' released code (princeton-nlp/SimCSE, ``simcse/models.py``,
``run_unsup_example.sh``) where the paper is brief:

- h is the [CLS] state passed through an MLP (a dense layer and tanh, ``MLPLayer``, new weights) during
  training only: ``--pooler_type cls --mlp_only_train``; the saved encoder pools by the bare [CLS]
  (``cls_before_pooler`` at inference), the paper's §6.3 / Table 6 ("w/ MLP (train)"). ``mlp: false``
  trains the bare [CLS] itself.
- Both passes are one encoder call on the batch stacked twice (``cl_forward`` flattens ``(bs, 2, len)``
  into ``2·bs`` rows), so every row draws its own dropout masks.
- ℓ_i is averaged over the anchors (``nn.CrossEntropyLoss``); only x_i's first pass is an anchor and
  only second passes are candidates, as eq. 4 writes it (the batch is not symmetrised).
- Across processes the released code gathers z1 and z2 and computes every anchor's loss on every
  process; seedr gathers the second passes with gradients (``seedr.losses.gather``) and averages over
  this process's anchors, which gives the same gradient (see that module).

The corpus: the paper's 10⁶ sentences drawn from English Wikipedia, cut to 32 tokens; seedr's examples
are token-shard blocks (the recipe: ``doc_sentences`` of 32 tokens, whole sentences of one article). An
experiment may run it at another length: ``pretraining_objectives`` gives every objective the same 64
tokens, so that they compare at equal FLOPs on the same text.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from seedr.config.settings import MAX_LENGTH
from seedr.losses.base import Similarity, candidate_scores
from seedr.modeling.bow_decoder import at_least_float32
from seedr.modeling.encoder import pool, save_encoder
from seedr.modeling.folders import EncoderShape
from seedr.objectives.base import Objective, ObjectiveOutput
from seedr.objectives.masking import pad_token_ids
from seedr.objectives.simcse.options import SimCSEConfig


class TrainingMLP(nn.Module):
    """SimCSE's ``MLPLayer``: tanh(W h + b) over the [CLS] state, used in training and then discarded."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)

    def forward(self, cls_vectors: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(cls_vectors))  # (B, H)


class SimCSE(Objective):
    """Unsupervised SimCSE: each text twice with dropout, InfoNCE over cosine / τ of the in-batch [CLS].

    Parts: ``simcse`` (eq. 4, the whole loss); metric ``accuracy`` (share of anchors whose own second
    pass scores highest).

    Example:
        >>> objective = OBJECTIVES.get("simcse")(encoder, tokenizer, SimCSEConfig())
        >>> objective(**objective.collate(token_id_lists)).parts["simcse"]
    """

    name = "simcse"
    config_class = SimCSEConfig
    new_parts = ("SimCSE's MLP over [CLS] (training only)",)

    @classmethod
    def multiply_adds_per_example(cls, options: SimCSEConfig, max_seq_length: int, shape: EncoderShape,
                                  *, batch_size: int) -> float:
        """Two passes of the text through the encoder, and the MLP on each pass's [CLS]."""
        mlp = shape.hidden ** 2 if options.mlp else 0
        return 2 * (shape.sequence_multiply_adds(max_seq_length) + mlp)

    def __init__(self, encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                 config: SimCSEConfig | None = None) -> None:
        super().__init__(encoder, tokenizer, config or SimCSEConfig())
        if tokenizer.pad_token_id is None:
            raise ValueError("SimCSE needs a tokenizer with a [PAD] token")
        self.mlp = TrainingMLP(encoder.config.hidden_size) if self.config.mlp else None
        if self.mlp is None:
            self.new_parts = ()

    def collate(self, examples: Sequence[Sequence[int]]) -> dict[str, torch.Tensor]:
        input_ids, attention_mask = pad_token_ids(examples, self.tokenizer.pad_token_id)  # (B, T)
        return {"input_ids": input_ids, "attention_mask": attention_mask}

    def embed_twice(self, input_ids: torch.Tensor, attention_mask: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor]:
        """h^z and h^z' (each (B, H)): the batch stacked twice through the encoder in one call, so that
        each row draws its own dropout masks, [CLS] pooled, then the training MLP."""
        batch = input_ids.shape[0]
        states = self.encoder(input_ids=input_ids.repeat(2, 1),
                              attention_mask=attention_mask.repeat(2, 1)).last_hidden_state  # (2B, T, H)
        cls_vectors = pool(states, attention_mask.repeat(2, 1), "cls")  # (2B, H)
        if self.mlp is not None:
            cls_vectors = self.mlp(cls_vectors)
        return cls_vectors[:batch], cls_vectors[batch:]

    def contrastive_loss(self, first: torch.Tensor, second: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Eq. 4 averaged over this process's anchors ``first`` (B, H) against the second passes (gathered
        from every process under ``global_in_batch``): ``(loss, accuracy)``."""
        first, second = at_least_float32(first), at_least_float32(second)  # bf16 activations: the softmax in float32
        scores = candidate_scores(first, second, second.new_zeros(len(second), 0, second.shape[-1]),
                                  Similarity("cosine", 1 / self.config.temperature), in_batch=True,
                                  global_in_batch=self.config.global_in_batch)  # (B, W·B)
        return F.cross_entropy(scores.scores, scores.target), scores.accuracy()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> ObjectiveOutput:
        """``input_ids``, ``attention_mask``: the clean texts (B, T), each encoded twice."""
        first, second = self.embed_twice(input_ids, attention_mask)
        loss, accuracy = self.contrastive_loss(first, second)
        return ObjectiveOutput(loss=loss, parts={"simcse": loss}, metrics={"accuracy": accuracy})

    def save_encoder(self, directory: str | os.PathLike, max_seq_length: int = MAX_LENGTH) -> Path:
        """The encoder without the MLP (``mlp_only_train``), pooling by [CLS], scored by the cosine it
        was trained with."""
        return save_encoder(self.encoder, self.tokenizer, directory, pooling="cls", max_seq_length=max_seq_length,
                            similarity="cosine")
