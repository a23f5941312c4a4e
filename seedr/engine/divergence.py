"""Stopping a run that diverges before the divergence reaches what it keeps: a non-finite loss or
gradient stops it before the weights are updated, and weights that have blown up stop it before a
checkpoint calls them good (``NonFiniteLossError``, raised on every process)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from torch import Tensor, nn

from seedr.config.settings import TrainConfig
from seedr.engine.batches import isolated_rng
from seedr.engine.checkpoint import latest_checkpoint
from seedr.losses.gradient_cache import gradient_cache_loss


class NonFiniteLossError(ValueError):
    """The loss became NaN or infinite: training stops before the weights are updated with it."""


def _last_good(out_dir: Path) -> str:
    """What a stopped run keeps, for its error: the newest checkpoint and the product it published."""
    last = latest_checkpoint(out_dir)
    return f"{last.name} and {out_dir / 'encoder'} are the last good ones" if last else "no checkpoint was made"


def stop_if_loss_not_finite(accelerator: Accelerator, output: Any, out_dir: Path, step: int) -> None:
    """Raise ``NonFiniteLossError`` (on every process) before a NaN/inf loss reaches the weights: the
    last checkpoint and ``out/encoder`` stay as the last good step left them."""
    local = (~torch.isfinite(output.loss.detach())).float().reshape(1)
    bad = accelerator.reduce(local, reduction="sum") if accelerator.num_processes > 1 else local
    if not bool(bad.item()):
        return
    parts = [name for name, value in output.parts.items()
             if not bool(torch.isfinite(torch.as_tensor(value).detach()).all())]
    where = (f"the loss is {float(output.loss.detach())}" + (f" (not finite: {', '.join(parts)})" if parts else "")
             if bool(local.item()) else "the loss is not finite on another process")
    kept = _last_good(out_dir)
    raise NonFiniteLossError(
        f"training diverged at step {step + 1}: {where}; stopped before updating the weights, {kept}. "
        f"Start again with a lower train.learning_rate (or train.max_grad_norm / warm-up)")


def stop_if_gradients_not_finite(accelerator: Accelerator, grad_norm: Tensor | float | None, step: int) -> None:
    """A finite loss can still give infinite gradients, and one optimizer step with them makes every
    weight NaN: stop before it. (Under fp16 the grad scaler skips such steps itself.)"""
    if grad_norm is None or accelerator.scaler is not None or math.isfinite(float(grad_norm)):
        return
    raise NonFiniteLossError(f"training diverged at step {step + 1}: the gradient norm is "
                             f"{float(grad_norm)}; stopped before updating the weights. Start again with a "
                             f"lower train.learning_rate (or train.max_grad_norm / warm-up)")

def stop_if_weights_not_good(accelerator: Accelerator, model: nn.Module, unwrapped: nn.Module, config: TrainConfig,
                             batch: dict[str, Tensor], out_dir: Path, step: int) -> None:
    """Raise ``NonFiniteLossError`` (on every process) before a checkpoint of bad weights is saved, and
    so called good. A step's loss is measured before its update, so a finite loss does not vouch for
    the updated weights: a learning rate of 1e30 makes them ~1e30, finite, and every output after them
    NaN. The weights must be finite and give a finite loss on the step's last batch, computed without
    gradients, dropout or draws from the training's random generators (a resumed run stays exact)."""
    bad_weights = [name for name, parameter in unwrapped.named_parameters()
                   if not bool(torch.isfinite(parameter.detach()).all())]
    loss: float | None = None
    if not bad_weights:
        devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
        model.eval()
        try:
            with torch.no_grad(), torch.random.fork_rng(devices=devices), isolated_rng(config.seed):
                output = (gradient_cache_loss(unwrapped, batch, config.gradient_cache_chunk,
                                              accelerator.autocast)
                          if config.gradient_cache else model(**batch))
                loss = float(output.loss.detach().float())
        finally:
            model.train()
    local = torch.tensor([float(bool(bad_weights) or not math.isfinite(loss))], device=accelerator.device)
    bad = accelerator.reduce(local, reduction="sum") if accelerator.num_processes > 1 else local
    if not bool(bad.item()):
        return
    if bad_weights:
        where = f"its weights are not finite ({', '.join(bad_weights[:3])}{' ...' if len(bad_weights) > 3 else ''})"
    elif loss is not None and not math.isfinite(loss):
        where = f"the updated weights give a loss of {loss} (their values have blown up)"
    else:
        where = "the updated weights are not finite on another process"
    kept = _last_good(out_dir)
    raise NonFiniteLossError(
        f"training diverged at step {step}: {where}; stopped before saving them, {kept}. "
        f"Start again with a lower train.learning_rate (or train.max_grad_norm / warm-up)")
