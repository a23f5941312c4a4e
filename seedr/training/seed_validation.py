"""The development evaluation during pre-training: the encoder being pre-trained, scored as a retriever.

Fine-tuning scores its dual encoder in memory (``seedr.training.finetune.DevEvaluation``); a pre-training
objective is not a retriever, so every ``every`` steps the encoder it trains is written as the run would
publish it (``Objective.save_encoder``: the encoder and the pooling its objective trained) into a scratch
folder, loaded as a dual encoder with the fine-tuning's settings (``build_model``), and ranked by the same
``DevEvaluation`` — the retrieval a seed gives before any fine-tuning, which ``seedr adapt`` watches on its
held-out pseudo-queries (SEED-Encoder also reads its seeds through zero-shot retrieval, Lu et al., EMNLP
2021, §5). Logged as ``dev/<metric>``, the same keys as fine-tuning's, so ``EarlyStopping`` and
``seedr.reporting.validation`` take either run.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torch import nn

from seedr.config.loading import to_dict
from seedr.config.settings import FinetuneConfig, PretrainConfig
from seedr.data.training_log import METRICS
from seedr.engine.trainer import Callback
from seedr.io import atomic_write
from seedr.objectives import OBJECTIVES
from seedr.training.early_stopping import BEST, BEST_RECORD, EarlyStopping, publish_best
from seedr.training.finetune import DevEvaluation, build_model, load_dev_set
from seedr.training.pretrain import pretrain
from seedr.training.run_card import describe_run

if TYPE_CHECKING:
    from seedr.engine.trainer import Trainer


class SeedValidation(Callback):
    """Score the encoder under pre-training every ``evaluation.every`` steps and at the last step.

    Args:
        evaluation: the dev set, metrics and depth (its ``every`` says when).
        config: how the encoder is read as a retriever (pooling null: the pooling its objective saves).
        save: ``save(model, directory)`` writes the encoder being trained (the run's ``save_product``).
        scratch: where the scratch folders go (the run folder).
        stopping: the early stopping that watches it, shown the starting model too (``log_initial``).
    """

    def __init__(self, evaluation: DevEvaluation, config: FinetuneConfig, save: Callable[[nn.Module, Path], None],
                 scratch: Path, stopping: EarlyStopping | None = None) -> None:
        self.evaluation, self.config, self.save, self.scratch = evaluation, config, save, scratch
        self.stopping = stopping

    def log_initial(self, model: nn.Module, run_dir: Path) -> dict[str, float]:
        """Score the starting model and start ``metrics.jsonl`` with it (step 0 of the curve)."""
        metrics = self.evaluate(model, 0)
        with atomic_write(run_dir / METRICS) as stream:
            stream.write(json.dumps({"step": 0, "epoch": 0, **metrics}) + "\n")
        if self.stopping is not None:
            self.stopping.observe(0, metrics, model)
        return metrics

    def evaluated(self) -> tuple[int | None, dict[str, float]]:
        return self.evaluation.evaluated()

    def evaluate(self, model: nn.Module, step: int) -> dict[str, float]:
        """Write ``model``'s encoder, read it as a dual encoder, score it; ``step`` is recorded with it."""
        self.scratch.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".seed-validation.", dir=self.scratch) as folder:
            self.save(model, Path(folder))
            retriever = build_model(self.config, folder)
            metrics = self.evaluation.evaluate(retriever)
        self.evaluation.step = step
        return metrics

    def on_step_end(self, trainer: Trainer, step: int) -> dict[str, float] | None:
        every = self.evaluation.every
        due = (every and step % every == 0) or step == trainer.config.max_steps
        if not due or not trainer.accelerator.is_main_process:
            return None
        return self.evaluate(trainer.unwrapped_model(), step)


def pretrain_validated(config: PretrainConfig, out_dir: Path, validation: FinetuneConfig,
                       resume: bool = False) -> dict[str, Any]:
    """Pre-train with ``validation``'s development set scored every ``validation.dev_every`` steps (and
    before the first), its early stopping (``patience``) and, with ``keep_best``, the best evaluation's
    encoder as the run's ``encoder/``. The encoder is read as fine-tuning will read it: with the pooling
    its objective trains, where it trains one (``seedr.training.finetune.pretrained_seed``), else with
    ``validation.pooling``. Returns the run's summary:
    the last logged metrics, the best evaluation and why it stopped early, if it did."""
    evaluation = DevEvaluation(load_dev_set(validation, None), validation.dev_metrics, validation.dev_every,
                               validation.dev_depth, validation.encode_batch_size)
    length = config.data.max_seq_length

    def save(model: nn.Module, directory: Path) -> None:
        model.save_encoder(directory, max_seq_length=length)

    stopping = EarlyStopping(evaluation.evaluated, validation.dev_metrics[0], validation.patience,
                             out_dir / BEST if validation.keep_best else None, save)
    # read as fine-tuning will read it: through the vector its objective trains, if it trains one
    # (``pretrained_seed``), else with the fine-tuning's own pooling
    trains_vector = bool(OBJECTIVES.get(config.objective_name).config_class.trained_representation)
    reading = dataclasses.replace(validation, pooling=None) if trains_vector else validation
    watching = SeedValidation(evaluation, reading, save, out_dir, stopping)
    last = pretrain(config, out_dir, resume=resume, callbacks=[watching, stopping])
    if validation.keep_best and (out_dir / BEST / BEST_RECORD).is_file():
        publish_best(out_dir / BEST, out_dir, describe_run(to_dict(config)))
    return {"last": last, "best": stopping.record(), "dev": {k: v for k, v in last.items() if k.startswith("dev/")}}


__all__ = ["SeedValidation", "pretrain_validated"]
