"""Cross-entropy through a vocabulary projection, computed in chunks of tokens without ever holding the
whole (tokens × vocabulary) logit matrix.

SEED-Encoder's decoder predicts every token of the input (eq. 9 of Lu et al., EMNLP 2021), so its
logits are a (B·T × V) matrix: at BERT-mini with BERT's 30,522-token vocabulary and 16 × 128 tokens,
250 MB in float32, written by the projection, read and written again by log-softmax, and once more by
the backward pass. Those passes over memory, not the projection's FLOPs, made a SEED step cost more
than its FLOP ratio to MLM. Fused linear-cross-entropy kernels (Liger's
``LigerFusedLinearCrossEntropy``, Apple's Cut Cross-Entropy, Wijmans et al. 2025) avoid them; they are
Triton (GPU) kernels. This is the same computation in plain torch, so it runs on CPUs as well:

- the tokens go through in chunks; for each, the logits ``z = h Wᵀ`` (chunk × V) are made once,
  ``logsumexp`` gives the loss, and, when a backward will follow, the gradient of the loss with
  respect to the logits, ``softmax(z) − onehot(y)``, is formed in place in the same buffer and
  immediately turned into the chunk's input gradient ``g W`` and its share of the weight gradient
  ``gᵀ h``;
- the backward pass then only scales the two stored gradients by the incoming gradient.

The matrix products are the same three as autograd's (forward, input gradient, weight gradient), so
no FLOP is added; memory holds one chunk's logits instead of all of them, and the input and weight
gradients (the size of the inputs). Under autocast the products run in the autocast dtype, as
``F.linear`` would, while the log-sum-exp and the gradient of the logits are taken in float32, as
``F.cross_entropy`` autocasts them; the weight gradient accumulates in float32.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

#: logits per chunk (rows × vocabulary): 16M values, 64 MB in float32, a quarter of the whole matrix at
#: BERT-mini's pre-training shape. Chosen by timing the head alone (forward and backward) on the 2-core
#: CPU at 2^20 … 2^25: chunks of a few hundred rows or fewer were slower than no chunking at all, their
#: weight-gradient products (V × rows by rows × H) having too few rows to run at the matmul rate.
CHUNK_ELEMENTS = 1 << 24


def _chunk_rows(vocabulary: int, chunk_elements: int) -> int:
    return max(1, chunk_elements // vocabulary)


def _compute_dtype(states: torch.Tensor) -> torch.dtype:
    """The dtype ``F.linear`` would multiply in: the autocast dtype where autocast is on."""
    device = states.device.type
    return torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else states.dtype


class _LinearCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy of ``states @ weight.T`` against ``targets``, gradients made in the forward."""

    @staticmethod
    def forward(ctx, states: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                chunk_elements: int) -> torch.Tensor:
        compute = _compute_dtype(states)
        accumulate = torch.promote_types(compute, torch.float32)  # float32, or float64 for float64 inputs
        count = states.shape[0]
        rows = _chunk_rows(weight.shape[0], chunk_elements)
        with torch.autocast(states.device.type, enabled=False):
            matrix = weight.to(compute)
            grad_states = torch.empty_like(states) if ctx.needs_input_grad[0] else None
            grad_weight = torch.zeros_like(weight, dtype=accumulate) if ctx.needs_input_grad[1] else None
            total = torch.zeros((), dtype=accumulate, device=states.device)
            for start in range(0, count, rows):
                chunk = states[start:start + rows].to(compute)  # (n, H)
                target = targets[start:start + rows]  # (n,)
                logits = (chunk @ matrix.t()).to(accumulate)  # (n, V)
                log_normaliser = torch.logsumexp(logits, dim=-1)  # (n,)
                total += (log_normaliser - logits.gather(1, target[:, None]).squeeze(1)).sum()
                # d(Σ loss)/dz = softmax(z) − onehot(y), made in the logits' own buffer
                gradient = logits.sub_(log_normaliser[:, None]).exp_()
                gradient[torch.arange(len(target), device=gradient.device), target] -= 1.0
                gradient = gradient.to(compute)
                if grad_states is not None:
                    grad_states[start:start + rows] = gradient @ matrix
                if grad_weight is not None and grad_weight.dtype == compute:
                    grad_weight.addmm_(gradient.t(), chunk)  # in place: no (V, H) temporary per chunk
                elif grad_weight is not None:
                    grad_weight.add_(gradient.t() @ chunk)  # bf16 products, float32 sums
        scale = 1.0 / count
        ctx.save_for_backward(
            grad_states.mul_(scale) if grad_states is not None else None,
            grad_weight.mul_(scale).to(weight.dtype) if grad_weight is not None else None)
        return total * scale

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        grad_states, grad_weight = ctx.saved_tensors
        return (grad_states * grad_output if grad_states is not None else None,
                grad_weight * grad_output if grad_weight is not None else None, None, None)


def linear_cross_entropy(states: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                         chunk_elements: int = CHUNK_ELEMENTS) -> torch.Tensor:
    """``F.cross_entropy(F.linear(states, weight), targets)`` (the mean over tokens) in chunks of about
    ``chunk_elements`` logits, never materialising the (N × V) matrix.

    Args:
        states: (N, H) hidden states of the predicted positions.
        weight: (V, H) output projection (e.g. the tied word embeddings), no bias.
        targets: (N,) token ids to predict.
        chunk_elements: logits held at once (rows per chunk = this // V).
    """
    if states.ndim != 2 or targets.shape != states.shape[:1] or weight.shape[1] != states.shape[1]:
        raise ValueError(f"states (N, H), weight (V, H) and targets (N,) expected, got {tuple(states.shape)}, "
                         f"{tuple(weight.shape)} and {tuple(targets.shape)}")
    if states.shape[0] == 0:
        raise ValueError("no token to predict")
    if torch.is_grad_enabled() and (states.requires_grad or weight.requires_grad):
        return _LinearCrossEntropy.apply(states, weight, targets, chunk_elements)
    rows = _chunk_rows(weight.shape[0], chunk_elements)
    accumulate = torch.promote_types(_compute_dtype(states), torch.float32)
    total = sum(F.cross_entropy(F.linear(states[start:start + rows], weight).to(accumulate),
                                targets[start:start + rows], reduction="sum")
                for start in range(0, states.shape[0], rows))
    return total / states.shape[0]
