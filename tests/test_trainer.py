"""The shared Accelerate trainer: optimiser groups, schedule, gradient accumulation, run folder,
checkpoints, exact resume, saved-encoder loading, and two real processes — tiny BERTs on real
Wikipedia text (wiki shard 00, tokenised into memory-mapped shards)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import tiny_bert
from torch import nn

from seedr.config.settings import FinetuneConfig, PretrainConfig, TrainConfig
from seedr.data.corpus import read_corpus
from seedr.data.shards import TokenShardData, write_token_shards
from seedr.engine.checkpoint import list_checkpoints
from seedr.engine.optim import build_optimizer, build_scheduler, parameter_groups
from seedr.engine.trainer import Callback, Trainer
from seedr.io.stops import stop_line
from seedr.objectives.base import Objective, ObjectiveOutput
from seedr.objectives.masking import pad_token_ids
from seedr.objectives.mlm.objective import MaskedLanguageModel
from seedr.objectives.mlm.options import MLMConfig

SEQ_LEN = 64


class TokenAutoencoder(Objective):
    """A deterministic test objective: each final state regresses its token's input embedding, and
    [CLS] predicts the bag of words of its text.

    Both parts are means over examples and collation draws no random numbers, so one batch of 4 and
    two accumulated batches of 2 must give the same update.
    """

    name = "test_autoencoder"

    def __init__(self, encoder, tokenizer) -> None:
        super().__init__(encoder, tokenizer, None)
        self.head = nn.Linear(encoder.config.hidden_size, len(tokenizer))

    def collate(self, examples):
        input_ids, attention_mask = pad_token_ids(examples, self.tokenizer.pad_token_id)
        return {"input_ids": input_ids, "attention_mask": attention_mask}

    def forward(self, input_ids, attention_mask):
        states = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (B, T, H)
        mask = attention_mask.float()  # (B, T)
        targets = self.encoder.get_input_embeddings()(input_ids)  # (B, T, H)
        token_loss = (states - targets).pow(2).mean(-1)  # (B, T)
        token = ((token_loss * mask).sum(1) / mask.sum(1)).mean()
        bow_log_probs = self.head(states[:, 0]).log_softmax(-1)  # (B, V)
        bow = (-(bow_log_probs.gather(1, input_ids) * mask).sum(1) / mask.sum(1)).mean()
        return ObjectiveOutput(loss=token + bow, parts={"token": token, "bow": bow})


def tiny_encoder(tokenizer, dropout: float = 0.1):
    return tiny_bert(tokenizer, intermediate_size=64, max_position_embeddings=SEQ_LEN, dropout=dropout)


@pytest.fixture(scope="module")
def shards(tmp_path_factory, wiki_shard, tokenizer) -> Path:
    """The first 64 tokens of the first 24 real articles of wiki shard 00: 6 steps an epoch in ``run``."""
    directory = tmp_path_factory.mktemp("trainer") / "shards"
    write_token_shards(itertools.islice(read_corpus(wiki_shard), 24), tokenizer, directory,
                       max_seq_length=SEQ_LEN, packing="first_block", progress=False)
    return directory


def mlm_objective(tokenizer, seed: int = 0) -> MaskedLanguageModel:
    torch.manual_seed(seed)
    return MaskedLanguageModel(tiny_encoder(tokenizer), tokenizer, MLMConfig())


def save_encoder(model, directory):
    model.save_encoder(directory, max_seq_length=SEQ_LEN)


def run(objective, shards, out_dir, callbacks=(), resume=False, **settings):
    defaults = {"max_steps": 8, "batch_size": 2, "gradient_accumulation_steps": 2, "warmup_steps": 2,
                "log_every": 2, "save_every": 4, "seed": 7}
    config = TrainConfig(**{**defaults, **settings})
    trainer = Trainer(objective, TokenShardData(shards, seed=config.seed), objective.collate, config, out_dir,
                      save_encoder, callbacks=callbacks)
    return trainer, trainer.train(resume=resume)


def parameters(model) -> dict[str, torch.Tensor]:
    return {name: value.detach().clone() for name, value in model.state_dict().items()}


# ---------------------------------------------------------------------------------------------- optimiser


def test_no_weight_decay_on_biases_and_layer_norms(tokenizer):
    objective = mlm_objective(tokenizer)
    decayed, not_decayed = parameter_groups(objective, weight_decay=0.01)
    assert decayed["weight_decay"] == 0.01 and not_decayed["weight_decay"] == 0.0
    names = {id(p): n for n, p in objective.named_parameters()}  # tied weights: named once
    decayed_names = {names[id(p)] for p in decayed["params"]}
    not_decayed_names = {names[id(p)] for p in not_decayed["params"]}
    assert not decayed_names & not_decayed_names
    assert decayed_names | not_decayed_names == set(names.values())
    assert all(n.endswith("bias") or "LayerNorm" in n or "layer_norm" in n for n in not_decayed_names)
    assert "encoder.embeddings.LayerNorm.weight" in not_decayed_names
    assert "encoder.encoder.layer.0.attention.self.query.bias" in not_decayed_names
    assert "encoder.embeddings.word_embeddings.weight" in decayed_names
    assert "encoder.encoder.layer.1.output.dense.weight" in decayed_names
    optimizer = build_optimizer(objective, TrainConfig())
    assert optimizer.defaults["eps"] == 1e-6 and optimizer.defaults["betas"] == (0.9, 0.999)


def test_linear_warmup_then_linear_decay_to_zero():
    model = nn.Linear(2, 2)
    config = TrainConfig(learning_rate=1e-4, warmup_steps=4, max_steps=12)
    optimizer = build_optimizer(model, config)
    scheduler = build_scheduler(optimizer, config)
    rates = []
    for _ in range(config.max_steps):
        rates.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
    rates.append(scheduler.get_last_lr()[0])
    np.testing.assert_allclose(rates[:5], [0, 2.5e-5, 5e-5, 7.5e-5, 1e-4], atol=1e-12)  # warm-up
    np.testing.assert_allclose(rates[4:], np.linspace(1e-4, 0, 9), atol=1e-12)  # decay to 0 at the end


@pytest.mark.parametrize(("scheduler", "expected"), [
    # steps 0, 2, 4 (end of warm-up), 8 (half-way through the decay) and 12 (the last)
    ("linear", [0, 5e-5, 1e-4, 5e-5, 0]),
    ("cosine", [0, 5e-5, 1e-4, 5e-5, 0]),  # cos at the decay's middle: (1 + cos(π/2)) / 2 = 0.5
    ("constant", [1e-4, 1e-4, 1e-4, 1e-4, 1e-4]),  # no warm-up at all
    ("constant_with_warmup", [0, 5e-5, 1e-4, 1e-4, 1e-4]),
])
def test_each_scheduler_gives_its_rate_at_chosen_steps(scheduler, expected):
    model = nn.Linear(2, 2)
    config = TrainConfig(learning_rate=1e-4, warmup_steps=4, max_steps=12, scheduler=scheduler)
    optimizer = build_optimizer(model, config)
    schedule = build_scheduler(optimizer, config)
    rates = []
    for _ in range(config.max_steps):
        rates.append(schedule.get_last_lr()[0])
        optimizer.step()
        schedule.step()
    rates.append(schedule.get_last_lr()[0])
    np.testing.assert_allclose([rates[step] for step in (0, 2, 4, 8, 12)], expected, atol=1e-12)
    if scheduler == "cosine":  # not linear: above the straight line in the first half of the decay
        assert rates[6] > 7.5e-5


def test_the_warmup_is_a_tenth_of_the_run_unless_given_in_steps():
    """One default (``warmup_ratio: 0.1``, in ``TrainConfig`` alone), one derivation
    (``resolved_warmup_steps``), and steps given replace the share, as in transformers' TrainingArguments."""
    config = TrainConfig(max_steps=200)
    assert config.resolved_warmup_steps == 20  # what the schedule uses
    assert TrainConfig(max_steps=200, warmup_steps=30).resolved_warmup_steps == 30
    assert TrainConfig(max_steps=200, warmup_ratio=None).resolved_warmup_steps == 0
    assert TrainConfig(max_steps=15).resolved_warmup_steps == 2  # rounded up, as transformers
    with pytest.warns(UserWarning, match="warm-up takes 7 of 10 steps"):  # not 8, from 7.000000000000001
        TrainConfig(max_steps=10, warmup_ratio=0.7)
    shorter = dataclasses.replace(config, max_steps=50)  # fine-tuning's `epochs` sets max_steps this way
    assert shorter.resolved_warmup_steps == 5
    with pytest.raises(ValueError, match="warmup_ratio"):
        TrainConfig(warmup_ratio=1.0)
    defaults = {field.name: field.default for field in dataclasses.fields(TrainConfig)}
    assert defaults["warmup_ratio"] == 0.1 and defaults["warmup_steps"] is None
    assert FinetuneConfig().train.warmup_ratio == PretrainConfig().train.warmup_ratio == 0.1


