"""In-batch negatives over the *global* batch: embeddings gathered from every process, with gradients.

A loss whose negatives are the other examples of the batch (the sampled softmax of ICT/BFS/WLP, CPDAE's
eq. 5, DPR's in-batch NLL) sees, on one process, only that process's share of the batch: Chang et al.
(ICLR 2020, §4.1) train with a batch of 8192, which on 32 chips of 256 gives each query 8191 negatives
only if every chip scores its queries against the documents of all chips. ``gather_rows`` concatenates a
tensor's rows from all processes in rank order (process 0's rows, then process 1's ...), so the gathered
batch of ``W`` processes × ``B`` rows is the batch of one process holding all ``W·B`` rows, as
Accelerate's loader splits a global batch (process ``r`` gets rows ``r·B … r·B + B − 1``).

Gradients (why the losses need no rescaling). The gather is PyTorch's differentiable all-gather
(``torch.distributed._functional_collectives.all_gather_single_autograd``, which replaces the deprecated
``torch.distributed.nn.functional.all_gather``): its backward sums, over processes, the gradient every
process computed for a slot and hands the sum to the process that owns the slot (a reduce-scatter).
Let each process ``r`` compute ``L_r = (1/B) Σ_{i ∈ r} ℓ_i``, the mean over its *own* anchors (queries)
against the gathered candidates, so that ``L = (1/W) Σ_r L_r`` is the loss of one process holding the
``W·B`` rows. Process ``r``'s parameter gradient ``g_r`` is the derivative of ``Σ_s L_s`` through ``r``'s
own rows (its queries enter ``L_r`` only, its gathered documents every ``L_s``, whose gradients the
reduce-scatter brings back). Summed over processes that is ``∂(Σ_s L_s)/∂θ = W·∂L/∂θ``, and DDP's
all-reduce *averages*: ``(1/W) Σ_r g_r = ∂L/∂θ``, exactly the single-process gradient. (The other
idiom, of DPR and SimCSE, gathers without gradient, puts the local tensor back into its slot and
computes the loss over *all* ``W·B`` anchors on every process: each process then holds ``∂L/∂θ``
through its own rows only, the all-reduce averages these ``W`` partial derivatives, and the loss has to
be multiplied by ``W`` to undo the averaging. Both give the same gradient; this one does not compute
every anchor's loss ``W`` times.) A loss that *sums* over anchors instead of averaging (CPDAE's eq. 5
as printed) multiplies its local sum by ``world_size()`` for the same reason: the average of the ``W``
processes' gradients is then that of the sum over the global batch.

Requirements: every process gathers the same number of rows (the trainer drops the last partial
batch) at the same point of its forward pass. Without a process group (one process) ``gather_rows`` is
the identity.
"""

from __future__ import annotations

import hashlib

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as functional_collectives

#: ``relevant_keys`` padding: no document key is negative (``document_key`` keeps 63 bits).
NO_KEY = -1


def world_size() -> int:
    """Processes in the default process group (1 without one)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def rank() -> int:
    """This process's rank (0 without a process group)."""
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def gather_rows(tensor: torch.Tensor) -> torch.Tensor:
    """(B, ...) on each of W processes → (W·B, ...) in rank order; gradients flow back to each process's
    own rows, summed over the processes that used them (see the module docstring). Integer tensors
    (keys, ids) are gathered without autograd."""
    if world_size() == 1:
        return tensor
    if not tensor.is_floating_point():
        parts = [torch.empty_like(tensor) for _ in range(world_size())]
        dist.all_gather(parts, tensor.contiguous())
        return torch.cat(parts)
    return functional_collectives.all_gather_single_autograd(tensor.contiguous(), 0, dist.group.WORLD)


def row_offset(rows: int) -> int:
    """Index of this process's first row in a ``gather_rows`` result of ``rows`` rows per process."""
    return rank() * rows


def document_key(*texts: str | None) -> int:
    """A stable 63-bit key of a document (its title and text), equal on every process and every run —
    Python's ``hash`` is salted per process — so processes can tell which gathered documents are the same."""
    digest = hashlib.blake2b("\x1f".join(text or "" for text in texts).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def false_negative_mask(relevant_keys: torch.Tensor, document_keys: torch.Tensor,
                        targets: torch.Tensor) -> torch.Tensor:
    """(B, C) ``True`` where column j's document is relevant to row i's query without being its target.

    Args:
        relevant_keys: (B, R) keys of the documents relevant to each query, padded with ``NO_KEY``.
        document_keys: (C,) key of every candidate column (gathered ones included).
        targets: (B,) column of each row's positive.
    """
    mask = (document_keys[None, :, None] == relevant_keys[:, None, :]).any(-1)  # (B, C)
    mask[torch.arange(len(targets), device=mask.device), targets] = False
    return mask


__all__ = ["NO_KEY", "document_key", "false_negative_mask", "gather_rows", "rank", "row_offset", "world_size"]
