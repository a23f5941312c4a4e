"""Pre-training at equal compute: the steps a budget of floating-point operations buys an objective.

Comparisons of pre-training objectives at equal *steps* favour the costly ones: at the seedr base's shape
a SEED-Encoder step (MLM plus a 3-layer decoder) costs about 2.2 MLM steps, CPDAE's two masked views
twice one (``bench/flops.py``). A run with ``PretrainConfig.flops_budget`` takes instead as many steps as
the budget buys at its objective's cost per example (``Objective.multiply_adds_per_example``: the encoder
and the objective's own parts, forward), counted as training is: two operations per multiply-add, and
the backward pass twice the forward (Kaplan et al. 2020, §2.1: ``C ≈ 6 N`` per token, the forward
``2 N``). What an experiment's ETA sizes (``seedr.experiments.sizing``) is the same count.
"""

from __future__ import annotations

import math
from typing import Any

from seedr.config.settings import MAX_STEPS, PretrainConfig
from seedr.modeling.folders import EncoderShape
from seedr.objectives import OBJECTIVES
from seedr.objectives import OBJECTIVES

#: Floating-point operations of a training step per multiply-add of its forward pass: 2 per multiply-add,
#: × 3 for the forward pass and the backward pass's two products per weight.
TRAINING_FLOPS_PER_MULTIPLY_ADD = 6.0


def flops_per_step(config: PretrainConfig, options: Any, shape: EncoderShape) -> float:
    """Floating-point operations of one optimizer step of ``config``'s objective (its options
    ``options``) on an encoder of ``shape``: every example of the global batch through the encoder and
    the objective's parts, forward and backward."""
    per_example = OBJECTIVES.get(config.objective_name).multiply_adds_per_example(
        options, config.data.max_seq_length, shape, batch_size=config.train.batch_size)
    batch = config.train.global_batch_size or config.train.batch_size
    return TRAINING_FLOPS_PER_MULTIPLY_ADD * batch * per_example


def budget_steps(config: PretrainConfig, options: Any, shape: EncoderShape) -> int:
    """The optimizer steps ``config.flops_budget`` buys (rounded down: no run exceeds its budget); a
    ``ValueError`` saying the least budget that buys one step when it buys none, and the most a run may
    spend when it buys more than ``MAX_STEPS`` (no run could finish them)."""
    per_step = flops_per_step(config, options, shape)
    steps = math.floor(config.flops_budget / per_step)
    batch = config.train.global_batch_size or config.train.batch_size
    cost = f"{per_step:.3g} FLOPs a step at batch {batch} × {config.data.max_seq_length} tokens"
    if steps < 1:
        raise ValueError(f"flops_budget {config.flops_budget:.3g} buys no step of {config.objective_name} "
                         f"({cost}): give at least {per_step:.3g}")
    if steps > MAX_STEPS:
        raise ValueError(f"flops_budget {config.flops_budget:.3g} buys {steps:.3g} steps of "
                         f"{config.objective_name} ({cost}), more than the {MAX_STEPS:,} a run may take "
                         f"(MAX_STEPS): give at most {MAX_STEPS * per_step:.3g}")
    return steps


def apply_flops_budget(config: PretrainConfig, options: Any, shape: EncoderShape | None) -> str | None:
    """Set ``config.train.max_steps`` to the steps ``config.flops_budget`` buys (``budget_steps``) and
    return the line a run announces it with; ``None`` (nothing changed) without a budget. An encoder
    without a Transformer's shape (the BoW-MLP) cannot be sized, and is refused."""
    if config.flops_budget is None:
        return None
    if shape is None:
        raise ValueError(f"flops_budget sizes a Transformer encoder's steps; model.architecture "
                         f"{config.model.architecture!r} has no such shape: set train.max_steps instead")
    config.train.max_steps = budget_steps(config, options, shape)
    if config.train.resolved_warmup_steps >= config.train.max_steps:
        raise ValueError(f"train.warmup_steps={config.train.resolved_warmup_steps} is not fewer than the "
                         f"{config.train.max_steps} steps flops_budget buys: warm up by train.warmup_ratio")
    return (f"compute budget: {config.flops_budget:.3g} FLOPs = {config.train.max_steps} steps of "
            f"{config.objective_name} ({flops_per_step(config, options, shape):.3g} FLOPs a step)")


def contrastive_multiply_adds(shape: EncoderShape, query_length: float, document_length: float,
                              negatives: int) -> float:
    """One fine-tuning example's forward multiply-adds (``seedr adapt``, ``seedr finetune``): a query and its
    positive and ``negatives`` hard negatives through the encoder, at the lengths given."""
    return (shape.sequence_multiply_adds(query_length)
            + (1 + negatives) * shape.sequence_multiply_adds(document_length))


def denoising_multiply_adds(shape: EncoderShape, length: float, deletion: float, batch_size: int) -> float:
    """One TSDAE example's forward multiply-adds (Wang et al. 2021) in a batch of ``batch_size`` at
    ``length`` tokens with ``deletion``
    of them deleted: seedr's own TSDAE objective's count (``Tsdae.multiply_adds_per_example``), whose
    architecture is that of sentence-transformers' ``DenoisingAutoEncoderLoss`` (a decoder tied to the
    encoder, cross-attending only to the sentence vector, then the vocabulary), so both are counted alike."""
    options = OBJECTIVES.options("tsdae")(deletion_ratio=deletion)
    return OBJECTIVES.get("tsdae").multiply_adds_per_example(options, int(length), shape,
                                                             batch_size=batch_size)


__all__ = ["TRAINING_FLOPS_PER_MULTIPLY_ADD", "apply_flops_budget", "budget_steps", "contrastive_multiply_adds",
           "denoising_multiply_adds", "flops_per_step"]
