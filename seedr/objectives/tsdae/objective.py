"""TSDAE (Wang, Reimers & Gurevych, Findings of EMNLP 2021, "TSDAE: Using Transformer-based Sequential
Denoising Auto-Encoder for Unsupervised Sentence Embedding Learning", arXiv:2104.06979): delete about
60% of a text's tokens, encode what is left into one sentence vector ``s``, and reconstruct the
original text from ``s`` alone with a Transformer decoder whose cross-attention reads only ``s``.

    J_TSDAE(θ) = E_x[log P_θ(x | x̃)] = E_x[Σ_t log exp(h_tᵀ e_t) / Σ_{i=1}^{N} exp(h_tᵀ e_i)]      (J_TSDAE)
    H^(k) = Attention(H^(k−1), [sᵀ], [sᵀ]),  Attention(Q, K, V) = softmax(QKᵀ/√d) V                (decoder)

with ``x̃`` the damaged text, ``h_t`` the decoder's state at step ``t``, ``e_i`` the word embeddings
(N words) and ``s`` the pooled encoder output; seedr minimises −J as a mean over the predicted tokens.
(The equations are named, not numbered: the paper is not among the project's papers to check numbers on.)

Where the paper leaves details to its released code (sentence-transformers' ``DenoisingAutoEncoderLoss``
and ``DenoisingAutoEncoderDataset``, which the paper points to), seedr follows that code:

- The decoder is the encoder's own architecture as a causal language model (``BertLMHeadModel`` with
  ``is_decoder`` and ``add_cross_attention``): every layer has causal self-attention, a cross-attention
  sub-layer whose only memory is ``s`` (one key, so its softmax is 1 and ``s`` reaches every
  position as ``W_o W_v s``) and the feed-forward. With ``tie_encoder_decoder=True`` (the paper's and
  the library's default) every parameter the decoder shares by name with the encoder (embeddings,
  self-attention, feed-forward, LayerNorms) *is* the encoder's: only the cross-attention sub-layers and
  the prediction head are the decoder's own. seedr ties the other way round from the library (the
  decoder borrows the encoder's parameters at each call, ``torch.func.functional_call``), which is the
  same function, keeps the encoder the product and registers each parameter once.
- The prediction head is BERT's (dense, GELU, LayerNorm, then the tied word embeddings plus a bias:
  ``seedr.modeling.mlm_head``), not J_TSDAE's bare ``h_tᵀ e_i``; like the library's ``from_pretrained``
  of the encoder's checkpoint as the decoder, it starts from the encoder's MLM head (``cls.predictions.*``)
  when its folder has one (seedr-base, BERT), else from BERT's initialisation, as do the
  cross-attention sub-layers.
- Teacher forcing on the clean text ``[CLS] … [SEP]``: position ``p`` reads ``x_p`` and predicts
  ``x_{p+1}``; padding is never a target (the library's ``ignore_index=pad_token_id``).
- Deletion: the released dataset keeps each word with probability 1 − 0.6 and keeps one word when it
  would delete them all. seedr's corpus is token shards, so it deletes WordPiece tokens (never [CLS]
  or [SEP]) rather than nltk words — the same ratio over a finer unit; at least one token is kept.
  Deletions are drawn in ``draw_kept`` (torch's RNG, or a ``generator``), apart from the loss, so a
  test can fix them.
- Pooling: [CLS] (the paper's pooling comparison: [CLS] works best for TSDAE); ``bottleneck=mean`` trains
  the masked mean instead. The saved encoder records it.

Only the encoder is the product; the decoder's cross-attention and head live in the training state.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from pathlib import Path

import torch
from torch.func import functional_call
from torch.nn import functional as F
from transformers import BertModel, PreTrainedModel, PreTrainedTokenizerBase

from seedr.modeling.encoder import pool
from seedr.modeling.folders import EncoderShape
from seedr.modeling.mlm_head import MaskedLMHead
from seedr.objectives.base import Objective, ObjectiveOutput, expected_longest
from seedr.objectives.masking import pad_token_ids, special_tokens_mask
from seedr.objectives.tsdae.options import TsdaeConfig


def shared_parameter_names(decoder: torch.nn.Module, encoder: torch.nn.Module) -> tuple[str, ...]:
    """The parameters the decoder has under the same module path and name as the encoder (embeddings,
    self-attention, feed-forward, LayerNorms: all but the cross-attention), which sentence-transformers'
    ``_tie_encoder_decoder_weights`` makes one."""
    encoder_parameters = dict(encoder.named_parameters())
    return tuple(name for name, parameter in decoder.named_parameters()
                 if name in encoder_parameters and encoder_parameters[name].shape == parameter.shape)


class Tsdae(Objective):
    """Token deletion, the encoder's sentence vector, and its reconstruction by a decoder reading only it.

    Parts: ``reconstruction`` (the whole loss).

    Example:
        >>> objective = OBJECTIVES.get("tsdae")(encoder, tokenizer, TsdaeConfig())
        >>> objective(**objective.collate(token_id_lists)).parts["reconstruction"]
    """

    name = "tsdae"
    config_class = TsdaeConfig
    new_parts = ("TSDAE decoder cross-attention",)

    @classmethod
    def multiply_adds_per_example(cls, options: TsdaeConfig, max_seq_length: int, shape: EncoderShape,
                                  *, batch_size: int) -> float:
        """The kept tokens through the encoder, a batch padded to its longest: [CLS], [SEP] and the most of
        ``batch_size`` binomial draws of the content tokens at 1 − ``deletion_ratio`` (``expected_longest``);
        every clean token through the decoder (the encoder's layers, self-attention over the text, plus a
        cross-attention's query and output projections, 2·H², over the one sentence vector) and the
        prediction head (a dense layer, then the vocabulary)."""
        content, keep = max_seq_length - 2, 1 - options.deletion_ratio
        kept = [math.comb(content, k) * keep ** k * (1 - keep) ** (content - k) for k in range(content + 1)]
        encoder = shape.sequence_multiply_adds(2 + expected_longest(kept, batch_size))
        decoder = (shape.sequence_multiply_adds(max_seq_length) + max_seq_length * (
            shape.layers * (2 * shape.hidden ** 2 + shape.attention(1))
            + shape.hidden ** 2 + shape.prediction_multiply_adds))
        return encoder + decoder

    def __init__(self, encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                 config: TsdaeConfig | None = None) -> None:
        super().__init__(encoder, tokenizer, config or self.config_class())
        if tokenizer.pad_token_id is None:
            raise ValueError("TSDAE needs a tokenizer with a [PAD] token")
        decoder_config = copy.deepcopy(encoder.config)
        decoder_config.is_decoder, decoder_config.add_cross_attention = True, True
        self.decoder = BertModel(decoder_config, add_pooling_layer=False)
        # the library's decoder is loaded from the encoder's checkpoint: its weights, new cross-attention
        self.decoder.load_state_dict(encoder.state_dict(), strict=False)
        # Tied, the decoder's shared parameters are the encoder's, lent at each call (``decode``); never
        # registered under a second name, so checkpoints hold no shared tensors.
        self.shared = shared_parameter_names(self.decoder, encoder) if self.config.tie_encoder_decoder else ()
        for name in self.shared:
            module_name, _, attribute = name.rpartition(".")
            del self.decoder.get_submodule(module_name)._parameters[attribute]
        self.lm_head = MaskedLMHead(encoder.config)
        loaded_from = getattr(encoder, "name_or_path", "")
        self.head_loaded = bool(loaded_from) and Path(loaded_from).is_dir() and \
            self.lm_head.load_from_checkpoint(loaded_from)

    def changes(self, init: str) -> list[str]:
        """The base's, after the prediction head's when ``init`` has no MLM head to start it from."""
        head = f"TSDAE prediction head: new, from random weights ({init} has no cls.predictions.*)"
        return ([] if self.head_loaded else [head]) + super().changes(init)

    # ----- batches ---------------------------------------------------------------------------------

    def draw_kept(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                  generator: torch.Generator | None = None) -> torch.Tensor:
        """``(B, T)`` bool, True at the tokens the encoder sees: [CLS] and [SEP] always, every other real
        token with probability 1 − ``deletion_ratio``, and one of them at least (the released dataset's
        "at least one word remains")."""
        specials = special_tokens_mask(input_ids, self.tokenizer.all_special_ids)  # (B, T)
        candidates = attention_mask.bool() & ~specials  # (B, T)
        draws = torch.rand(input_ids.shape, generator=generator)  # (B, T)
        kept = candidates & (draws >= self.config.deletion_ratio)
        # a row that lost every token keeps the one with the highest draw
        rescue = F.one_hot(draws.masked_fill(~candidates, -1).argmax(1), input_ids.shape[1]).bool()  # (B, T)
        lost_all = ~kept.any(1, keepdim=True) & candidates.any(1, keepdim=True)  # (B, 1)
        return kept | (rescue & lost_all) | (specials & attention_mask.bool())

    def damaged(self, input_ids: torch.Tensor, kept: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The kept tokens of each row, in order, right-padded: ``(input_ids, attention_mask)`` (B, T')."""
        return pad_token_ids([row[keep].tolist() for row, keep in zip(input_ids, kept, strict=True)],
                             self.tokenizer.pad_token_id)

    def collate(self, examples: Sequence[Sequence[int]]) -> dict[str, torch.Tensor]:
        clean, clean_mask = pad_token_ids(examples, self.tokenizer.pad_token_id)  # (B, T)
        input_ids, attention_mask = self.damaged(clean, self.draw_kept(clean, clean_mask))
        return {"input_ids": input_ids, "attention_mask": attention_mask,
                "decoder_input_ids": clean, "decoder_attention_mask": clean_mask}

    # ----- loss ------------------------------------------------------------------------------------

    def reconstruction_loss(self, sentence: torch.Tensor, decoder_input_ids: torch.Tensor,
                            decoder_attention_mask: torch.Tensor) -> torch.Tensor:
        """−J_TSDAE as a mean over tokens: the clean text (B, T), teacher-forced, from ``sentence`` (B, H)."""
        memory_mask = torch.ones(sentence.shape[0], 1, dtype=decoder_attention_mask.dtype,
                                 device=sentence.device)  # (B, 1): s is the decoder's only memory
        shared = {name: self.encoder.get_parameter(name) for name in self.shared}
        inputs = {"input_ids": decoder_input_ids[:, :-1], "attention_mask": decoder_attention_mask[:, :-1],
                  "encoder_hidden_states": sentence.unsqueeze(1), "encoder_attention_mask": memory_mask}
        states = functional_call(self.decoder, shared, (), inputs, strict=False).last_hidden_state  # (B, T−1, H)
        real = decoder_attention_mask[:, 1:].bool()  # (B, T−1): padding is never a target
        word_embeddings = self.encoder.get_input_embeddings().weight  # (V, H)
        logits = self.lm_head(states[real], word_embeddings)  # (N, V)
        return F.cross_entropy(logits, decoder_input_ids[:, 1:][real])

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, decoder_input_ids: torch.Tensor,
                decoder_attention_mask: torch.Tensor) -> ObjectiveOutput:
        """``input_ids``: the damaged text (B, T'); ``decoder_input_ids``: the clean text (B, T)."""
        states = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (B, T', H)
        sentence = pool(states, attention_mask, self.config.bottleneck)  # (B, H)
        loss = self.reconstruction_loss(sentence, decoder_input_ids, decoder_attention_mask)
        return ObjectiveOutput(loss=loss, parts={"reconstruction": loss})
