"""GradCache (Gao, Zhang, Han & Callan, RepL4NLP 2021, "Scaling Deep Contrastive Learning Batch Size under
Memory Limited Setup"): the gradient of a loss over in-batch negatives for a batch far larger than the
activations memory holds, equal to that of the plain big-batch step.

Gradient accumulation does not do this: each micro-batch's softmax runs over that micro-batch's
documents only, so 32 micro-batches of 256 train with 255 negatives per query, not the 8191 of a batch of
8192 (Chang et al., ICLR 2020). GradCache splits the computation where the loss meets the encoders:

1. embed every chunk of ``chunk`` rows of every tower *without* an autograd graph (only the (B, D)
   embeddings are kept), remembering the RNG state before each chunk;
2. compute the loss over the whole batch's embeddings and back-propagate it to them (the "cache":
   ∂L/∂e for every row);
3. embed each chunk again, *with* a graph, under the RNG state remembered for it (so dropout draws the
   same masks as in step 1, and the cached gradient belongs to this very forward pass), and
   back-propagate ``e_chunk · ∂L/∂e_chunk``; the parameters' gradients add up over chunks to ∂L/∂θ.

Peak memory is that of one chunk's forward + backward, plus the (B, D) embeddings. The loss may itself
gather the embeddings of every process (``seedr.losses.gather``); steps 1 and 3 run on the unwrapped
model, outside DDP's forward (DDP's hooks then stay idle), so the trainer averages the gradients over
processes itself (``average_gradients``), exactly as DDP's all-reduce would.

A model supports GradCache by implementing ``GradientCacheModel``: the two-tower objectives (ICT, BFS,
WLP and the mix; ``seedr.objectives.two_tower``) and the fine-tuning dual encoder (NLL and triplet;
``seedr.retrieval.dual_encoder``). Objectives with token-level losses (MLM, SEED-Encoder's decoder,
CPDAE's reconstruction) do not: their losses need every token's states, not one embedding per text,
and they are per-example, so gradient accumulation already gives their big-batch gradient; CPDAE's
contrastive term is then computed per micro-batch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import torch
import torch.distributed as dist
from torch import Tensor, nn
from torch.utils.checkpoint import get_device_states, set_device_states


@dataclass
class Tower:
    """One embedding computation of the batch: ``embed(**inputs)`` → (B, D), every input row-aligned."""

    embed: Callable[..., Tensor]
    inputs: dict[str, Tensor]


@dataclass
class GradientCacheSplit:
    """A batch split at the embeddings: the towers to embed, then the loss's other (non-embedding) inputs;
    ``loss_from_embeddings(*embeddings of the towers in order, **loss_inputs)`` is the model's output."""

    towers: list[Tower]
    loss_inputs: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class GradientCacheModel(Protocol):
    """A model whose loss depends on the encoders only through one embedding per row and tower."""

    def split_for_gradient_cache(self, **batch: Tensor) -> GradientCacheSplit: ...

    def loss_from_embeddings(self, *embeddings: Tensor, **loss_inputs: Any) -> Any: ...


class _RandomState:
    """The CPU and accelerator RNG states before a chunk, to replay its dropout masks."""

    def __init__(self, tensors: list[Tensor]) -> None:
        self.cpu = torch.get_rng_state()
        self.devices, self.device_states = get_device_states(*tensors)

    @contextlib.contextmanager
    def replayed(self) -> Iterator[None]:
        """Run a block from this state; the global RNG then continues from where the block left it
        (as it would have after the first pass)."""
        torch.set_rng_state(self.cpu)
        set_device_states(self.devices, self.device_states)
        yield


def _chunks(inputs: dict[str, Tensor], size: int) -> list[dict[str, Tensor]]:
    rows = len(next(iter(inputs.values())))
    return [{name: value[start:start + size] for name, value in inputs.items()} for start in range(0, rows, size)]


def gradient_cache_step(model: nn.Module, batch: dict[str, Tensor], chunk: int, backward: Callable[[Tensor], None],
                        autocast: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext) -> Any:
    """Accumulate into the parameters' ``.grad`` the gradient of ``model(**batch).loss``, in chunks of
    ``chunk`` rows per tower (see the module docstring); returns the model's output.

    Args:
        model: the unwrapped model, a ``GradientCacheModel``.
        batch: what ``model.forward`` takes.
        chunk: rows embedded at a time (the memory bound).
        backward: back-propagates the loss (``accelerator.backward``: loss scaling, accumulation).
        autocast: the mixed-precision context of the forward passes (``accelerator.autocast``).
    """
    if not isinstance(model, GradientCacheModel):
        raise ValueError(f"train.gradient_cache needs a model whose loss reads one embedding per text "
                         f"(two-tower objectives, fine-tuning); {type(model).__name__} is not one")
    split = model.split_for_gradient_cache(**batch)
    passes = []
    for tower in split.towers:
        chunks = _chunks(tower.inputs, chunk)
        states, pieces = [], []
        for inputs in chunks:
            states.append(_RandomState(list(inputs.values())))
            with torch.no_grad(), autocast():
                pieces.append(tower.embed(**inputs))
        passes.append((tower, chunks, states, torch.cat(pieces).detach().requires_grad_()))
    output = model.loss_from_embeddings(*(embeddings for *_, embeddings in passes), **split.loss_inputs)
    backward(output.loss)
    for tower, chunks, states, embeddings in passes:
        cached = embeddings.grad.split(chunk)  # ∂L/∂e, chunk by chunk
        for inputs, state, gradient in zip(chunks, states, cached, strict=True):
            with state.replayed(), autocast():
                piece = tower.embed(**inputs)
            piece.backward(gradient.to(piece.dtype))
    return output


def gradient_cache_loss(model: nn.Module, batch: dict[str, Tensor], chunk: int,
                        autocast: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext) -> Any:
    """The model's output on ``batch`` without gradients, embedded ``chunk`` rows at a time (the memory
    bound of ``gradient_cache_step``): what the trainer checks weights with before a checkpoint."""
    split = model.split_for_gradient_cache(**batch)
    with torch.no_grad():
        embeddings = []
        for tower in split.towers:
            with autocast():
                embeddings.append(torch.cat([tower.embed(**inputs) for inputs in _chunks(tower.inputs, chunk)]))
        return model.loss_from_embeddings(*embeddings, **split.loss_inputs)


def average_gradients(parameters: Iterator[nn.Parameter]) -> None:
    """Average ``.grad`` over the processes (what DDP's all-reduce does), in place; no-op on one process."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return
    for parameter in parameters:
        if parameter.grad is not None:
            dist.all_reduce(parameter.grad)
            parameter.grad /= dist.get_world_size()


__all__ = ["GradientCacheModel", "GradientCacheSplit", "Tower", "average_gradients", "gradient_cache_loss",
           "gradient_cache_step"]