def test_warmup_as_long_as_the_run_is_refused_and_a_long_one_warned():
    with pytest.raises(ValueError, match=r"warmup_steps=200 is not fewer than train.max_steps=200"):
        TrainConfig(max_steps=200, warmup_steps=200)
    with pytest.raises(ValueError, match="never reach its peak"):
        TrainConfig(max_steps=200, warmup_steps=10_000)  # the CPU example of a recipe written in steps
    with pytest.warns(UserWarning, match="warm-up takes 120 of 200 steps"):
        TrainConfig(max_steps=200, warmup_steps=120)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TrainConfig(max_steps=200)


def test_gradient_clipping_can_be_turned_off_and_the_norm_is_still_logged(tokenizer, shards, tmp_path):
    assert not TrainConfig(max_grad_norm=0).clips_gradients and not TrainConfig(max_grad_norm=None).clips_gradients
    with pytest.raises(ValueError, match="max_grad_norm"):
        TrainConfig(max_grad_norm=-1)
    finals, norms = [], []
    for max_grad_norm in (None, 1e-3):
        torch.manual_seed(3)
        objective = TokenAutoencoder(tiny_encoder(tokenizer, dropout=0.0), tokenizer)
        start = parameters(objective)
        run(objective, shards, tmp_path / str(max_grad_norm), max_steps=1, gradient_accumulation_steps=1,
            warmup_steps=0, log_every=1, max_grad_norm=max_grad_norm)
        line = json.loads((tmp_path / str(max_grad_norm) / "metrics.jsonl").read_text().splitlines()[-1])
        norms.append(line["grad_norm"])
        finals.append(sum(float((parameters(objective)[name] - start[name]).norm()) for name in start))
    assert norms[0] > 1e-3 and norms[0] == pytest.approx(norms[1], rel=1e-5)  # the norm before clipping
    # Adam's first step is about lr · g / (|g| + ε): gradients clipped to a norm near ε move the weights less
    assert finals[0] != pytest.approx(finals[1], rel=1e-3)


