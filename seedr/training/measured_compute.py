"""The compute of a pre-training step, measured: one real batch of an objective forward and backward under
``torch.utils.flop_counter.FlopCounterMode`` (every matrix product and attention of both passes, as PyTorch
dispatches them), so that the count a ``flops_budget`` is spent by (``Objective.multiply_adds_per_example``,
``seedr.training.compute_budget``) can be held to what the objective really runs. The tests hold every
objective's declared count within 5% of this measurement at two shapes (``tests/test_measured_compute.py``),
and ``bench/flops.py`` reads the declared counts."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

from seedr.config.settings import PretrainConfig
from seedr.engine.batches import isolated_rng
from seedr.objectives.base import Objective
from seedr.training.compute_budget import TRAINING_FLOPS_PER_MULTIPLY_ADD, flops_per_step
from seedr.training.pretrain import build_objective, model_shape


def _addmm_flops(bias_shape, first_shape, second_shape, *args, **kwargs) -> int:
    """``addmm``'s count (the mode hands formulas the operands' shapes): two per multiply-add."""
    (rows, inner), (_, columns) = first_shape, second_shape
    return 2 * rows * inner * columns


#: Products that ``FlopCounterMode`` leaves out: the in-place ``addmm_`` (the chunked cross-entropy of
#: ``seedr.modeling.linear_cross_entropy`` accumulates its weight gradient so), counted as ``addmm``.
IN_PLACE_PRODUCTS = {torch.ops.aten.addmm_: _addmm_flops}


@dataclass(frozen=True)
class MeasuredStep:
    """One batch's training FLOPs as ``FlopCounterMode`` counts them (``measured``) and as the objective
    declares them (``declared``: ``flops_per_step``, 6 × its multiply-adds), for ``batch`` examples."""

    objective: str
    batch: int
    max_seq_length: int
    measured: float
    declared: float

    @property
    def ratio(self) -> float:
        """Declared over measured: 1.0 when the objective's count is exact."""
        return self.declared / self.measured


def measure_step(config: PretrainConfig, batches: int = 1) -> MeasuredStep:
    """Build ``config``'s objective and corpus (in a scratch folder: token shards, IDF tables), draw
    ``batches`` batches of ``config.train.batch_size`` full-length examples (``full_length``) as training
    collates them (seeded like the trainer's batches), and count a forward and backward pass of each: their
    mean, for an objective whose batches vary in shape (random crops, word sets of random lengths)."""
    config.train.global_batch_size = config.train.batch_size
    with tempfile.TemporaryDirectory(prefix="seedr-flops-") as scratch:
        objective, corpus = build_objective(config, Path(scratch) / "run")
        data = objective.training_data(objective.config, corpus).dataset(0)
        examples = full_length(objective, [data[index] for index in range(len(data))], config)
        if not examples:
            raise ValueError(f"the corpus has no example long enough to fill {config.data.max_seq_length} "
                             "tokens")
        objective.train()
        total = 0.0
        for index in range(batches):
            with isolated_rng(index):
                batch = objective.collate([examples[(index + row) % len(examples)]
                                           for row in range(config.train.batch_size)])
            with FlopCounterMode(display=False, custom_mapping=IN_PLACE_PRODUCTS) as counter:
                objective(**batch).loss.backward()
            objective.zero_grad(set_to_none=True)
            total += counter.get_total_flops() / batches
        declared = flops_per_step(config, objective.config, model_shape(config.model))
    return MeasuredStep(config.objective_name, config.train.batch_size, config.data.max_seq_length,
                        total, declared)


def full_length(objective: Objective, examples: list, config: PretrainConfig) -> list:
    """Examples that fill the shapes the count is declared at: the corpus's token sequences joined and cut
    into ``[CLS] … [SEP]`` runs of ``data.max_seq_length`` tokens (a packed corpus's examples are so, but
    for a document's end); pairs as they are (the towers pad to their lengths)."""
    if objective.input_kind == "pairs":
        return examples
    first, last = examples[0][0], examples[0][-1]
    tokens = [token for example in examples for token in list(example)[1:-1]]
    size = config.data.max_seq_length - 2
    return [[first, *tokens[start:start + size], last] for start in range(0, len(tokens) - size, size)]
