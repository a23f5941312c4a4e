"""Checkpoints that a run can resume from exactly, written so that a kill never leaves a half one.

A run folder::

    out/encoder/                 the product: the encoder in Hugging Face + sentence-transformers form
    out/checkpoints/step-N/
        encoder/                 the product at step N
        state/                   Accelerate's ``save_state``: the whole model (decoder and heads
                                 included, safetensors), optimizer, scheduler, grad scaler, and the
                                 python/numpy/torch(/cuda) RNG states of every process
        trainer_state.json       the position: optimizer step, epoch, batch within the epoch, and the
                                 settings that made the checkpoint (a resume must keep them)
        extra_state.json         the states of the training data (e.g. ANCE negatives) and callbacks

Each ``step-N`` folder is built under a temporary name and renamed into place once every process has
written its part, so a folder named ``step-N`` is always complete; ``out/encoder`` is replaced the same
way. The newest ``keep`` checkpoints are kept (``train.keep_checkpoints``), and only the newest keeps
the optimizer state (``state/optimizer*``): a run resumes from its newest checkpoint, and AdamW's two
moments weigh twice the model, so the older ones keep their encoder and full weights (to evaluate or
inspect) but cannot be resumed from.

Nothing in a run folder is executed or unpickled: the states are JSON and safetensors, and what
Accelerate's ``load_state`` reads with ``torch.load`` it reads with ``weights_only=True`` (tensors and
plain containers only), so a crafted file in a shared run folder cannot run code on ``--resume``.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import OPTIMIZER_NAME, broadcast_object_list, load
from safetensors import safe_open
from safetensors.torch import load_model
from transformers.utils import logging as transformers_logging

from seedr.io import DataError, atomic_directory, read_json
from seedr.io.run_folders import (  # the layout, which a run's refusal reads without torch
    CHECKPOINTS,
    PRODUCT,
    TRAINER_STATE,
    checkpoint_path,
    latest_checkpoint,
    list_checkpoints,
)
from seedr.modeling.encoder import model_fingerprint
from seedr.modeling.model_card import write_model_card

STATE = "state"
EXTRA_STATE = "extra_state.json"
#: Where older checkpoints kept the extra state (a pickle: read with ``weights_only=True`` only).
LEGACY_EXTRA_STATE = "extra_state.pt"


def prune_checkpoints(out_dir: str | os.PathLike, keep: int) -> None:
    """Delete all but the newest ``keep`` checkpoints (and temporaries a killed save left behind), and
    the optimizer state of all but the newest (``drop_optimizer_state``)."""
    checkpoints = list_checkpoints(out_dir)
    for _, folder in checkpoints[: max(len(checkpoints) - max(keep, 1), 0)]:
        shutil.rmtree(folder, ignore_errors=True)
    for _, folder in checkpoints[-max(keep, 1):-1]:
        drop_optimizer_state(folder)
    for leftover in (Path(out_dir) / CHECKPOINTS).glob(".step-*"):
        shutil.rmtree(leftover, ignore_errors=True)


def optimizer_state_files(checkpoint: Path) -> list[Path]:
    """The optimizer state Accelerate's ``save_state`` wrote into a checkpoint (``optimizer.bin``, one
    file per optimizer, or FSDP's sharded ``optimizer_0/`` folder)."""
    return sorted((Path(checkpoint) / STATE).glob(f"{OPTIMIZER_NAME}*"))


def drop_optimizer_state(checkpoint: Path) -> None:
    """Delete a checkpoint's optimizer state, once a newer checkpoint holds the state to resume from."""
    for path in optimizer_state_files(checkpoint):
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


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
    enabled = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            transformers_logging.enable_progress_bar()


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
            (temporary / EXTRA_STATE).write_text(json.dumps(extra_state, indent=2), encoding="utf-8")
            (temporary / TRAINER_STATE).write_text(json.dumps(position, indent=2), encoding="utf-8")
    return path


