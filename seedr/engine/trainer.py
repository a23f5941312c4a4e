"""The training loop shared by pre-training and fine-tuning, on Hugging Face Accelerate.

Distribution and precision are Accelerate's, never code of ours: the same loop runs as

    seedr pretrain ...                                              # one process: CPU or one GPU
    accelerate launch --config_file my_8gpu.yaml -m seedr pretrain ...   # DDP / FSDP / DeepSpeed, bf16 / fp16
    torchrun --nproc_per_node 2 -m seedr pretrain ...               # plain torchrun, CPU (gloo) included

``TrainConfig.mixed_precision`` ``bf16``/``fp16`` is passed to ``Accelerator``; ``no`` (the default)
defers to the Accelerate launch config, so ``accelerate launch --mixed_precision bf16`` works as is.
``batch_size`` is per process and micro-step, so the effective batch is
``batch_size × gradient_accumulation_steps × processes`` (SEED-Encoder: 256; CPDAE: 64); recipes state
the paper's ``global_batch_size`` instead and the accumulation follows from the number of processes.
With ``gradient_cache`` the whole per-process batch enters one loss through GradCache
(``seedr.losses.gradient_cache``). On a machine without an accelerator the ``Accelerator`` is made
with ``cpu=True``, which is what makes ``torchrun`` start a real gloo process group on CPUs (without it
every process would silently train alone).
``save_product`` receives the unwrapped model on the main process, so under FSDP or DeepSpeed ZeRO-3
the Accelerate config must gather full weights for saving (FSDP ``FULL_STATE_DICT``,
``zero3_save_16bit_model``); the resumable state is Accelerate's own ``save_state`` in every set-up.

The model is an ``nn.Module`` whose ``forward(**batch)`` returns
``seedr.objectives.base.ObjectiveOutput(loss, parts)``; ``loss`` is back-propagated, every part is
logged under its name, and — for a loss of several differentiable parts — each part's gradient norm on
the encoder as ``grad_norm/<part>`` every ``log_every`` steps (``seedr.engine.part_gradients``; on the
last micro-batch of the step, averaged over processes; not under ``gradient_cache``). What a run writes
(see ``seedr.engine.checkpoint``): ``out/encoder/`` (the product), ``out/checkpoints/step-N/``, ``out/metrics.jsonl`` (one JSON line per logged step),
``out/config.yaml`` + ``out/run.json`` (``seedr.provenance.record_run``; ``train.gradient_accumulation_steps``
as the run used it, and the ``code_fingerprint`` of the code that started the run), and with
``train.report_to`` the same lines to Accelerate's experiment trackers (TensorBoard's files in
``out/trackers/``). Each run starts by saying what its batch is (global = per
process × processes × accumulation steps).

Exact resumption: a checkpoint holds the parameters, optimiser, scheduler, the RNG states of every
process and the data position (epoch, batch within the epoch). Each epoch's order is a function of
``(seed, epoch)`` (``TrainData``), the batches already seen are skipped with
``accelerator.skip_first_batches``, and ``collate`` runs under RNGs seeded by ``(seed, epoch, batch)``
— Accelerate's loader fetches one batch ahead, so random masking drawn from the global RNG would
otherwise shift by one batch after a resume. Dropout draws from the restored global RNG. A resumed
run therefore ends with the same parameters as an uninterrupted one.

Guards: a NaN or infinite loss stops the run before it reaches the weights (``NonFiniteLossError``,
naming the step and the loss parts; the last checkpoint and ``out/encoder`` stay as they were), and so
do weights that are not finite, or give a non-finite loss, when a checkpoint is due: a checkpoint is
saved only once its weights are checked, so the last one is always good. A
checkpoint records the run's settings; ``resume`` refuses other settings except
``SAFE_TO_CHANGE_ON_RESUME``, skips a damaged newest checkpoint for the one before (with a warning),
says in one line when other code resumes the run than started it (``seedr.provenance.other_code``),
and re-publishes ``out/encoder`` when a kill left it missing or older than the checkpoint.

A callback may end a run before ``max_steps`` (``Trainer.stop``: early stopping on a development
evaluation): the step it stops at is checkpointed and published as a last step is, and the reason is kept
in the checkpoint's position, so that a resumed run stays stopped."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.state import AcceleratorState
from accelerate.utils import broadcast_object_list, set_seed
from torch import Tensor, nn
from tqdm.auto import tqdm

from seedr.config.loading import to_dict
from seedr.config.settings import TrainConfig
from seedr.data.training_log import METRICS, append_metrics, read_metrics
from seedr.engine.batches import IndexedDataset, SeededCollate, TrainData
from seedr.engine.checkpoint import (
    STATE,
    checkpoint_path,
    latest_checkpoint,
    list_checkpoints,
    optimizer_state_files,
    product_is_current,
    prune_checkpoints,
    publish_product,
    read_extra_state,
    read_position,
    save_checkpoint,
    verify_checkpoint,
)
from seedr.engine.divergence import (
    stop_if_gradients_not_finite,
    stop_if_loss_not_finite,
    stop_if_weights_not_good,
)
from seedr.engine.optim import build_optimizer, build_scheduler
from seedr.engine.part_gradients import part_gradient_norms
from seedr.engine.run_metrics import TRACKERS, RunningMeans, check_trackers, flat_settings
from seedr.engine.run_state import SAFE_TO_CHANGE_ON_RESUME, process_state, uses_cpu
from seedr.hardware import resolve_mixed_precision
from seedr.io import DataError, atomic_write
from seedr.io.run_folders import already_a_run, changed_settings, stored_paths
from seedr.io.stops import keeps
from seedr.losses.gradient_cache import GradientCacheModel, average_gradients, gradient_cache_step
from seedr.provenance import code_fingerprint, other_code, record_run


class Callback:
    """Hooks into the loop; every method is a no-op by default. Called on every process."""

    def on_step_end(self, trainer: Trainer, step: int) -> dict[str, float] | None:
        """After optimizer step ``step`` (1-based); returned metrics are logged with that step. A callback
        that decides the run is done (early stopping) calls ``trainer.stop(reason)``."""
        return None

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        return None


class Trainer:
    """Train ``model`` on ``data`` with AdamW + a warm-up/decay schedule, checkpointing and exact resume.

    Args:
        model: returns ``ObjectiveOutput(loss, parts)`` from ``model(**batch)``.
        data: a ``TrainData``; ``data.dataset(epoch)`` is iterated in order, in batches of
            ``config.batch_size``.
        collate: turns a list of examples into the keyword tensors of ``model.forward``.
        config: a ``TrainConfig``.
        out_dir: the run folder.
        save_product: ``save_product(unwrapped_model, directory)`` writes the encoder (HF +
            sentence-transformers form) into ``directory``.
        callbacks: ``Callback`` objects (evaluation, ANCE negative refresh, ...).
        run_config: the full configuration recorded in ``out/config.yaml`` (default: ``config``).
        described: what the run trains with, for the model card of ``out/encoder``
            (``{"objective" | "loss" | "negatives": description}``: ``seedr.training.run_card.describe_run``).
        drop_last: drop the last partial batch of an epoch (the default: in-batch negatives and batch
            statistics of pre-training assume full batches), or train on it.

    Example:
        >>> trainer = Trainer(objective, TokenShardData(shards, seed=42), objective.collate,
        ...                   TrainConfig(max_steps=100), Path("runs/mlm"),
        ...                   lambda model, directory: model.save_encoder(directory))
        >>> metrics = trainer.train(resume=True)
    """

    def __init__(self, model: nn.Module, data: TrainData, collate: Callable[[list], dict[str, Tensor]],
                 config: TrainConfig, out_dir: Path, save_product: Callable[[nn.Module, Path], None],
                 callbacks: Sequence[Callback] = (), run_config: Any = None, drop_last: bool = True,
                 described: Mapping[str, str] | None = None, safe_to_change: Iterable[str] = ()) -> None:
        check_trackers(config.report_to)
        self.config, self.data, self.collate, self.drop_last = config, data, collate, drop_last
        # settings a resume may change besides the engine's own (run_config's keys, e.g. "dev_every")
        self.safe_to_change = SAFE_TO_CHANGE_ON_RESUME | frozenset(safe_to_change)
        self.described = dict(described or {})
        self.out_dir = Path(out_dir)
        self.save_product, self.callbacks, self.run_config = save_product, list(callbacks), run_config
        # Accelerate keeps one AcceleratorState per process and silently hands a later Accelerator the
        # first one's mixed precision: the next run in the same process (an experiment's next condition,
        # a test) would train in bf16 although it asked for float32. Each run sets its own; the process
        # group (PartialState) is kept.
        AcceleratorState._reset_state()
        precision = resolve_mixed_precision(config.mixed_precision, "cpu" if uses_cpu() else "cuda")
        # In place: the run config holding these settings records, in config.yaml and every checkpoint, the
        # accumulation that trains rather than the 1 a global_batch_size leaves in place.
        config.resolve_accumulation(process_state().num_processes)
        self.accelerator = Accelerator(
            gradient_accumulation_steps=config.gradient_accumulation_steps,
            # "no" leaves the choice to an Accelerate launch config (whose default is no mixed precision).
            # "auto" resolves to an explicit choice, which a launch config does not override.
            mixed_precision=None if config.mixed_precision == "no" else precision,
            cpu=uses_cpu(),
            # The schedule counts optimizer steps of the whole run; Accelerate would otherwise step it
            # once per process per optimizer step.
            step_scheduler_with_optimizer=False,
            log_with=config.report_to,
            project_dir=self.out_dir / TRACKERS if config.report_to else None,
        )
        set_seed(config.seed, device_specific=True)
        if config.gradient_cache and not isinstance(model, GradientCacheModel):
            raise ValueError(f"train.gradient_cache needs a model whose loss reads one embedding per text (two-tower "
                             f"objectives, fine-tuning); {getattr(model, 'name', '') or type(model).__name__} is not "
                             f"one: use gradient accumulation (train.global_batch_size) instead")
        self.model: nn.Module = model
        self.optimizer = build_optimizer(model, config)
        self.scheduler = build_scheduler(self.optimizer, config)
        self.step = 0
        self.epoch = 0
        self.batch_in_epoch = 0  # micro-batches of the current epoch already trained on (this process)
        self.stopped: str | None = None  # why a callback ended the run before max_steps (``stop``)
        self._prepared = False

    # ------------------------------------------------------------------------------------------ public

    def unwrapped_model(self) -> nn.Module:
        """The model without Accelerate's wrappers (DDP, autocast): what ``save_product`` receives."""
        return self.accelerator.unwrap_model(self.model)

    def stop(self, reason: str) -> None:
        """End the run after the current step (a callback's decision, e.g. early stopping): it is
        checkpointed and published as at ``max_steps``, and a resumed run stays stopped (the reason is in
        the checkpoint's position). Called on the main process alone, it reaches every process at the
        step's end."""
        self.stopped = reason

    def train(self, resume: bool = False) -> dict[str, float]:
        """Train to ``config.max_steps`` optimizer steps; returns the metrics of the last logged step.

        ``resume=True`` continues from the newest complete checkpoint in ``out_dir/checkpoints`` (or
        starts afresh if there is none); ``resume=False`` refuses to overwrite a run that has some.
        """
        accelerator, config = self.accelerator, self.config
        checkpoint = latest_checkpoint(self.out_dir)
        if checkpoint is not None and not resume:
            raise already_a_run(self.out_dir)
        if checkpoint is not None:
            checkpoint = self._usable_checkpoint()
            self._check_resumed_settings(checkpoint)
            self._restore_position(checkpoint)
            warning = other_code(self.out_dir) if accelerator.is_main_process else None
            if warning is not None:
                tqdm.write(warning)
        loader = self._epoch_loader(self.epoch)
        if not self._prepared:
            self.model, self.optimizer, loader, self.scheduler = accelerator.prepare(
                self.model, self.optimizer, loader, self.scheduler)
            self._prepared = True
        if len(loader) == 0:
            raise ValueError(f"{len(loader.dataset)} training examples make no full batch of {config.batch_size} "
                             f"per process × {accelerator.num_processes} processes")
        if checkpoint is not None:
            try:
                self._load_state(checkpoint)
            except Exception as error:  # noqa: BLE001 (torch.load and safetensors raise many types)
                raise DataError(checkpoint / STATE, f"cannot be restored ({type(error).__name__}: "
                                                    f"{str(error).splitlines()[0] if str(error) else ''}); delete "
                                                    f"this checkpoint to resume from the one before") from None
            if accelerator.is_main_process and not product_is_current(checkpoint, self.out_dir):
                publish_product(checkpoint, self.out_dir, self.described)  # a kill came between the checkpoint and the product
        if accelerator.is_main_process:
            # run.json names the code that started the run: a resume keeps it, so every resume can compare
            settings = self.run_config if self.run_config is not None else self.config
            code = None if checkpoint is not None else code_fingerprint()
            record_run(self.out_dir, settings, config.seed, code=code)
            self._say_kept()
            self._truncate_metrics(self.step)
            tqdm.write(config.describe_batch(accelerator.num_processes), file=sys.stderr)
        self._start_trackers()
        try:
            return self._train_steps(loader)
        finally:
            self._end_trackers()

    def _train_steps(self, loader: torch.utils.data.DataLoader) -> dict[str, float]:
        """``train``'s loop, from the restored position to ``config.max_steps``."""
        accelerator, config = self.accelerator, self.config
        last_logged: dict[str, float] = self._last_metrics()
        progress = tqdm(total=config.max_steps, initial=self.step, desc="training", unit="step",
                        disable=not accelerator.is_local_main_process, dynamic_ncols=True)
        running = RunningMeans()
        grad_norm: Tensor | None = None
        started = time.perf_counter()
        self.model.train()
        while self.step < config.max_steps and not self.stopped:
            if self.batch_in_epoch:
                loader = accelerator.skip_first_batches(loader, self.batch_in_epoch)
            for batch in loader:
                with accelerator.accumulate(self.model):
                    if config.gradient_cache:
                        output = gradient_cache_step(self.unwrapped_model(), batch, config.gradient_cache_chunk,
                                                     accelerator.backward, accelerator.autocast)
                        stop_if_loss_not_finite(self.accelerator, output, self.out_dir, self.step)
                        if accelerator.sync_gradients:  # the chunks ran outside DDP's forward: average here
                            average_gradients(self.model.parameters())
                    else:
                        output = self.model(**batch)
                        stop_if_loss_not_finite(self.accelerator, output, self.out_dir, self.step)
                        if accelerator.sync_gradients and self._logs_at(self.step + 1):
                            output.metrics.update(part_gradient_norms(self.unwrapped_model(), output.parts))
                        accelerator.backward(output.loss)
                    if accelerator.sync_gradients:  # clipping at ∞ only measures the norm, to log it
                        grad_norm = accelerator.clip_grad_norm_(
                            self.model.parameters(), config.max_grad_norm if config.clips_gradients else math.inf)
                        stop_if_gradients_not_finite(self.accelerator, grad_norm, self.step)
                    self.optimizer.step()
                    if accelerator.sync_gradients and not accelerator.optimizer_step_was_skipped:
                        self.scheduler.step()
                    self.optimizer.zero_grad()
                self.batch_in_epoch += 1
                running.add(output)
                if not accelerator.sync_gradients:
                    continue

                self.step += 1
                progress.update(1)
                line: dict[str, float] = {}
                for callback in self.callbacks:
                    line.update(callback.on_step_end(self, self.step) or {})
                self._share_stop()
                self.model.train()  # a callback that evaluated may have left the model in eval mode
                if self._logs_at(self.step):
                    norm = float(grad_norm) if grad_norm is not None else math.nan
                    line = {**running.reduce(accelerator), "grad_norm": norm, **line}
                    progress.set_postfix({k: f"{v:.4g}" for k, v in line.items() if k != "grad_norm"})
                if line:
                    line = {"step": self.step, "epoch": self.epoch, "lr": self.scheduler.get_last_lr()[0],
                            **line, "seconds": round(time.perf_counter() - started, 3)}
                    self._write_metrics(line)
                    last_logged = line
                if self.step % config.save_every == 0 or self.step == config.max_steps or self.stopped:
                    stop_if_weights_not_good(self.accelerator, self.model, self.unwrapped_model(), self.config, batch,
                                             self.out_dir, self.step)
                    self._save()
                if self.step >= config.max_steps or self.stopped:
                    break
            else:
                self.epoch, self.batch_in_epoch = self.epoch + 1, 0
                loader = accelerator.prepare_data_loader(self._epoch_loader(self.epoch))
        progress.close()
        if self.stopped and accelerator.is_main_process:
            tqdm.write(f"stopped at step {self.step} of {config.max_steps}: {self.stopped}", file=sys.stderr)
        if latest_checkpoint(self.out_dir) != checkpoint_path(self.out_dir, self.step):
            self._save()  # resumed at the end: make sure the product and checkpoint exist
        accelerator.wait_for_everyone()
        return last_logged

    # ------------------------------------------------------------------------------------------ internals

    def _share_stop(self) -> None:
        """Every process stops where the main process's callbacks stopped (they evaluate there alone)."""
        if self.accelerator.num_processes > 1:
            shared = [self.stopped]
            broadcast_object_list(shared, from_process=0)
            self.stopped = shared[0]

    def _logs_at(self, step: int) -> bool:
        return step % self.config.log_every == 0 or step == self.config.max_steps

    def _epoch_loader(self, epoch: int) -> torch.utils.data.DataLoader:
        return torch.utils.data.DataLoader(
            IndexedDataset(self.data.dataset(epoch)), batch_size=self.config.batch_size, shuffle=False,
            drop_last=self.drop_last, collate_fn=SeededCollate(self.collate, self.config.seed, epoch),
            # Its own generator: creating a loader iterator must not draw from the global RNG.
            generator=torch.Generator().manual_seed(self.config.seed))

    def _settings(self) -> dict[str, Any]:
        """The run's settings as JSON values, dotted keys (``flat_settings``): recorded in every checkpoint,
        paths inside the run relative to its folder (``stored_paths``: a copied run resumes)."""
        run_config = self.run_config if self.run_config is not None else {"train": self.config}
        settings = to_dict(run_config) if dataclasses.is_dataclass(run_config) else dict(run_config)
        settings = {key: to_dict(value) if dataclasses.is_dataclass(value) else value
                    for key, value in settings.items()}
        return flat_settings(stored_paths(json.loads(json.dumps(settings, default=str)), self.out_dir))

    def _check_resumed_settings(self, checkpoint: Path) -> None:
        """Refuse to resume ``checkpoint`` with settings other than those that made it (but the
        ``safe_to_change`` ones). Settings the checkpoint does not record (written by an
        older seedr, or new options) are not compared."""
        recorded = read_position(checkpoint).get("settings")
        if not isinstance(recorded, dict):
            return
        recorded, current = stored_paths(recorded, self.out_dir), self._settings()  # an older seedr's, as now
        # A global batch decides the accumulation with the batch size and the processes, all compared; a
        # checkpoint of an older seedr recorded the 1 it left in place rather than the accumulation used.
        derived = ({"train.gradient_accumulation_steps"} if recorded.get("train.global_batch_size") is not None
                   else set())
        changed = changed_settings(recorded, current, self.safe_to_change | derived)
        if changed:
            raise ValueError(f"{checkpoint} was trained with other settings: {'; '.join(changed)}. Resume with "
                             f"the same settings (only {', '.join(sorted(self.safe_to_change))} may "
                             f"change), or start a new run in another --out")

    def _usable_checkpoint(self) -> Path:
        """The newest checkpoint that is readable: a corrupt one (a disk filled or a file damaged after the
        save) is skipped, with a warning, for the one before it."""
        checkpoints = list_checkpoints(self.out_dir)
        for _, candidate in reversed(checkpoints):
            try:
                verify_checkpoint(candidate)
                return candidate
            except DataError as error:
                if self.accelerator.is_main_process:
                    tqdm.write(f"warning: skipping a damaged checkpoint: {error}")
        raise DataError(self.out_dir, f"none of its {len(checkpoints)} checkpoints can be read: start a new run")

    def _load_state(self, checkpoint: Path) -> None:
        """Accelerate's ``load_state`` of ``checkpoint``. Only the newest checkpoint keeps the optimizer
        state (``prune_checkpoints``); an older one, resumed from because the newest was damaged, restores
        everything else and AdamW's moments start afresh, with a warning that the run is no longer the
        exact continuation of the interrupted one."""
        accelerator = self.accelerator
        if optimizer_state_files(checkpoint):
            accelerator.load_state(str(checkpoint / STATE))
            return
        if accelerator.is_main_process:
            tqdm.write(f"warning: {checkpoint.name} keeps no optimizer state (only the newest checkpoint does): "
                       "the optimizer's moments start afresh, so the resumed run is not an exact continuation")
        # Accelerate has no option to skip the optimizer: hide it from load_state for this one call.
        optimizers, accelerator._optimizers = accelerator._optimizers, []
        try:
            accelerator.load_state(str(checkpoint / STATE))
        finally:
            accelerator._optimizers = optimizers

    def _save(self) -> None:
        position = {"step": self.step, "epoch": self.epoch, "batch_in_epoch": self.batch_in_epoch,
                    "num_processes": self.accelerator.num_processes, "settings": self._settings(),
                    "stopped": self.stopped}
        state_dict = getattr(self.data, "state_dict", None)
        extra = {"data": state_dict() if callable(state_dict) else None,
                 "callbacks": [callback.state_dict() for callback in self.callbacks]}
        path = checkpoint_path(self.out_dir, self.step)
        save_checkpoint(self.accelerator, path, position, extra,
                        lambda directory: self.save_product(self.unwrapped_model(), directory))
        if self.accelerator.is_main_process:
            self._say_kept()
            publish_product(path, self.out_dir, self.described)
            prune_checkpoints(self.out_dir, self.config.keep_checkpoints)
        self.accelerator.wait_for_everyone()

    def _say_kept(self) -> None:
        """What a stop (SIGTERM, SIGINT) from now on keeps, for the line it ends with (``seedr.io.stops``):
        said as the run goes, since a stop inside a long step ends the process before it could unwind here."""
        last, again = latest_checkpoint(self.out_dir), "run the command again with --resume"
        keeps(f"{self.out_dir} keeps its checkpoint {last.name}: {again} to continue"
              if last else f"{self.out_dir} holds no checkpoint yet: {again} to start it over")

    def _restore_position(self, checkpoint: Path) -> None:
        position = read_position(checkpoint)
        if position.get("num_processes", 1) != self.accelerator.num_processes:
            raise ValueError(f"{checkpoint} was written by {position.get('num_processes')} processes; resume "
                             f"it with the same number (now {self.accelerator.num_processes})")
        self.step, self.epoch, self.batch_in_epoch = position["step"], position["epoch"], position["batch_in_epoch"]
        self.stopped = position.get("stopped")
        extra = read_extra_state(checkpoint)
        load_state_dict = getattr(self.data, "load_state_dict", None)
        if extra.get("data") is not None and callable(load_state_dict):
            load_state_dict(extra["data"])
        for callback, state in zip(self.callbacks, extra.get("callbacks", []), strict=False):
            callback.load_state_dict(state)

    @property
    def _metrics_path(self) -> Path:
        return self.out_dir / METRICS

    def _write_metrics(self, line: dict[str, Any]) -> None:
        if self.accelerator.is_main_process:
            append_metrics(self._metrics_path, line)
            self._track(line)

    def _start_trackers(self) -> None:
        """Start ``train.report_to``'s trackers (Accelerate's ``init_trackers``, which acts on the main
        process) under the run folder's name, with the run's settings as values every tracker takes, and
        hand them the lines ``metrics.jsonl`` already holds: a fine-tuning's step-0 dev evaluation, or the
        steps before the checkpoint a run resumes from. TensorBoard's ``purge_step`` 0 hides what an
        interrupted session wrote, so the event files hold what ``metrics.jsonl`` holds, each step once."""
        if not self.config.report_to:
            return
        settings = {key: value if isinstance(value, bool | int | float | str) else json.dumps(value)
                    for key, value in self._settings().items()}  # None and lists: no tracker takes them all
        self.accelerator.init_trackers(self.out_dir.name, config=settings,
                                       init_kwargs={"tensorboard": {"purge_step": 0}})
        for line in self._read_metrics() if self.accelerator.is_main_process else []:
            self._track(line)

    def _track(self, line: dict[str, Any]) -> None:
        """A line of ``metrics.jsonl`` to the trackers, at its step (no-op without trackers)."""
        if self.accelerator.trackers:
            self.accelerator.log({key: value for key, value in line.items()
                                  if key != "step" and isinstance(value, int | float)}, step=int(line["step"]))

    def _end_trackers(self) -> None:
        """Finish the trackers (their files flushed and closed), also when training stopped with an error.
        Not ``Accelerator.end_training``: it also destroys the process group, which the next run in this
        process (a fine-tuning's next round or seed, an experiment's next step) trains in."""
        for tracker in self.accelerator.trackers:
            tracker.finish()
        self.accelerator.trackers = []

    def _read_metrics(self) -> list[dict[str, Any]]:
        return read_metrics(self._metrics_path)  # without the torn last line of a killed run

    def _truncate_metrics(self, step: int) -> None:
        """Drop the lines a killed run logged after the checkpoint it resumes from."""
        kept = [line for line in self._read_metrics() if line.get("step", math.inf) <= step]
        with atomic_write(self._metrics_path) as stream:
            stream.writelines(json.dumps(line) + "\n" for line in kept)

    def _last_metrics(self) -> dict[str, float]:
        lines = self._read_metrics() if self.accelerator.is_main_process else []
        return lines[-1] if lines else {"step": self.step}
