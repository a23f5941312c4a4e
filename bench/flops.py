"""Analytic FLOP counts of the pieces a seedr step runs: matrix multiplications only (2 FLOPs per
multiply-add); element-wise work (softmax, GELU, LayerNorm, the Jensen–Shannon sums) is left out, so
these are lower bounds on the arithmetic and the ceiling fractions built on them are conservative.

A training step costs 3× its forward pass (backward: one product for the input gradient and one for
the weight gradient per forward product), the usual rule (Kaplan et al., 2020, sec. 2.1).
"""

from __future__ import annotations

from dataclasses import dataclass

TRAINING_FACTOR = 3


@dataclass(frozen=True)
class Shape:
    """A BERT encoder shape and the batch fed to it."""

    layers: int
    hidden: int
    intermediate: int
    vocab: int
    batch: int
    length: int

    @property
    def tokens(self) -> int:
        return self.batch * self.length


def layer_forward(tokens: int, hidden: int, intermediate: int, keys_per_query: float) -> float:
    """One post-LN Transformer layer: Q, K, V, O projections (4·H²), the feed-forward (2·H·I) and the
    attention scores and weighted sum (2·keys·H) multiply-adds per token."""
    return 2 * tokens * (4 * hidden * hidden + 2 * hidden * intermediate + 2 * keys_per_query * hidden)


def encoder_forward(shape: Shape) -> float:
    """BERT encoder forward pass (full attention: every token attends to the ``length`` tokens)."""
    return shape.layers * layer_forward(shape.tokens, shape.hidden, shape.intermediate, shape.length)


def mlm_head(predictions: int, shape: Shape) -> float:
    """BERT's MLM head on ``predictions`` positions: dense H→H, then the tied H→V output."""
    return 2 * predictions * (shape.hidden * shape.hidden + shape.hidden * shape.vocab)


def masked_targets(shape: Shape, probability: float = 0.15) -> int:
    """Targets BERT masking picks in a batch of full sequences ([CLS] and [SEP] never chosen)."""
    return shape.batch * max(1, round((shape.length - 2) * probability))


def weak_decoder(shape: Shape, layers: int, span: int | None) -> float:
    """SEED-Encoder's decoder on the T−1 shifted positions: per layer the projections and
    feed-forward, attention to ``span`` previous positions + [CLS] (full causal: t + 1 keys at
    position t, so (T−1)/2 + 1 on average), the [CLS] key/value (2·H² per sequence), then the tied
    output projection at every position."""
    positions = shape.batch * (shape.length - 1)
    keys = (shape.length - 1) / 2 + 1 if span is None else min(span, shape.length - 1) + 1
    per_layer = (layer_forward(positions, shape.hidden, shape.intermediate, keys)
                 + 2 * shape.batch * 2 * shape.hidden * shape.hidden)
    return layers * per_layer + 2 * positions * shape.hidden * shape.vocab


def bow_decoder(texts: int, shape: Shape) -> float:
    """CPDAE's MLP decoder from [CLS]: dense H→H, then H→V, per view."""
    return 2 * texts * (shape.hidden * shape.hidden + shape.hidden * shape.vocab)


def objective_step(name: str, shape: Shape, span: int | None = 2, decoder_layers: int = 3) -> float:
    """Training-step FLOPs of seedr's objectives (``mlm``, ``seed``, ``cpdae``) and of the plain
    ``BertForMaskedLM`` (``hf``: the head at every position)."""
    encoder, targets = encoder_forward(shape), masked_targets(shape)
    forward = {
        "hf": encoder + mlm_head(shape.tokens, shape),
        "mlm": encoder + mlm_head(targets, shape),
        "seed": encoder + mlm_head(targets, shape) + weak_decoder(shape, decoder_layers, span),
        # two masked views of every text through the encoder, MLM on both, the BoW decoder on both
        "cpdae": 2 * (encoder + mlm_head(targets, shape)) + bow_decoder(2 * shape.batch, shape),
    }[name]
    return TRAINING_FACTOR * forward


def matmul(m: int, k: int, n: int) -> float:
    return 2.0 * m * k * n