def read_position(path: Path) -> dict[str, Any]:
    """The training position (step, epoch, batch in epoch) stored in a checkpoint."""
    try:
        return json.loads((path / TRAINER_STATE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise DataError(path / TRAINER_STATE, f"unreadable checkpoint position ({error})") from None


def verify_checkpoint(path: Path) -> None:
    """Cheap checks that a checkpoint can be resumed from: its position and extra state parse, the
    state folder holds the model weights with a readable safetensors header, and no state file is
    empty (a full disk). ``DataError`` naming the damaged file otherwise."""
    read_position(path)
    read_extra_state(path)
    weights = model_weights_path(path)
    try:
        with safe_open(str(weights), framework="pt") as stream:
            stream.keys()
    except Exception as error:  # noqa: BLE001 (safetensors raises its own error types)
        raise DataError(weights, f"damaged weights ({error})") from None
    for file in (path / STATE).iterdir():
        if file.is_file() and file.stat().st_size == 0:
            raise DataError(file, "empty file")
    # Accelerate reads the RNG states with weights_only=True, but takes any failure for "no RNG state" and
    # goes on silently, which would make the resumed run differ from an uninterrupted one.

    for file in sorted((path / STATE).glob("random_states_*.pkl")):
        try:
            load(file)
        except Exception as error:  # noqa: BLE001 (the unpickler raises many types; all mean "refused")
            raise DataError(file, f"damaged, or not plain RNG state ({type(error).__name__}); nothing in it "
                                  "was run") from None


def read_extra_state(path: Path) -> dict[str, Any]:
    """The data and callback states stored in a checkpoint (JSON). An older checkpoint's pickle is read
    with ``torch.load(weights_only=True)``, which refuses anything but tensors and plain containers: a
    run folder may be shared, and unpickling a crafted file would run its code."""
    if (path / EXTRA_STATE).exists():
        state = read_json(path / EXTRA_STATE)
    elif (path / LEGACY_EXTRA_STATE).exists():
        try:
            state = torch.load(path / LEGACY_EXTRA_STATE, weights_only=True)
        except Exception as error:  # noqa: BLE001 (pickle raises many types; every one means "refused")
            raise DataError(path / LEGACY_EXTRA_STATE, f"refused: not plain data a checkpoint holds "
                                                       f"({type(error).__name__}); nothing in it was run") from None
    else:
        raise DataError(path, f"incomplete checkpoint: {EXTRA_STATE} is missing")
    if not isinstance(state, dict):
        raise DataError(path / EXTRA_STATE, f"expected a JSON object, got {type(state).__name__}")
    return state


def model_weights_path(checkpoint: Path) -> Path:
    """The file in which Accelerate's ``save_state`` keeps a checkpoint's whole trained module
    (encoder, decoder and heads): ``state/model.safetensors``."""
    path = Path(checkpoint) / STATE / "model.safetensors"
    if not path.exists():
        raise DataError(path.parent, "no model weights (model.safetensors) in this checkpoint")
    return path


def run_part_weights(run_dir: Path, prefix: str) -> dict[str, torch.Tensor]:
    """The weights of one part (``prefix``: ``mlm_head``, ``condenser_head`` ...) of the module a seedr run
    trained, from its newest checkpoint's full weights, their names without ``prefix.``; empty when
    ``run_dir`` is no run or holds no such part. An objective continued from a run's product
    (``<run>/encoder``) takes its heads from here, the product holding the encoder alone."""
    checkpoint = latest_checkpoint(run_dir) if (run_dir / CHECKPOINTS).is_dir() else None
    if checkpoint is None:
        return {}
    with safe_open(str(model_weights_path(checkpoint)), framework="pt") as weights:
        return {name.removeprefix(f"{prefix}."): weights.get_tensor(name)
                for name in weights.keys() if name.startswith(f"{prefix}.")}  # noqa: SIM118


def load_model_weights(checkpoint: Path, model: torch.nn.Module) -> None:
    """Load a checkpoint's full weights (``model_weights_path``) into ``model``, which must be built as
    it was for training; a parameter missing on either side is an error naming it.

    For inspecting a checkpoint outside the trainer (e.g. CPDAE's decoder in
    ``seedr.diagnostics.measures``); resuming uses ``Accelerator.load_state``. Expects one process's
    full weights, not FSDP's sharded state.
    """
    weights = model_weights_path(checkpoint)
    # load_model, as Accelerate's load_state uses: it restores tied parameters, which are saved once
    missing, unexpected = load_model(model, weights, strict=False)
    if missing or unexpected:
        raise DataError(weights, f"the weights do not fit the module rebuilt from the run's config: "
                                 f"missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]}")


def product_is_current(checkpoint: Path, out_dir: Path) -> bool:
    """Whether ``out_dir/encoder`` is the product of ``checkpoint`` (same weights fingerprint): a kill
    between the checkpoint and the product update leaves it missing or older."""

    product = out_dir / PRODUCT
    if not (product / "config.json").exists():
        return False
    return model_fingerprint(product) == model_fingerprint(checkpoint / PRODUCT)


def product_steps(out_dir: str | os.PathLike) -> tuple[int | None, int | None]:
    """``(step of out_dir/encoder, step of the newest checkpoint)``: the product's step is that of the
    checkpoint whose encoder it is (same fingerprint), ``None`` when none is (its checkpoint pruned). A
    product older than the newest checkpoint is what a kill between the two leaves, until ``--resume``."""

    checkpoints = list_checkpoints(out_dir)
    product = Path(out_dir) / PRODUCT
    newest = checkpoints[-1][0] if checkpoints else None
    if not (product / "config.json").exists():
        return None, newest
    fingerprint = model_fingerprint(product)
    for step, folder in reversed(checkpoints):
        if (folder / PRODUCT / "config.json").exists() and model_fingerprint(folder / PRODUCT) == fingerprint:
            return step, newest
    return None, newest


def publish_product(checkpoint: Path, out_dir: Path, described: Mapping[str, str] | None = None) -> Path:
    """Copy a checkpoint's encoder to ``out_dir/encoder``, replacing the previous one atomically, with a
    model card that describes the run (``seedr.modeling.model_card``): ``described`` is what the run
    trained with, as its caller knows it (``seedr.training.run_card.describe_run``)."""

    target = out_dir / PRODUCT
    with atomic_directory(target) as temporary:
        shutil.copytree(checkpoint / PRODUCT, temporary, dirs_exist_ok=True)
        write_model_card(temporary, run_dir=out_dir, step=read_position(checkpoint).get("step"), described=described)
    return target


__all__ = [
    "CHECKPOINTS",
    "EXTRA_STATE",
    "LEGACY_EXTRA_STATE",
    "PRODUCT",
    "STATE",
    "TRAINER_STATE",
    "checkpoint_path",
    "drop_optimizer_state",
    "latest_checkpoint",
    "list_checkpoints",
    "load_model_weights",
    "model_weights_path",
    "optimizer_state_files",
    "product_is_current",
    "product_steps",
    "prune_checkpoints",
    "publish_product",
    "read_extra_state",
    "read_position",
    "run_part_weights",
    "verify_checkpoint",
    "save_checkpoint",
    "shared_atomic_directory",
]