def test_each_run_in_a_process_trains_in_its_own_precision(tokenizer, shards, tmp_path):
    # Accelerate's per-process state would otherwise hand the second run the first run's bf16
    first, _ = run(mlm_objective(tokenizer), shards, tmp_path / "bf16", mixed_precision="bf16", max_steps=4)
    assert first.accelerator.mixed_precision == "bf16"
    second, _ = run(mlm_objective(tokenizer), shards, tmp_path / "fp32", max_steps=4)
    assert second.accelerator.mixed_precision == "no"


def test_bad_train_config_is_refused():
    with pytest.raises(ValueError, match="batch_size"):
        TrainConfig(batch_size=0)
    with pytest.raises(ValueError, match="mixed_precision"):
        TrainConfig(mixed_precision="fp8")


def test_gradient_accumulation_equals_the_big_batch(tokenizer, shards, tmp_path):
    finals = []
    for batch_size, accumulation in ((4, 1), (2, 2)):
        torch.manual_seed(3)
        objective = TokenAutoencoder(tiny_encoder(tokenizer, dropout=0.0), tokenizer)
        run(objective, shards, tmp_path / f"b{batch_size}", max_steps=3, batch_size=batch_size,
            gradient_accumulation_steps=accumulation, warmup_steps=0, save_every=100)
        finals.append(parameters(objective))
    assert finals[0].keys() == finals[1].keys()
    for name in finals[0]:
        torch.testing.assert_close(finals[0][name], finals[1][name], atol=2e-6, rtol=1e-5, msg=name)


def test_the_last_partial_batch_is_dropped_or_kept(tokenizer, shards, tmp_path):
    objective = mlm_objective(tokenizer)
    config = TrainConfig(batch_size=5)  # 24 examples: 4 full batches and one of 4
    sizes = {}
    for drop_last in (True, False):
        trainer = Trainer(objective, TokenShardData(shards), objective.collate, config, tmp_path, save_encoder,
                          drop_last=drop_last)
        sizes[drop_last] = [len(batch["input_ids"]) for batch in trainer._epoch_loader(0)]
    assert sizes == {True: [5, 5, 5, 5], False: [5, 5, 5, 5, 4]}


