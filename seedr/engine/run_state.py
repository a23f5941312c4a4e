"""A training run's folder and processes: what a run refuses before anything loads
(``check_run_folder``), the settings a resume may change, and Accelerate's process state as the
``Trainer`` makes it."""

from __future__ import annotations

from pathlib import Path

import torch
from accelerate import PartialState

from seedr.engine.checkpoint import (
    latest_checkpoint,
)
from seedr.io import check_output

#: Settings a resumed run may change: they decide what is logged and kept, never the trained weights.
#: Anything else (learning rate, batch size, max steps — the schedule decays to 0 at max_steps —,
#: seed, data, model, objective) must stay as the checkpoint was made, or the run would be a mix of
#: two runs that ``config.yaml`` describes as one.
#: A run's own settings of that kind (a fine-tuning run's development evaluation) are named by the run
#: (``Trainer(safe_to_change=...)``): the engine knows only its own.
SAFE_TO_CHANGE_ON_RESUME = frozenset({"train.log_every", "train.save_every", "train.keep_checkpoints",
                                      "train.report_to"})


def already_a_run(out_dir: Path) -> ValueError:
    return ValueError(f"{out_dir} already holds checkpoints of a run; resume it (--resume) or choose another "
                      "output folder")


def check_run_folder(out_dir: str | Path, resume: bool) -> None:
    """Refuse, before anything is loaded or tokenised, an output that training would refuse only when it
    starts: a file, a folder that is not a training run (``seedr.io.check_output``) or — without
    ``resume`` — a run already there: one that holds checkpoints, in its own folder or in those of its
    rounds (``round-<r>/``) and few-shot seeds (``seed-<s>/``), and one stopped before its first
    checkpoint (its ``config.yaml`` and ``run.json`` only), which would otherwise start over without a
    word. ``pretrain`` and ``finetune`` call it first; ``Trainer.train`` checks its own folder again."""
    out_dir = Path(out_dir)
    existing = check_output(out_dir, "training run", replaces=False)
    if resume:
        return
    runs = [out_dir, *out_dir.glob("round-*"), *out_dir.glob("seed-*"), *out_dir.glob("seed-*/round-*")]
    if any(latest_checkpoint(run) is not None for run in runs):
        raise already_a_run(out_dir)
    if existing:
        raise ValueError(f"{out_dir} holds a run stopped before its first checkpoint; start it again there with "
                         "--resume, or choose another output folder")


def uses_cpu() -> bool:
    """True on a machine without an accelerator (GPU, MPS, XPU ...): Accelerate then gets ``cpu=True``."""
    return not torch.accelerator.is_available()


def process_state() -> PartialState:
    """Accelerate's process state (rank, world size), made as the ``Trainer``'s ``Accelerator`` makes it."""
    return PartialState(cpu=uses_cpu())
