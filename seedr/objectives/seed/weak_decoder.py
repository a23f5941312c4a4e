"""SEED-Encoder's weak decoder (Lu et al., 2021, sec. 3.4, eq. 9): a shallow autoregressive Transformer
that reconstructs the input from the encoder's [CLS] vector alone, each layer attending to a short
window of previous positions.

Architecture (paper: "three-layer Transformer, attention restricted to the previous two tokens
(attention span 2); the rest is the same with the encoder"). The paper does not say how [CLS] enters
the decoder; the default follows the authors' released code (github.com/microsoft/SEED-Encoder,
``TransformerDecoder`` with ``decoder_normalize_before=True``, ``layernorm_embedding=True``,
``no_scale_embedding=True`` and ``buffered_future_mask``):

- input: the clean token ids, right-shifted for teacher forcing (position ``p`` holds ``x_p`` with
  ``x_0`` = [CLS] as the start token, and predicts ``x_{p+1}``); token embeddings tied to the
  encoder's word embeddings as in the released ``TransformerDecoder(config, encoder.embed_tokens)``,
  plus learned positions, LayerNorm and dropout;
- self-attention: position ``p`` attends to the ``k`` most recent positions ``p−k+1 … p`` of the
  shifted input (the released mask ``triu(−inf, 1) + triu(−inf, k)ᵀ``), and — on the released path —
  also to position 0 (the mask's ``[:, 0] = 0``), i.e. to the constant start token;
- ``cls_path="cross_attention"`` (default, released): each layer has a separate cross-attention
  sub-layer whose only memory is the encoder's [CLS] vector ``h0`` (fairseq's ``encoder_attn`` over
  ``x_encoder[:, 0:1]``). With one memory vector its softmax is 1, so ``h0`` reaches every position
  of every layer as ``W_o W_v h0``, not competing with the window's keys (``ClsCrossAttention``);
- ``cls_path="joint"`` (ablation, seedr's earlier reading): no cross-attention and no position 0;
  ``h0`` is one extra key/value of the windowed self-attention, made by the layer's own key/value
  projections, in one softmax over ``k + 1`` keys, as Optimus (Li et al., 2020) injects its latent —
  here the window's tokens and [CLS] compete for attention mass;
- ``pre_layer_norm=True`` (default, released): every sub-layer is ``x + f(LN(x))`` and the stack ends
  with a LayerNorm; ``False`` gives BERT's post-LN ``LN(x + f(x))`` layers;
- output: logits through the tied word embeddings (no bias, as fairseq's shared output projection).
  The logits and their cross-entropy are computed in chunks (``seedr.modeling.linear_cross_entropy``).

Either way ``h0`` is the decoder's only view of the encoder: no attention to other encoder positions,
so the gradient of the decoder loss on every non-[CLS] encoder state is exactly zero.

Receptive field. One layer maps position ``p`` to a function of positions ``p−k+1 … p`` (and of
position 0 on the released path); stacking ``L`` layers composes these windows (position 0 itself
sees only position 0), so the output at ``p`` depends on shifted-input positions
``max(0, p − L(k−1)) … p`` — plus position 0 on the released path — i.e. the prediction of ``x_t``
depends on [CLS], on the ``L(k−1) + 1`` previous tokens ``x_{t−1−L(k−1)} … x_{t−1}`` (and on the
start token ``x_0``, a constant, on the released path) and on nothing else. With ``L = 1`` this is
eq. 9 exactly (``x_{t−k:t−1}``); with the paper's ``L = 3, k = 2`` each token is reconstructed from
its 4 predecessors and [CLS]. No prediction ever sees its own target (the window ends at the
position holding ``x_{t−1}``).

Cost. For a finite span the attention gathers the ``k`` keys of each position with ``unfold`` (a
strided view) and scores have shape ``(B, heads, T, k+1)`` (the one extra slot is [CLS] on the joint
path, position 0 on the released path): memory and time linear in ``T`` on both paths; no ``T × T``
matrix is ever built. ``attention_span=None`` is full causal attention (the strong-decoder /
Optimus-like baseline of Figure 3 in the EMNLP paper), computed with ``scaled_dot_product_attention``.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn
from torch.nn import functional as F
from transformers import PretrainedConfig
from transformers.activations import ACT2FN

from seedr.config.settings import DROPOUT
from seedr.modeling.encoder import bert_init
from seedr.objectives.seed.options import ClsPath

Implementation = Literal["banded", "dense"]


def window_mask(length: int, span: int | None, sees_first: bool = False,
                device: torch.device | None = None) -> torch.Tensor:
    """``(T, T)`` bool, True where query ``t`` may attend decoder position ``j``: ``0 ≤ t−j < span`` (any
    ``j ≤ t`` if ``span`` is None), and ``j = 0`` for every ``t`` when ``sees_first`` (the released mask)."""
    positions = torch.arange(length, device=device)
    distance = positions.unsqueeze(1) - positions.unsqueeze(0)  # (T, T): t − j
    allowed = distance >= 0
    if span is not None:
        allowed &= distance < span
    if sees_first:
        allowed[:, 0] = True
    return allowed


def banded_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, span: int,
                     extra_key: torch.Tensor | None = None, extra_value: torch.Tensor | None = None,
                     sees_first: bool = False, dropout_p: float = 0.0) -> torch.Tensor:
    """Attention of each position over its ``span`` most recent positions, in O(T·span).

    ``query``/``key``/``value``: ``(B, heads, T, d)``. ``extra_key``/``extra_value`` ``(B, heads, E, d)``
    are keys every position sees besides its window (the joint path's [CLS]); ``sees_first`` adds
    position 0 to every window that does not already hold it (the released code's mask). Returns
    ``(B, heads, T, d)``; equal to ``dense_attention`` with the same arguments.
    """
    length, head_size = query.shape[2], query.shape[3]
    span = min(span, length)  # a longer window only adds padding
    # Left-pad span−1 positions so every position has a full window; unfold is a strided view.
    window_keys = F.pad(key, (0, 0, span - 1, 0)).unfold(2, span, 1)  # (B, h, T, d, span)
    window_values = F.pad(value, (0, 0, span - 1, 0)).unfold(2, span, 1)  # (B, h, T, d, span)
    window_scores = torch.einsum("bhtd,bhtdk->bhtk", query, window_keys)  # (B, h, T, span)
    # Window slot s of position t holds position t − (span−1) + s: before the start it is padding.
    slot = torch.arange(span, device=query.device)
    positions = torch.arange(length, device=query.device)
    padding = (positions.unsqueeze(1) - (span - 1) + slot) < 0  # (T, span)
    window_scores = window_scores.masked_fill(padding, float("-inf"))
    extra_keys, extra_values, extra_hidden = [], [], []
    if extra_key is not None:
        extra_keys.append(extra_key)
        extra_values.append(extra_value)
        extra_hidden.append(torch.zeros(length, extra_key.shape[2], dtype=torch.bool, device=query.device))
    if sees_first:
        extra_keys.append(key[:, :, :1])
        extra_values.append(value[:, :, :1])
        extra_hidden.append((positions < span).unsqueeze(1))  # (T, 1): position 0 already in the window
    if not extra_keys:
        probabilities = F.dropout((window_scores * head_size**-0.5).softmax(-1), dropout_p, training=dropout_p > 0)
        return torch.einsum("bhtk,bhtdk->bhtd", probabilities, window_values)  # (B, h, T, d)
    extra_scores = (query @ torch.cat(extra_keys, 2).transpose(2, 3)).masked_fill(
        torch.cat(extra_hidden, 1), float("-inf"))  # (B, h, T, E)
    scores = torch.cat([extra_scores, window_scores], dim=-1) * head_size**-0.5  # (B, h, T, E+span)
    probabilities = F.dropout(scores.softmax(-1), dropout_p, training=dropout_p > 0)  # (B, h, T, E+span)
    extras = extra_scores.shape[-1]
    from_extra = probabilities[..., :extras] @ torch.cat(extra_values, 2)  # (B, h, T, d)
    from_window = torch.einsum("bhtk,bhtdk->bhtd", probabilities[..., extras:], window_values)  # (B, h, T, d)
    return from_extra + from_window


def dense_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, span: int | None,
                    extra_key: torch.Tensor | None = None, extra_value: torch.Tensor | None = None,
                    sees_first: bool = False, dropout_p: float = 0.0) -> torch.Tensor:
    """The same attention through a full ``(T, E+T)`` mask: O(T²); full causal when ``span`` is None."""
    mask = window_mask(query.shape[2], span, sees_first, query.device)  # (T, T)
    if extra_key is not None:
        key, value = torch.cat([extra_key, key], dim=2), torch.cat([extra_value, value], dim=2)  # (B, h, E+T, d)
        mask = torch.cat([mask.new_ones(mask.shape[0], extra_key.shape[2]), mask], dim=1)  # (T, E+T)
    return F.scaled_dot_product_attention(query, key, value, attn_mask=mask, dropout_p=dropout_p)


class _HeadsMixin:
    num_heads: int

    def _heads(self, states: torch.Tensor) -> torch.Tensor:
        batch, length, hidden = states.shape
        return states.view(batch, length, self.num_heads, hidden // self.num_heads).transpose(1, 2)  # (B, h, T, d)

    def _merge(self, context: torch.Tensor) -> torch.Tensor:
        batch, _, length, _ = context.shape
        return context.transpose(1, 2).reshape(batch, length, -1)  # (B, T, H)


class WindowedSelfAttention(_HeadsMixin, nn.Module):
    """Multi-head attention of each decoder position over its window (+ position 0 when ``sees_first``)
    and, on the joint path, the encoder's [CLS] as one more key/value made by this layer's projections."""

    def __init__(self, hidden_size: int, num_heads: int, span: int | None, dropout: float,
                 implementation: Implementation = "banded", sees_first: bool = False) -> None:
        super().__init__()
        if hidden_size % num_heads:
            raise ValueError(f"hidden size {hidden_size} is not a multiple of {num_heads} heads")
        if span is None and implementation == "banded":
            implementation = "dense"  # full attention has no band to exploit
        self.num_heads, self.span, self.dropout, self.implementation = num_heads, span, dropout, implementation
        self.sees_first = sees_first
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)
        self.output = nn.Linear(hidden_size, hidden_size)

    def forward(self, states: torch.Tensor, cls_vector: torch.Tensor | None = None) -> torch.Tensor:
        """``states`` (B, T, H) of the decoder, ``cls_vector`` (B, H) of the encoder or None → (B, T, H)."""
        query, key, value = self._heads(self.query(states)), self._heads(self.key(states)), self._heads(self.value(states))
        cls_key = cls_value = None
        if cls_vector is not None:
            cls = cls_vector.unsqueeze(1)  # (B, 1, H)
            cls_key, cls_value = self._heads(self.key(cls)), self._heads(self.value(cls))  # (B, h, 1, d)
        attention = banded_attention if self.implementation == "banded" else dense_attention
        context = attention(query, key, value, self.span, cls_key, cls_value, self.sees_first,
                            self.dropout if self.training else 0.0)
        return self.output(self._merge(context))  # (B, T, H)


class ClsCrossAttention(_HeadsMixin, nn.Module):
    """fairseq's ``encoder_attn`` sub-layer with the encoder's [CLS] vector as its only memory.

    The softmax over one key is 1 whatever the query, so the sub-layer is ``W_o W_v h0`` at every
    position: the released code's query and key projections (and, pre-LN, the LayerNorm that feeds
    the query) never receive a gradient and are left out — the same function without dead weights.
    Attention dropout on that single weight is kept as fairseq applies it: per head and position,
    h0's contribution is dropped with probability ``dropout`` (and scaled by 1/(1 − dropout) else).
    """

    def __init__(self, hidden_size: int, num_heads: int, dropout: float) -> None:
        super().__init__()
        self.num_heads, self.dropout = num_heads, dropout
        self.value = nn.Linear(hidden_size, hidden_size)
        self.output = nn.Linear(hidden_size, hidden_size)

    def forward(self, states: torch.Tensor, cls_vector: torch.Tensor) -> torch.Tensor:
        """``states`` (B, T, H) of the decoder (only their shape is read), ``cls_vector`` (B, H) → (B, T, H)."""
        value = self._heads(self.value(cls_vector.unsqueeze(1)))  # (B, h, 1, d)
        batch, length = states.shape[:2]
        weights = torch.ones(batch, self.num_heads, length, 1, dtype=value.dtype, device=value.device)
        weights = F.dropout(weights, self.dropout, training=self.training and self.dropout > 0)  # (B, h, T, 1)
        return self.output(self._merge(weights * value))  # (B, T, H)


class WeakDecoderLayer(nn.Module):
    """A Transformer decoder layer: windowed self-attention, a cross-attention to [CLS] on the
    ``cross_attention`` path, a GELU feed-forward; each sub-layer pre-LN (``x + f(LN(x))``, fairseq's
    ``decoder_normalize_before``) or post-LN (``LN(x + f(x))``, BERT)."""

    def __init__(self, config: PretrainedConfig, span: int | None, dropout: float,
                 implementation: Implementation, cls_path: ClsPath = "cross_attention",
                 pre_layer_norm: bool = True) -> None:
        super().__init__()
        hidden, heads, eps = config.hidden_size, config.num_attention_heads, config.layer_norm_eps
        self.cls_path, self.pre_layer_norm = cls_path, pre_layer_norm
        cross = cls_path == "cross_attention"
        self.attention = WindowedSelfAttention(hidden, heads, span, dropout, implementation, sees_first=cross)
        self.attention_norm = nn.LayerNorm(hidden, eps=eps)
        self.cross_attention = ClsCrossAttention(hidden, heads, dropout) if cross else None
        # Pre-LN, the sub-layer's LayerNorm would only feed the query, which one key makes irrelevant.
        self.cross_attention_norm = nn.LayerNorm(hidden, eps=eps) if cross and not pre_layer_norm else None
        self.feed_forward = nn.Sequential(nn.Linear(hidden, config.intermediate_size), ACT2FN[config.hidden_act],
                                          nn.Linear(config.intermediate_size, hidden))
        self.output_norm = nn.LayerNorm(hidden, eps=eps)
        self.dropout = nn.Dropout(dropout)

    def _sublayer(self, states: torch.Tensor, norm: nn.LayerNorm, function) -> torch.Tensor:
        if self.pre_layer_norm:
            return states + self.dropout(function(norm(states)))  # (B, T, H)
        return norm(states + self.dropout(function(states)))  # (B, T, H)

    def forward(self, states: torch.Tensor, cls_vector: torch.Tensor) -> torch.Tensor:
        if self.cross_attention is None:  # joint: [CLS] is one more key of the windowed softmax
            states = self._sublayer(states, self.attention_norm, lambda x: self.attention(x, cls_vector))
        else:
            states = self._sublayer(states, self.attention_norm, self.attention)
            from_cls = self.dropout(self.cross_attention(states, cls_vector))  # (B, T, H)
            states = states + from_cls if self.pre_layer_norm else self.cross_attention_norm(states + from_cls)
        return self._sublayer(states, self.output_norm, self.feed_forward)  # (B, T, H)


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
        cls_path: "cross_attention" (the released code: a cross-attention sub-layer over [CLS], every
            position also sees position 0) or "joint" ([CLS] as one extra key of the windowed softmax).
        pre_layer_norm: pre-LN layers and a final LayerNorm (the released code) instead of post-LN.
    """

    def __init__(self, config: PretrainedConfig, num_layers: int = 3, attention_span: int | None = 2,
                 dropout: float = DROPOUT, tie_embeddings: bool = True, implementation: Implementation = "banded",
                 cls_path: ClsPath = "cross_attention", pre_layer_norm: bool = True) -> None:
        super().__init__()
        if attention_span is not None and attention_span < 1:
            raise ValueError(f"attention span must be ≥ 1 (or 'all'), got {attention_span}")
        if cls_path not in ("cross_attention", "joint"):
            raise ValueError(f"cls_path must be 'cross_attention' or 'joint', got {cls_path!r}")
        hidden = config.hidden_size
        self.attention_span, self.tie_embeddings, self.cls_path = attention_span, tie_embeddings, cls_path
        self.word_embeddings = None if tie_embeddings else nn.Embedding(config.vocab_size, hidden)
        self.output_projection = None if tie_embeddings else nn.Linear(hidden, config.vocab_size, bias=False)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, hidden)
        self.embedding_norm = nn.LayerNorm(hidden, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(WeakDecoderLayer(config, attention_span, dropout, implementation, cls_path,
                                                     pre_layer_norm) for _ in range(num_layers))
        # Pre-LN stacks end with a LayerNorm (fairseq: decoder_normalize_before adds ``layer_norm``).
        self.final_norm = nn.LayerNorm(hidden, eps=config.layer_norm_eps) if pre_layer_norm else None
        self.apply(lambda module: bert_init(module, config.initializer_range))

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
        return states if self.final_norm is None else self.final_norm(states)

    def output_matrix(self, word_embeddings: torch.Tensor | None = None) -> torch.Tensor:
        """The (V, H) projection from decoder states to vocabulary logits (no bias): the encoder's
        ``word_embeddings`` when tied, else the decoder's own."""
        return self._word_matrix(word_embeddings, self.output_projection)
