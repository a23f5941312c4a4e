"""Checkpoints that a run can resume from exactly, written so that a kill never leaves a half one.

A run folder::

    out/encoder/                 the product: the encoder in Hugging Face + sentence-transformers form
    out/checkpoints/step-N/
        encoder/                 the product at step N
        state/                   Accelerate's ``save_state``: the whole model (decoder and heads
                                 included, safetensors), optimizer, scheduler, grad scaler, and the
                                 python/numpy/torch(/cuda) RNG states of every process
        trainer_state.json       the position: optimizer step, epoch, batch within the epoch
        extra_state.pt           the states of the training data (e.g. ANCE negatives) and callbacks

Each ``step-N`` folder is built under a temporary name and renamed into place once every process has
written its part, so a folder named ``step-N`` is always complete; ``out/encoder`` is replaced the same
way. The newest ``keep`` checkpoints are kept.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import broadcast_object_list

from seedr.data.io import DataError, atomic_directory

CHECKPOINTS = "checkpoints"
PRODUCT = "encoder"
STATE = "state"
TRAINER_STATE = "trainer_state.json"
EXTRA_STATE = "extra_state.pt"
_STEP_FOLDER = re.compile(r"^step-(\d+)$")


def checkpoint_path(out_dir: str | os.PathLike, step: int) -> Path:
    return Path(out_dir) / CHECKPOINTS / f"step-{step}"


def list_checkpoints(out_dir: str | os.PathLike) -> list[tuple[int, Path]]:
    """``(step, folder)`` of the complete checkpoints of a run, oldest first."""
    root = Path(out_dir) / CHECKPOINTS
    if not root.is_dir():
        return []
    found = []
    for folder in root.iterdir():
        match = _STEP_FOLDER.match(folder.name)
        if match and (folder / TRAINER_STATE).exists():
            found.append((int(match.group(1)), folder))
    return sorted(found)


def latest_checkpoint(out_dir: str | os.PathLike) -> Path | None:
    """The newest complete checkpoint of a run, or ``None``."""
    checkpoints = list_checkpoints(out_dir)
    return checkpoints[-1][1] if checkpoints else None


def prune_checkpoints(out_dir: str | os.PathLike, keep: int) -> None:
    """Delete all but the newest ``keep`` checkpoints (and temporaries a killed save left behind)."""
    checkpoints = list_checkpoints(out_dir)
    for _, folder in checkpoints[: max(len(checkpoints) - max(keep, 1), 0)]:
        shutil.rmtree(folder, ignore_errors=True)
    for leftover in (Path(out_dir) / CHECKPOINTS).glob(".step-*"):
        shutil.rmtree(leftover, ignore_errors=True)


@contextmanager
def shared_atomic_directory(accelerator: Accelerator, path: Path) -> Iterator[Path]:
    """``atomic_directory`` for all processes: the main one makes the temporary folder and tells the
    others its name, every process writes its part, and the main one renames it once all are done."""
    if accelerator.is_main_process:
        with atomic_directory(path) as temporary:
            broadcast_object_list([str(temporary)])
            yield temporary
            accelerator.wait_for_everyone()
    else:
        shared: list[Any] = [None]
        broadcast_object_list(shared)
        yield Path(shared[0])
        accelerator.wait_for_everyone()


@contextmanager
def _without_transformers_progress_bars() -> Iterator[None]:
    """``save_pretrained`` shows its own bar, which would break the training bar's line at every save."""
    from transformers.utils import logging

    enabled = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            logging.enable_progress_bar()


def save_checkpoint(accelerator: Accelerator, path: Path, position: dict[str, Any], extra_state: dict[str, Any],
                    write_product: Callable[[Path], Any]) -> Path:
    """Write a complete checkpoint to ``path`` (see the module docstring); call on every process.

    ``write_product(directory)`` is called on the main process only.
    """
    with shared_atomic_directory(accelerator, path) as temporary:
        accelerator.save_state(str(temporary / STATE))
        if accelerator.is_main_process:
            with _without_transformers_progress_bars():
                write_product(temporary / PRODUCT)
            torch.save(extra_state, temporary / EXTRA_STATE)
            (temporary / TRAINER_STATE).write_text(json.dumps(position, indent=2), encoding="utf-8")
    return path


def read_position(path: Path) -> dict[str, Any]:
    """The training position (step, epoch, batch in epoch) stored in a checkpoint."""
    try:
        return json.loads((path / TRAINER_STATE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise DataError(path / TRAINER_STATE, f"unreadable checkpoint position ({error})") from None


def read_extra_state(path: Path) -> dict[str, Any]:
    """The data and callback states stored in a checkpoint (saved by this code: trusted pickle)."""
    return torch.load(path / EXTRA_STATE, weights_only=False)


def model_weights_path(checkpoint: Path) -> Path:
    """The file in which Accelerate's ``save_state`` keeps a checkpoint's whole trained module
    (encoder, decoder and heads): ``state/model.safetensors``."""
    path = Path(checkpoint) / STATE / "model.safetensors"
    if not path.exists():
        raise DataError(path.parent, "no model weights (model.safetensors) in this checkpoint")
    return path


def load_model_weights(checkpoint: Path, model: torch.nn.Module) -> None:
    """Load a checkpoint's full weights (``model_weights_path``) into ``model``, which must be built as
    it was for training; a parameter missing on either side is an error naming it.

    For inspecting a checkpoint outside the trainer (e.g. CPDAE's decoder in
    ``seedr.evaluation.diagnostics``); resuming uses ``Accelerator.load_state``. Expects one process's
    full weights, not FSDP's sharded state.
    """
    from safetensors.torch import load_model

    weights = model_weights_path(checkpoint)
    # load_model, as Accelerate's load_state uses: it restores tied parameters, which are saved once
    missing, unexpected = load_model(model, weights, strict=False)
    if missing or unexpected:
        raise DataError(weights, f"the weights do not fit the module rebuilt from the run's config: "
                                 f"missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]}")


def publish_product(checkpoint: Path, out_dir: Path) -> Path:
    """Copy a checkpoint's encoder to ``out_dir/encoder``, replacing the previous one atomically, with a
    model card that describes the run (``seedr.modeling.model_card``)."""
    from seedr.modeling.model_card import write_model_card

    target = out_dir / PRODUCT
    with atomic_directory(target) as temporary:
        shutil.copytree(checkpoint / PRODUCT, temporary, dirs_exist_ok=True)
        write_model_card(temporary, run_dir=out_dir, step=read_position(checkpoint).get("step"))
    return target


__all__ = [
    "CHECKPOINTS",
    "EXTRA_STATE",
    "PRODUCT",
    "STATE",
    "TRAINER_STATE",
    "checkpoint_path",
    "latest_checkpoint",
    "list_checkpoints",
    "load_model_weights",
    "model_weights_path",
    "prune_checkpoints",
    "publish_product",
    "read_extra_state",
    "read_position",
    "save_checkpoint",
    "shared_atomic_directory",
]
