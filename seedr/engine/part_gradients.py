"""How hard each part of a multi-part loss pulls on the encoder: ‖∂part/∂θ_encoder‖ per part.

A sum of losses trains the encoder only as much as each term's *gradient* on it, whatever the terms'
values: CPDAE's L_REC summed over a 30,522-word vocabulary (eq. 4) can out-pull λ·L_CL (eq. 5) by orders
of magnitude, which makes the run "w/o CL" in practice. The trainer logs, every ``log_every`` steps,
``grad_norm/<part>`` for every part of ``ObjectiveOutput.parts`` that carries a graph (detached parts,
such as the two-tower objectives' per-task shares of one loss, are not separate losses), when there are
at least two; ``seedr report`` plots them together. The gradient *share* of a part is its norm over the
sum of the parts' norms (``gradient_shares``).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import Tensor, nn

PREFIX = "grad_norm/"


def encoder_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The trainable parameters of the product: ``model.encoder`` (pre-training objectives) or
    ``model.query_encoder`` (the dual encoder); none for a model without either."""
    encoder = getattr(model, "encoder", None) or getattr(model, "query_encoder", None)
    return [parameter for parameter in encoder.parameters() if parameter.requires_grad] if encoder is not None else []


def part_gradient_norms(model: nn.Module, parts: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """``{"grad_norm/<part>": ‖∂part/∂θ_encoder‖₂}`` for the parts with a graph (at least two of them),
    computed with ``torch.autograd.grad`` (the graph is kept for the real backward; ``.grad`` untouched).

    Under several processes every process must call it at the same step with the same parts: a part
    that gathers across processes runs a collective in its backward pass."""
    differentiable = {name: part for name, part in sorted(parts.items())
                      if isinstance(part, Tensor) and part.requires_grad}
    parameters = encoder_parameters(model)
    if len(differentiable) < 2 or not parameters:
        return {}
    norms = {}
    for name, part in differentiable.items():
        gradients = torch.autograd.grad(part, parameters, retain_graph=True, allow_unused=True)
        squares = [gradient.detach().to(torch.promote_types(gradient.dtype, torch.float32)).pow(2).sum()
                   for gradient in gradients if gradient is not None]
        norms[PREFIX + name] = torch.stack(squares).sum().sqrt() if squares else torch.zeros(())
    return norms


def gradient_shares(norms: Mapping[str, float]) -> dict[str, float]:
    """Each part's norm over the sum of the parts' norms (``grad_norm/<part>`` keys → part names)."""
    parts = {name.removeprefix(PREFIX): float(value) for name, value in norms.items() if name.startswith(PREFIX)}
    total = sum(parts.values())
    return {name: value / total if total > 0 else 0.0 for name, value in parts.items()}


__all__ = ["PREFIX", "encoder_parameters", "gradient_shares", "part_gradient_norms"]
