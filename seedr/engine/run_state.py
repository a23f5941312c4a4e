"""A training run's folder and processes: what a run refuses before anything loads
(``check_run_folder``, torch-free in ``seedr.io.run_folders``), the settings a resume may change, and
Accelerate's process state as the ``Trainer`` makes it."""

from __future__ import annotations

import torch
from accelerate import PartialState

#: Settings a resumed run may change: they decide what is logged and kept, never the trained weights.
#: Anything else (learning rate, batch size, max steps — the schedule decays to 0 at max_steps —,
#: seed, data, model, objective) must stay as the checkpoint was made, or the run would be a mix of
#: two runs that ``config.yaml`` describes as one.
#: A run's own settings of that kind (a fine-tuning run's development evaluation) are named by the run
#: (``Trainer(safe_to_change=...)``): the engine knows only its own.
SAFE_TO_CHANGE_ON_RESUME = frozenset({"train.log_every", "train.save_every", "train.keep_checkpoints",
                                      "train.report_to"})


def uses_cpu() -> bool:
    """True on a machine without an accelerator (GPU, MPS, XPU ...): Accelerate then gets ``cpu=True``."""
    return not torch.accelerator.is_available()


def process_state() -> PartialState:
    """Accelerate's process state (rank, world size), made as the ``Trainer``'s ``Accelerator`` makes it."""
    return PartialState(cpu=uses_cpu())
