"""FLOP counts of a seedr step, read from seedr itself: an objective's declared cost
(``Objective.multiply_adds_per_example``, the count a ``flops_budget`` is spent by and an experiment's ETA
sized with, held within 5% of ``FlopCounterMode``'s measurement of a real step by
``tests/test_measured_compute.py``), 2 FLOPs per multiply-add and a training step 3× its forward pass
(Kaplan et al., 2020, sec. 2.1). Matrix products and attention only: element-wise work (softmax, GELU,
LayerNorm, the Jensen–Shannon sums) is left out, so the ceiling fractions built on them are conservative.
"""

from __future__ import annotations

from dataclasses import dataclass

from seedr.modeling.folders import EncoderShape
from seedr.objectives import OBJECTIVES
from seedr.training.compute_budget import TRAINING_FLOPS_PER_MULTIPLY_ADD


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

    @property
    def encoder(self) -> EncoderShape:
        return EncoderShape(self.layers, self.hidden, self.intermediate, self.vocab)


def encoder_forward(shape: Shape) -> float:
    """BERT encoder forward pass of the batch (full attention: every token attends to the ``length``)."""
    return 2.0 * shape.batch * shape.encoder.sequence_multiply_adds(shape.length)


def objective_step(name: str, shape: Shape, span: int | None = 2, decoder_layers: int = 3) -> float:
    """Training-step FLOPs of seedr's objective ``name`` (SEED-Encoder's with its decoder's ``span``, None
    for full causal attention, and ``decoder_layers``), as seedr declares them; ``hf`` is the plain
    ``BertForMaskedLM`` (its head at every position)."""
    if name == "hf":
        head = shape.length * (shape.hidden ** 2 + shape.encoder.prediction_multiply_adds)
        per_example = shape.encoder.sequence_multiply_adds(shape.length) + head
    else:
        objective = OBJECTIVES.get(name)
        extra = {"attention_span": "all" if span is None else span, "decoder_layers": decoder_layers}
        options = objective.config_class(**{key: value for key, value in extra.items() if name == "seed"})
        per_example = objective.multiply_adds_per_example(options, shape.length, shape.encoder,
                                                          batch_size=shape.batch)
    return TRAINING_FLOPS_PER_MULTIPLY_ADD * shape.batch * per_example


def matmul(m: int, k: int, n: int) -> float:
    return 2.0 * m * k * n