def test_logged_parts_add_up_to_the_loss_when_a_batch_lacks_one(tokenizer, shards, tmp_path):
    """A two-tower mix may have no pair of some task in a batch: that part counts as 0 for that batch."""
    from seedr.engine.run_metrics import RunningMeans

    objective = mlm_objective(tokenizer)
    accelerator = Trainer(objective, TokenShardData(shards), objective.collate, TrainConfig(), tmp_path,
                          save_encoder).accelerator
    running = RunningMeans()
    value = torch.tensor
    running.add(ObjectiveOutput(value(3.0), {"ict": value(1.0), "wlp": value(2.0)}, {"accuracy": value(0.5)}))
    running.add(ObjectiveOutput(value(1.0), {"ict": value(1.0)}, {}))
    means = running.reduce(accelerator)
    assert means == {"loss": 2.0, "ict": 1.0, "wlp": 1.0, "accuracy": 0.5}
    assert means["ict"] + means["wlp"] == means["loss"]
    assert running.reduce(accelerator) == {} and running.batches == 0  # reset after each log line


# ---------------------------------------------------------------------------------------------- run folder


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, tokenizer, shards):
    """An uninterrupted 8-step MLM run (with dropout, accumulation 2, crossing an epoch boundary)."""
    out_dir = tmp_path_factory.mktemp("runs") / "uninterrupted"
    objective = mlm_objective(tokenizer)
    trainer, metrics = run(objective, shards, out_dir)
    return out_dir, trainer, metrics, parameters(objective)


def test_run_folder_holds_product_checkpoints_metrics_and_config(finished_run, shards):
    out_dir, trainer, metrics, _ = finished_run
    assert trainer.step == 8 and metrics["step"] == 8
    assert (out_dir / "encoder" / "model.safetensors").exists()
    assert (out_dir / "config.yaml").exists() and json.loads((out_dir / "run.json").read_text())["seed"] == 7
    assert [step for step, _ in list_checkpoints(out_dir)] == [4, 8]  # keep_checkpoints=2
    checkpoint = out_dir / "checkpoints" / "step-8"
    for name in ("model.safetensors", "optimizer.bin", "scheduler.bin", "random_states_0.pkl"):
        assert (checkpoint / "state" / name).exists(), name
    assert (checkpoint / "encoder" / "config.json").exists()
    position = json.loads((checkpoint / "trainer_state.json").read_text())
    assert len(TokenShardData(shards).shards) == 24  # 12 micro-batches of 2 an epoch
    assert (position["step"], position["epoch"], position["batch_in_epoch"]) == (8, 1, 4)  # 16 micro-batches
    # the decoder/heads are in the full state, not in the product
    from safetensors import safe_open

    with safe_open(checkpoint / "state" / "model.safetensors", "pt") as state:
        assert any(key.startswith("mlm_head.") for key in state.keys())  # noqa: SIM118 (safe_open is not iterable)
    with safe_open(checkpoint / "encoder" / "model.safetensors", "pt") as product:
        assert not any("mlm_head" in key for key in product.keys())  # noqa: SIM118


