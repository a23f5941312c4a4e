"""Early stopping on the development evaluation, and the best model it saw kept as the run's encoder.

The development evaluation (``seedr.training.finetune.DevEvaluation``: labelled dev queries, or the
held-out pseudo-queries of ``seedr adapt``) scores the model every ``dev_every`` steps; this callback
watches the first of its metrics. When it has not improved for ``patience`` evaluations in a row, the
run stops (``Trainer.stop``), as DPR selects its checkpoint on the dev set (Karpukhin et al. 2020, §5.1:
"the best checkpoint on the development set") and as the early stopping of Prechelt (1998, "Early
Stopping — But When?") stops on the validation error. With ``keep_best`` the model of the best
evaluation — the starting model included, evaluated at step 0 — is saved in ``best/`` when it is seen,
and becomes the run's ``encoder/`` when training ends (``publish_best``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torch import nn

from seedr.engine.trainer import Callback
from seedr.io import atomic_directory
from seedr.io.run_folders import PRODUCT
from seedr.modeling.model_card import write_model_card

if TYPE_CHECKING:
    from seedr.engine.trainer import Trainer

#: Where, in a run folder, the best model is kept (``keep_best``), and the file saying which it is.
BEST = "best"
BEST_RECORD = "best.json"


class EarlyStopping(Callback):
    """Watch ``dev/<metric>`` after each development evaluation; stop after ``patience`` evaluations
    without a strictly better value (0: never stop); with ``best_dir``, save each new best model there.

    Args:
        evaluated: returns ``(step, metrics)`` of the latest development evaluation (``DevEvaluation``).
        metric: the metric that decides, as the evaluation names it (``MRR@10``).
        patience: evaluations without improvement before the run stops; 0 = never.
        best_dir: where to keep the best model (``keep_best``), or None.
        save: ``save(model, directory)`` writes a model as the run's encoder.
    """

    def __init__(self, evaluated: Callable[[], tuple[int | None, Mapping[str, float]]], metric: str, patience: int,
                 best_dir: Path | None = None, save: Callable[[nn.Module, Path], None] | None = None) -> None:
        if best_dir is not None and save is None:
            raise ValueError("keeping the best model needs a function that saves it")
        self.evaluated, self.key, self.patience = evaluated, f"dev/{metric}", patience
        self.best_dir, self.save = best_dir, save
        self.best: float | None = None
        self.best_step: int | None = None
        self.waited = 0  # evaluations since the best one

    def observe(self, step: int, metrics: Mapping[str, float], model: nn.Module) -> bool:
        """Take the evaluation of ``step``; returns whether it is the best so far (then saved)."""
        if self.key not in metrics:
            raise ValueError(f"early stopping watches {self.key}, which the development evaluation does not "
                             f"compute ({', '.join(sorted(metrics))})")
        value = float(metrics[self.key])
        if self.best is not None and value <= self.best:
            self.waited += 1
            return False
        self.best, self.best_step, self.waited = value, step, 0
        if self.best_dir is not None and self.save is not None:
            with atomic_directory(self.best_dir) as temporary:
                self.save(model, temporary)
                (temporary / BEST_RECORD).write_text(json.dumps(self.record(), indent=2) + "\n", encoding="utf-8")
        return True

    def record(self) -> dict[str, Any]:
        """The best evaluation: the metric, its value and step, and the patience."""
        return {"metric": self.key, "value": self.best, "step": self.best_step, "patience": self.patience}

    def on_step_end(self, trainer: Trainer, step: int) -> dict[str, float] | None:
        at, metrics = self.evaluated()
        if at != step or not trainer.accelerator.is_main_process:
            return None
        self.observe(step, metrics, trainer.unwrapped_model())
        if self.patience and self.waited >= self.patience:
            trainer.stop(f"{self.key} has not improved on {self.best:.4f} (step {self.best_step}) in "
                         f"{self.waited} evaluations (patience {self.patience})")
        return {"best_step": float(self.best_step if self.best_step is not None else 0)}

    def state_dict(self) -> dict:
        return {"best": self.best, "best_step": self.best_step, "waited": self.waited}

    def load_state_dict(self, state: dict) -> None:
        self.best, self.best_step, self.waited = state.get("best"), state.get("best_step"), state.get("waited", 0)


def publish_best(best_dir: Path, out_dir: Path, described: Mapping[str, str] | None = None) -> Path:
    """Make the kept best model the run's ``encoder/`` (atomically), its model card naming its step."""
    step = json.loads((best_dir / BEST_RECORD).read_text(encoding="utf-8")).get("step")
    with atomic_directory(out_dir / PRODUCT) as temporary:
        shutil.copytree(best_dir, temporary, dirs_exist_ok=True, ignore=shutil.ignore_patterns(BEST_RECORD))
        write_model_card(temporary, run_dir=out_dir, step=step, described=described)
    return out_dir / PRODUCT


__all__ = ["BEST", "BEST_RECORD", "EarlyStopping", "publish_best"]
