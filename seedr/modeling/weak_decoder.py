"""SEED-Encoder's weak decoder (Lu et al., 2021, sec. 3.4, eq. 9): a shallow autoregressive Transformer
that reconstructs the input from the encoder's [CLS] vector alone, each layer attending to a short
window of previous positions.

Architecture (paper: "three-layer Transformer, attention restricted to the previous two tokens
(attention span 2); the rest is the same with the encoder"):

- input: the clean token ids, right-shifted for teacher forcing (position ``p`` holds ``x_p`` with
  ``x_0`` = [CLS] as the start token, and predicts ``x_{p+1}``); token embeddings tied to the
  encoder's word embeddings as in the authors' released ``TransformerDecoder(config,
  encoder.embed_tokens)``, plus learned positions, LayerNorm and dropout (BERT's embedding block);
- each layer: post-LayerNorm BERT layer (attention → residual → LayerNorm → GELU feed-forward →
  residual → LayerNorm) with the encoder's hidden size, heads and intermediate size;
- attention: position ``p`` attends to the ``k`` most recent positions ``p−k+1 … p`` of the shifted
  input (the authors' mask: ``triu(−inf, 1) + triu(−inf, k)ᵀ``) and to one extra key/value made from
  the encoder's [CLS] vector by the layer's own key/value projections — the paper's "another
  attention path from the decoding token to the encoder's [CLS]". This is the decoder's only view of
  the encoder (no attention to other encoder positions), in one softmax over ``k + 1`` keys, as
  Optimus (Li et al., 2020) injects its latent as an extra key. The released code instead adds a
  separate cross-attention sub-layer over that single vector, and lets every position also attend
  the constant start token at position 0; neither changes what text a prediction can see.
- output: logits through the tied word embeddings (no bias, as fairseq's shared output projection).

Receptive field. One layer maps position ``p`` to a function of positions ``p−k+1 … p``; stacking
``L`` layers composes these windows, so the output at ``p`` depends on shifted-input positions
``max(0, p − L(k−1)) … p``, i.e. the prediction of ``x_t`` depends on [CLS] and on the
``L(k−1) + 1`` previous tokens ``x_{t−1−L(k−1)} … x_{t−1}`` and on nothing else. With ``L = 1`` this
is eq. 9 exactly (``x_{t−k:t−1}``); with the paper's ``L = 3, k = 2`` each token is reconstructed
from its 4 predecessors and [CLS]. No prediction ever sees its own target (the window ends at the
position holding ``x_{t−1}``).

Cost. For a finite span the attention gathers the ``k`` keys of each position with ``unfold`` (a
strided view) and scores have shape ``(B, heads, T, k+1)``: memory and time linear in ``T``; no
``T × T`` matrix is ever built. ``attention_span=None`` is full causal attention (the strong-decoder
/ Optimus-like baseline of Figure 3 in the EMNLP paper), computed with ``scaled_dot_product_attention``.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn
from torch.nn import functional as F
from transformers import PretrainedConfig
from transformers.activations import ACT2FN

Implementation = Literal["banded", "dense"]


def span_mask(length: int, span: int | None, device: torch.device | None = None) -> torch.Tensor:
    """``(T, T+1)`` bool, True where query ``t`` may attend: column 0 is the [CLS] key (always),
    column ``j+1`` the decoder position ``j`` (when ``0 ≤ t−j < span``; any ``j ≤ t`` if ``span`` is None)."""
    positions = torch.arange(length, device=device)
    distance = positions.unsqueeze(1) - positions.unsqueeze(0)  # (T, T): t − j
    allowed = distance >= 0
    if span is not None:
        allowed &= distance < span
    return torch.cat([torch.ones(length, 1, dtype=torch.bool, device=device), allowed], dim=1)


def banded_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, cls_key: torch.Tensor,
                     cls_value: torch.Tensor, span: int, dropout_p: float = 0.0) -> torch.Tensor:
    """Attention of each position over [CLS] and its ``span`` most recent positions, in O(T·span).

    ``query``/``key``/``value``: ``(B, heads, T, d)``; ``cls_key``/``cls_value``: ``(B, heads, 1, d)``.
    Returns ``(B, heads, T, d)``; equal to ``dense_attention(..., span=span)``.
    """
    length, head_size = query.shape[2], query.shape[3]
    span = min(span, length)  # a longer window only adds padding
    # Left-pad span−1 positions so every position has a full window; unfold is a strided view.
    window_keys = F.pad(key, (0, 0, span - 1, 0)).unfold(2, span, 1)  # (B, h, T, d, span)
    window_values = F.pad(value, (0, 0, span - 1, 0)).unfold(2, span, 1)  # (B, h, T, d, span)
    window_scores = torch.einsum("bhtd,bhtdk->bhtk", query, window_keys)  # (B, h, T, span)
    # Window slot s of position t holds position t − (span−1) + s: before the start it is padding.
    slot = torch.arange(span, device=query.device)
    padding = (torch.arange(length, device=query.device).unsqueeze(1) - (span - 1) + slot) < 0  # (T, span)
    window_scores = window_scores.masked_fill(padding, float("-inf"))
    cls_scores = query @ cls_key.transpose(2, 3)  # (B, h, T, 1)
    scores = torch.cat([cls_scores, window_scores], dim=-1) * head_size**-0.5  # (B, h, T, span+1)
    probabilities = F.dropout(scores.softmax(-1), dropout_p, training=dropout_p > 0)  # (B, h, T, span+1)
    from_cls = probabilities[..., :1] * cls_value  # (B, h, T, d)
    from_window = torch.einsum("bhtk,bhtdk->bhtd", probabilities[..., 1:], window_values)  # (B, h, T, d)
    return from_cls + from_window


def dense_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, cls_key: torch.Tensor,
                    cls_value: torch.Tensor, span: int | None, dropout_p: float = 0.0) -> torch.Tensor:
    """The same attention through a full ``(T, T+1)`` mask: O(T²); full causal when ``span`` is None."""
    keys = torch.cat([cls_key, key], dim=2)  # (B, h, T+1, d)
    values = torch.cat([cls_value, value], dim=2)  # (B, h, T+1, d)
    mask = span_mask(query.shape[2], span, query.device)  # (T, T+1)
    return F.scaled_dot_product_attention(query, keys, values, attn_mask=mask, dropout_p=dropout_p)


class WindowedSelfAttention(nn.Module):
    """Multi-head attention of each decoder position over its window and the encoder's [CLS]."""

    def __init__(self, hidden_size: int, num_heads: int, span: int | None, dropout: float,
                 implementation: Implementation = "banded") -> None:
        super().__init__()
        if hidden_size % num_heads:
            raise ValueError(f"hidden size {hidden_size} is not a multiple of {num_heads} heads")
        if span is None and implementation == "banded":
            implementation = "dense"  # full attention has no band to exploit
        self.num_heads, self.span, self.dropout, self.implementation = num_heads, span, dropout, implementation
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)
        self.output = nn.Linear(hidden_size, hidden_size)

    def _heads(self, states: torch.Tensor) -> torch.Tensor:
        batch, length, hidden = states.shape
        return states.view(batch, length, self.num_heads, hidden // self.num_heads).transpose(1, 2)  # (B, h, T, d)

    def forward(self, states: torch.Tensor, cls_vector: torch.Tensor) -> torch.Tensor:
        """``states`` (B, T, H) of the decoder, ``cls_vector`` (B, H) of the encoder → (B, T, H)."""
        query, key, value = self._heads(self.query(states)), self._heads(self.key(states)), self._heads(self.value(states))
        cls = cls_vector.unsqueeze(1)  # (B, 1, H)
        cls_key, cls_value = self._heads(self.key(cls)), self._heads(self.value(cls))  # (B, h, 1, d)
        dropout_p = self.dropout if self.training else 0.0
        if self.implementation == "banded":
            context = banded_attention(query, key, value, cls_key, cls_value, self.span, dropout_p)
        else:
            context = dense_attention(query, key, value, cls_key, cls_value, self.span, dropout_p)
        batch, _, length, _ = context.shape
        return self.output(context.transpose(1, 2).reshape(batch, length, -1))  # (B, T, H)


class WeakDecoderLayer(nn.Module):
    """A post-LayerNorm BERT layer whose self-attention is ``WindowedSelfAttention``."""

    def __init__(self, config: PretrainedConfig, span: int | None, dropout: float,
                 implementation: Implementation) -> None:
        super().__init__()
        hidden = config.hidden_size
        self.attention = WindowedSelfAttention(hidden, config.num_attention_heads, span, dropout, implementation)
        self.attention_norm = nn.LayerNorm(hidden, eps=config.layer_norm_eps)
        self.feed_forward = nn.Sequential(nn.Linear(hidden, config.intermediate_size), ACT2FN[config.hidden_act],
                                          nn.Linear(config.intermediate_size, hidden))
        self.output_norm = nn.LayerNorm(hidden, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(dropout)

    def forward(self, states: torch.Tensor, cls_vector: torch.Tensor) -> torch.Tensor:
        states = self.attention_norm(states + self.dropout(self.attention(states, cls_vector)))  # (B, T, H)
        return self.output_norm(states + self.dropout(self.feed_forward(states)))  # (B, T, H)


class WeakDecoder(nn.Module):
    """Autoregressive decoder conditioned only on the encoder's [CLS] vector (see the module docstring).

    Args:
        config: the encoder's config (hidden size, heads, intermediate size, activation, vocabulary,
            positions are taken from it, as the paper's "the rest is the same with the encoder").
        num_layers: decoder depth L (paper: 3).
        attention_span: window k (paper: 2), or None for full causal attention (strong baseline).
        dropout: on embeddings, attention probabilities and residual branches (paper: 0.1).
        tie_embeddings: share input embeddings and output projection with the encoder's word
            embeddings (passed to ``forward``/``logits``); otherwise the decoder owns both.
        implementation: "banded" (linear in T) or "dense" (full mask, the O(T²) reference).
    """

    def __init__(self, config: PretrainedConfig, num_layers: int = 3, attention_span: int | None = 2,
                 dropout: float = 0.1, tie_embeddings: bool = True, implementation: Implementation = "banded") -> None:
        super().__init__()
        if attention_span is not None and attention_span < 1:
            raise ValueError(f"attention span must be ≥ 1 (or 'all'), got {attention_span}")
        hidden = config.hidden_size
        self.attention_span, self.tie_embeddings = attention_span, tie_embeddings
        self.word_embeddings = None if tie_embeddings else nn.Embedding(config.vocab_size, hidden)
        self.output_projection = None if tie_embeddings else nn.Linear(hidden, config.vocab_size, bias=False)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, hidden)
        self.embedding_norm = nn.LayerNorm(hidden, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(WeakDecoderLayer(config, attention_span, dropout, implementation)
                                    for _ in range(num_layers))
        self.apply(lambda module: _bert_init(module, config.initializer_range))

    def _word_matrix(self, word_embeddings: torch.Tensor | None, own: nn.Module | None) -> torch.Tensor:
        if own is not None:
            return own.weight
        if word_embeddings is None:
            raise ValueError("a decoder tied to the encoder's embeddings needs them: pass word_embeddings")
        return word_embeddings

    def forward(self, input_ids: torch.Tensor, cls_vector: torch.Tensor,
                word_embeddings: torch.Tensor | None = None) -> torch.Tensor:
        """Right-shifted clean ids (B, T) and the encoder's [CLS] vector (B, H) → states (B, T, H);
        ``word_embeddings`` (V, H) is the encoder's matrix when tied."""
        length = input_ids.shape[1]
        if length > self.position_embeddings.num_embeddings:
            raise ValueError(f"sequence of {length} tokens exceeds the decoder's "
                             f"{self.position_embeddings.num_embeddings} positions")
        tokens = F.embedding(input_ids, self._word_matrix(word_embeddings, self.word_embeddings))  # (B, T, H)
        positions = self.position_embeddings(torch.arange(length, device=input_ids.device))  # (T, H)
        states = self.dropout(self.embedding_norm(tokens + positions))  # (B, T, H)
        for layer in self.layers:
            states = layer(states, cls_vector)
        return states

    def logits(self, states: torch.Tensor, word_embeddings: torch.Tensor | None = None) -> torch.Tensor:
        """Decoder states (..., H) → vocabulary logits (..., V)."""
        return F.linear(states, self._word_matrix(word_embeddings, self.output_projection))


def _bert_init(module: nn.Module, std: float) -> None:
    """BERT's initialisation: N(0, std) weights, zero biases, unit LayerNorm."""
    if isinstance(module, nn.Linear | nn.Embedding):
        nn.init.normal_(module.weight, std=std)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
    if isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)