def test_metrics_jsonl_logs_every_named_part(finished_run):
    out_dir, *_ = finished_run
    lines = [json.loads(line) for line in (out_dir / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [2, 4, 6, 8]
    for line in lines:
        assert {"step", "epoch", "lr", "loss", "mlm", "grad_norm"} <= line.keys()
        assert np.isfinite(line["loss"]) and line["loss"] == pytest.approx(line["mlm"])
    assert lines[-1]["lr"] == 0.0  # linear decay reaches 0 at max_steps


def test_saved_encoder_loads_in_transformers_and_sentence_transformers(finished_run, tokenizer):
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel

    out_dir, trainer, *_ = finished_run
    in_memory = trainer.unwrapped_model().encoder.eval()
    text = "Anarchism is a political philosophy that advocates self-governed societies."
    batch = tokenizer([text], return_tensors="pt")
    with torch.no_grad():
        expected = in_memory(**batch).last_hidden_state[:, 0]  # (1, H)
        loaded = AutoModel.from_pretrained(out_dir / "encoder").eval()
        torch.testing.assert_close(loaded(**batch).last_hidden_state[:, 0], expected)
    sentence_model = SentenceTransformer(str(out_dir / "encoder"), device="cpu")
    embedded = sentence_model.encode([text], convert_to_tensor=True)  # (1, H), [CLS] pooling
    torch.testing.assert_close(embedded, expected, atol=1e-5, rtol=1e-5)


# ---------------------------------------------------------------------------------------------- resume


class StopAt(Callback):
    """Stands for a kill: raises once the run has reached ``step`` (after the last checkpoint)."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, trainer, step):
        if step == self.step:
            raise KeyboardInterrupt(f"stopped at step {step}")


class CountingCallback(Callback):
    """Logs a metric every 3 steps and keeps state that must survive a resume."""

    def __init__(self) -> None:
        self.calls = 0

    def on_step_end(self, trainer, step):
        self.calls += 1
        return {"calls": float(self.calls)} if step % 3 == 0 else None

    def state_dict(self):
        return {"calls": self.calls}

    def load_state_dict(self, state):
        self.calls = state["calls"]


def test_only_the_newest_checkpoint_keeps_the_optimizer_state(tokenizer, shards, tmp_path):
    from seedr.engine.checkpoint import optimizer_state_files

    run(mlm_objective(tokenizer), shards, tmp_path, max_steps=6, save_every=2, keep_checkpoints=3)
    checkpoints = list_checkpoints(tmp_path)
    assert [step for step, _ in checkpoints] == [2, 4, 6]  # train.keep_checkpoints=3
    assert [[path.name for path in optimizer_state_files(folder)] for _, folder in checkpoints] == \
        [[], [], ["optimizer.bin"]]

    def size(folder):
        return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())

    sizes = {step: size(folder) for step, folder in checkpoints}
    optimizer = (checkpoints[-1][1] / "state" / "optimizer.bin").stat().st_size
    weights = (checkpoints[-1][1] / "state" / "model.safetensors").stat().st_size
    assert optimizer > 1.5 * weights  # AdamW's two moments
    assert sizes[2] == sizes[4] and sizes[6] - sizes[4] == pytest.approx(optimizer, rel=0.01)
    for _, folder in checkpoints:  # every checkpoint keeps its encoder and full weights
        assert (folder / "encoder" / "model.safetensors").exists()
        assert (folder / "state" / "model.safetensors").exists()


def test_resume_gives_the_uninterrupted_parameters(finished_run, tokenizer, shards, tmp_path):
    _, _, _, expected = finished_run
    out_dir = tmp_path / "interrupted"
    with pytest.raises(KeyboardInterrupt):
        run(mlm_objective(tokenizer), shards, out_dir, callbacks=[StopAt(6)])
    assert [step for step, _ in list_checkpoints(out_dir)] == [4]
    # the line a stop there ends the command with (#65 item 8: said as the run goes, wherever it lands)
    assert stop_line("SIGTERM") == (f"stopped by SIGTERM: {out_dir} keeps its checkpoint step-4: run the command "
                                    f"again with --resume to continue")
    lines = [json.loads(line)["step"] for line in (out_dir / "metrics.jsonl").read_text().splitlines()]
    assert lines == [2, 4]  # step 6 stopped before its line was written

    with pytest.raises(ValueError, match="already holds checkpoints"):
        run(mlm_objective(tokenizer), shards, out_dir)
    resumed = mlm_objective(tokenizer, seed=123)  # different initial weights: all must come from the checkpoint
    trainer, metrics = run(resumed, shards, out_dir, resume=True)
    assert trainer.step == 8 and metrics["step"] == 8
    got = parameters(resumed)
    for name, value in expected.items():
        assert torch.equal(got[name], value), name
    lines = [json.loads(line)["step"] for line in (out_dir / "metrics.jsonl").read_text().splitlines()]
    assert lines == [2, 4, 6, 8]


def test_callback_metrics_and_state_survive_a_resume(tokenizer, shards, tmp_path):
    counter = CountingCallback()
    with pytest.raises(KeyboardInterrupt):
        run(mlm_objective(tokenizer), shards, tmp_path, callbacks=[counter, StopAt(5)], max_steps=6)
    counter = CountingCallback()
    run(mlm_objective(tokenizer), shards, tmp_path, callbacks=[counter], max_steps=6, resume=True)
    assert counter.calls == 6  # 4 before the checkpoint (restored) + 2 after
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [(line["step"], line.get("calls")) for line in lines] == [(2, None), (3, 3.0), (4, None), (6, 6.0)]
    assert "loss" not in lines[1]  # a callback-only line carries no half-averaged loss


def test_resuming_a_finished_run_changes_nothing(finished_run, tokenizer, shards, tmp_path):
    import shutil

    out_dir = tmp_path / "copy"
    shutil.copytree(finished_run[0], out_dir)
    objective = mlm_objective(tokenizer, seed=5)
    trainer, metrics = run(objective, shards, out_dir, resume=True)
    assert trainer.step == 8 and metrics["step"] == 8
    for name, value in finished_run[3].items():
        assert torch.equal(parameters(objective)[name], value), name


def test_resuming_with_other_code_says_so_in_one_line(finished_run, tokenizer, shards, tmp_path, capsys):
    """Issue 58.12: run.json records the code that started the run (``code_fingerprint``), a resume keeps
    it, and each resume by other code says, in one line, that the result mixes the two; a run.json of an
    older seedr, without it, is one line that it cannot be checked; the same code says nothing."""
    import shutil

    from seedr.provenance import code_fingerprint

    out_dir = tmp_path / "copy"
    shutil.copytree(finished_run[0], out_dir)
    record = json.loads((out_dir / "run.json").read_text())
    assert record["code"] == code_fingerprint()
    run(mlm_objective(tokenizer), shards, out_dir, resume=True)
    assert "warning" not in capsys.readouterr().out

    started_by = {"version": record["code"]["version"], "source": "0123456789ab"}
    (out_dir / "run.json").write_text(json.dumps({**record, "code": started_by}))
    for _ in range(2):  # the resume keeps the code that started the run: the next one says it again
        run(mlm_objective(tokenizer), shards, out_dir, resume=True)
        lines = [line for line in capsys.readouterr().out.splitlines() if "warning" in line]
        assert lines == [f"warning: resuming {out_dir}, started by other code (fingerprint 0123456789ab → "
                         f"{code_fingerprint()['source']}); the result mixes the two"]
        assert json.loads((out_dir / "run.json").read_text())["code"] == started_by

    del record["code"]
    (out_dir / "run.json").write_text(json.dumps(record))
    run(mlm_objective(tokenizer), shards, out_dir, resume=True)
    lines = [line for line in capsys.readouterr().out.splitlines() if "warning" in line]
    assert len(lines) == 1 and "records no code fingerprint" in lines[0] and "cannot be checked" in lines[0]
    assert "code" not in json.loads((out_dir / "run.json").read_text())


def test_skipping_batches_replays_the_same_masked_batches(tokenizer, shards, tmp_path):
    """Resume skips the first batches of an epoch; the rest, masks included, are those of a full pass."""
    objective = mlm_objective(tokenizer)
    trainer = Trainer(objective, TokenShardData(shards, seed=1), objective.collate, TrainConfig(batch_size=2),
                      tmp_path, save_encoder)
    torch.manual_seed(0)
    full = list(trainer.accelerator.prepare_data_loader(trainer._epoch_loader(0)))
    torch.manual_seed(99)  # the global RNG state must not matter
    tail = list(trainer.accelerator.skip_first_batches(
        trainer.accelerator.prepare_data_loader(trainer._epoch_loader(0)), 3))
    assert len(tail) == len(full) - 3
    for expected, got in zip(full[3:], tail, strict=True):
        for key in expected:
            assert torch.equal(expected[key], got[key]), key
    other_epoch = next(iter(trainer.accelerator.prepare_data_loader(trainer._epoch_loader(1))))
    assert not torch.equal(other_epoch["labels"], full[0]["labels"])


# ---------------------------------------------------------------------------------------------- the batch


def test_the_batch_line_says_what_a_global_batch_makes_of_a_smaller_batch_size():
    """Issue 42.3: the seed recipe's global batch of 256 with --set train.batch_size=8 accumulates 32 batches."""
    config = TrainConfig(batch_size=8, global_batch_size=256)
    assert config.describe_batch(1) == (
        "batch: global 256 = 8 per process × 1 process × 32 accumulation steps (train.global_batch_size=256 over "
        "train.batch_size=8 accumulates 32 batches per optimizer step; to step on every batch, "
        "--set train.global_batch_size=8)")
    assert config.describe_batch(4).startswith("batch: global 256 = 8 per process × 4 processes × 8 accumulation steps")
    assert TrainConfig(batch_size=8, gradient_accumulation_steps=2).describe_batch(2) == \
        "batch: global 32 = 8 per process × 2 processes × 2 accumulation steps"  # asked for: nothing to point out
    assert TrainConfig(batch_size=8, global_batch_size=8).describe_batch(1) == \
        "batch: global 8 = 8 per process × 1 process × 1 accumulation step"
    # fine-tuning by epochs counts the optimizer steps a global batch makes: 64 examples, 8 a batch, 4 a step
    from seedr.training.finetune import steps_for_epochs

    assert steps_for_epochs(1, 64, TrainConfig(batch_size=8, global_batch_size=32), 1, drop_last=False) == 2


def test_a_run_states_its_batch_and_records_the_accumulation_it_used(tokenizer, shards, tmp_path, capfd):
    import yaml

    out_dir = tmp_path / "global"
    settings = {"max_steps": 4, "save_every": 2, "warmup_steps": 1, "gradient_accumulation_steps": 1,
                "global_batch_size": 4}
    with pytest.raises(KeyboardInterrupt):  # killed at step 3, after the checkpoint of step 2
        run(mlm_objective(tokenizer), shards, out_dir, callbacks=[StopAt(3)], **settings)
    stated = capfd.readouterr().err
    assert "batch: global 4 = 2 per process × 1 process × 2 accumulation steps (train.global_batch_size=4 over " \
           "train.batch_size=2 accumulates 2 batches per optimizer step; to step on every batch, --set " \
           "train.global_batch_size=2)" in stated
    recorded = yaml.safe_load((out_dir / "config.yaml").read_text())
    assert (recorded["global_batch_size"], recorded["gradient_accumulation_steps"]) == (4, 2)
    state = out_dir / "checkpoints" / "step-2" / "trainer_state.json"
    position = json.loads(state.read_text())
    assert position["settings"]["train.gradient_accumulation_steps"] == 2
    # a checkpoint of an older seedr recorded the 1 a global batch left in place: it resumes all the same
    position["settings"]["train.gradient_accumulation_steps"] = 1
    state.write_text(json.dumps(position))
    trainer, metrics = run(mlm_objective(tokenizer), shards, out_dir, resume=True, **settings)
    assert trainer.step == 4 and metrics["step"] == 4
    assert "4 = 2 per process × 1 process × 2 accumulation steps" in capfd.readouterr().err
    # a global batch that would change the accumulation is still another run
    with pytest.raises(ValueError, match=r"train.global_batch_size 4 → 8"):
        run(mlm_objective(tokenizer), shards, out_dir, resume=True, **{**settings, "global_batch_size": 8})


# ---------------------------------------------------------------------------------------------- early refusal


def fake_run(folder: Path, step: int = 2) -> Path:
    """A run folder holding a checkpoint, as far as the refusal looks."""
    (folder / "checkpoints" / f"step-{step}").mkdir(parents=True)
    (folder / "checkpoints" / f"step-{step}" / "trainer_state.json").write_text("{}")
    (folder / "config.yaml").write_text("{}\n")
    return folder


def test_check_run_folder_refuses_what_training_would_refuse(tmp_path):
    from seedr.io import DataError
    from seedr.io.run_folders import check_run_folder

    check_run_folder(tmp_path / "new", resume=False)  # nothing there: fine
    (tmp_path / "file").write_text("x")
    with pytest.raises(DataError, match="exists and is a file"):
        check_run_folder(tmp_path / "file", resume=False)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("x")
    with pytest.raises(DataError, match="not a training run folder"):
        check_run_folder(tmp_path / "mine", resume=True)
    run_dir = fake_run(tmp_path / "run")
    with pytest.raises(ValueError, match="already holds checkpoints of a run; resume it"):
        check_run_folder(run_dir, resume=False)
    check_run_folder(run_dir, resume=True)
    rounds = tmp_path / "rounds"  # a fine-tuning's static rounds (and few-shot seeds) keep theirs a level down
    fake_run(rounds / "round-1").joinpath("config.yaml").replace(rounds / "config.yaml")
    with pytest.raises(ValueError, match="already holds checkpoints"):
        check_run_folder(rounds, resume=False)


def test_pretrain_and_finetune_refuse_a_run_folder_before_reading_anything(tmp_path):
    """Issue 42.5: the refusal comes before the corpus is read or tokenised (here it does not exist)."""
    from seedr.config.settings import DataConfig, FinetuneConfig, ModelConfig, PretrainConfig
    from seedr.training.finetune import finetune
    from seedr.training.pretrain import pretrain

    config = PretrainConfig(model=ModelConfig(size="tiny", tokenizer="minilm"),
                            data=DataConfig(corpus=[str(tmp_path / "missing.jsonl")]))
    out_dir = fake_run(tmp_path / "pretrained")
    with pytest.raises(ValueError, match="already holds checkpoints"):
        pretrain(config, out_dir)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["pretrained"]  # no shards made beside it
    with pytest.raises(ValueError, match="is not a multiple of train.batch_size"):  # nor for a batch that cannot be
        pretrain(dataclasses.replace(config, train=TrainConfig(batch_size=3, global_batch_size=8)), tmp_path / "b")
    fine_tuned = tmp_path / "fine-tuned"
    fake_run(fine_tuned / "seed-1")
    (fine_tuned / "config.yaml").write_text("{}\n")
    with pytest.raises(ValueError, match="already holds checkpoints"):
        finetune(FinetuneConfig(train_data=str(tmp_path / "missing")), fine_tuned)


# ---------------------------------------------------------------------------------------------- processes

_WORKER = """
import json, sys, torch
from pathlib import Path
sys.path.insert(0, {tests!r})
from test_trainer import mlm_objective, run
from seedr.modeling.encoder import load_tokenizer
torch.set_num_threads(1)
shards, out_dir, max_steps = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
objective = mlm_objective(load_tokenizer("minilm"))
trainer, _ = run(objective, shards, out_dir, max_steps=max_steps, resume=True, save_every=2, keep_checkpoints=10,
                 log_every=1)
rank = trainer.accelerator.process_index
torch.save({{k: v.detach() for k, v in trainer.unwrapped_model().state_dict().items()}},
           out_dir / f"rank{{rank}}.pt")
(out_dir / f"rank{{rank}}.json").write_text(json.dumps({{"processes": trainer.accelerator.num_processes,
                                                        "steps": trainer.step}}))
"""


def _worker_script(tmp_path: Path) -> Path:
    script = tmp_path / "worker.py"
    script.write_text(_WORKER.format(tests=str(Path(__file__).parent)))
    return script


def _environment() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


def test_two_cpu_processes_agree_on_parameters(shards, tmp_path):
    """``torchrun --nproc_per_node 2`` (gloo on CPUs): both ranks end with the same parameters."""
    torchrun = Path(sys.executable).parent / "torchrun"
    result = subprocess.run(
        [str(torchrun), "--standalone", "--nproc_per_node", "2", str(_worker_script(tmp_path)),
         str(shards), str(tmp_path / "run"), "4"],
        check=False, capture_output=True, text=True, timeout=300, env=_environment())
    assert result.returncode == 0, result.stderr[-3000:]
    for rank in (0, 1):
        assert json.loads((tmp_path / "run" / f"rank{rank}.json").read_text()) == {"processes": 2, "steps": 4}
    rank0 = torch.load(tmp_path / "run" / "rank0.pt")
    rank1 = torch.load(tmp_path / "run" / "rank1.pt")
    for name in rank0:
        assert torch.equal(rank0[name], rank1[name]), name
    position = json.loads((tmp_path / "run" / "checkpoints" / "step-4" / "trainer_state.json").read_text())
    assert position["num_processes"] == 2
    assert (tmp_path / "run" / "checkpoints" / "step-4" / "state" / "random_states_1.pkl").exists()


@pytest.mark.slow
def test_sigkill_leaves_only_complete_checkpoints_and_resume_works(shards, tmp_path):
    """A real SIGKILL mid-run: every ``step-N`` left is complete, and resuming reaches the last step."""
    script, out_dir = _worker_script(tmp_path), tmp_path / "run"
    process = subprocess.Popen([sys.executable, str(script), str(shards), str(out_dir), "40"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_environment())
    deadline = time.time() + 240
    while time.time() < deadline and len(list_checkpoints(out_dir)) < 2:
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    checkpoints = list_checkpoints(out_dir)
    assert checkpoints, "no checkpoint was written before the kill"
    assert checkpoints[-1][0] < 40
    for _, folder in checkpoints:
        assert (folder / "encoder" / "model.safetensors").exists()
    assert (checkpoints[-1][1] / "state" / "optimizer.bin").exists()  # only the newest keeps it, to resume
    for folder in (out_dir / "checkpoints").iterdir():
        assert folder.name.startswith(".") or (folder / "trainer_state.json").exists(), folder
    result = subprocess.run([sys.executable, str(script), str(shards), str(out_dir), "40"],
                            check=False, capture_output=True, text=True, timeout=300, env=_environment())
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((out_dir / "rank0.json").read_text()) == {"processes": 1, "steps": 40}
    assert list_checkpoints(out_dir)[-1][0] == 40
    assert not list((out_dir / "checkpoints").glob(".step-*"))  # temporaries of the killed save are gone
