"""Reliability (issue 10): each case the issue reproduced, asserting the fixed behaviour — outputs that
never destroy another folder, fingerprinted models, locked outputs, a diverging run stopped, resume that
re-publishes and refuses changed settings, no unpickling from a run folder, and one clear line for every
kind of bad input. Tiny BERTs over MiniLM's vocabulary, real SciFact and Wikipedia text."""

from __future__ import annotations

import bz2
import dataclasses
import errno
import gzip
import itertools
import json
import lzma
import multiprocessing
import os
import random
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import bm25_experiment, first_lines, tiny_bert
from torch import nn
from typer.testing import CliRunner

from seedr.cli import app
from seedr.config.settings import TrainConfig
from seedr.data.corpus import read_corpus
from seedr.data.shards import TokenShardData, write_token_shards
from seedr.engine.checkpoint import list_checkpoints, read_extra_state
from seedr.engine.divergence import NonFiniteLossError
from seedr.engine.trainer import Trainer
from seedr.io import (
    LOCK_SUFFIX,
    DataError,
    atomic_directory,
    atomic_write,
    iter_jsonl,
    lock_path,
    output_lock,
    remove_stale_temporaries,
)
from seedr.modeling.encoder import model_fingerprint, save_encoder
from seedr.objectives.base import ObjectiveOutput
from seedr.objectives.mlm.objective import MaskedLanguageModel
from seedr.objectives.mlm.options import MLMConfig
from seedr.training.finetune import DEV_SETTINGS

runner = CliRunner()
SEQ_LEN = 64


def seedr(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


def assert_one_clear_line(result, *expected: str) -> None:
    """Exit 1, exactly one line starting ``error:`` that holds every ``expected`` text, no traceback."""
    assert result.exit_code == 1, result.output
    lines = error_lines(result.output)
    assert len(lines) == 1, result.output
    assert all(text in " ".join(result.output.split()) for text in expected), result.output
    assert "Traceback" not in result.output


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def save_tiny_model(tokenizer, folder: Path, seed: int = 0, fill: float | None = None) -> Path:
    """A random 2-layer, 32-wide BERT saved as a model folder ([CLS] pooling); ``fill`` sets every weight."""
    torch.manual_seed(seed)
    model = tiny_bert(tokenizer, intermediate_size=64, max_position_embeddings=SEQ_LEN)
    if fill is not None:
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.fill_(fill)
    return save_encoder(model, tokenizer, folder, max_seq_length=SEQ_LEN)


@pytest.fixture(scope="module")
def corpus(shared_data: Path, tmp_path_factory) -> Path:
    """The first 40 SciFact abstracts, verbatim (BEIR corpus.jsonl)."""
    return first_lines(shared_data / "scifact" / "corpus.jsonl", 40, tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def queries(shared_data: Path, tmp_path_factory) -> Path:
    return first_lines(shared_data / "scifact" / "queries.jsonl", 5, tmp_path_factory.mktemp("queries"))


@pytest.fixture(scope="module")
def model(tokenizer, tmp_path_factory) -> Path:
    return save_tiny_model(tokenizer, tmp_path_factory.mktemp("model") / "tiny")


@pytest.fixture(scope="module")
def embeddings(model: Path, corpus: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("embeddings") / "emb"
    result = seedr("encode", "--model", model, "--corpus", corpus, "--out", out, "--shard-size", 25)
    assert result.exit_code == 0, result.output
    return out


def encode(model: Path, corpus: Path, out: Path, *extra: object):
    return seedr("encode", "--model", model, "--corpus", corpus, "--out", out, "--shard-size", 20, *extra)


# ------------------------------------------------------------------ 1. outputs never replace another folder


def test_index_refuses_to_replace_its_input_or_another_kind_of_folder(embeddings: Path, tmp_path: Path) -> None:
    before = snapshot(embeddings)
    result = seedr("index", "--embeddings", embeddings, "--out", embeddings)
    assert_one_clear_line(result, "an input of this command", "write the output elsewhere")
    assert snapshot(embeddings) == before

    run = tmp_path / "finetune-run"  # what a training run folder holds
    for name in ("config.yaml", "run.json", "metrics.jsonl", "encoder/config.json",
                 "checkpoints/step-2/trainer_state.json"):
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).write_text("{}")
    result = seedr("index", "--embeddings", embeddings, "--out", run)
    assert_one_clear_line(result, "training run folder")
    assert sorted(snapshot(run)) == sorted(["config.yaml", "run.json", "metrics.jsonl", "encoder/config.json",
                                            "checkpoints/step-2/trainer_state.json"])

    index = tmp_path / "index"
    assert seedr("index", "--embeddings", embeddings, "--out", index).exit_code == 0
    assert_one_clear_line(seedr("index", "--embeddings", embeddings, "--out", index), "--overwrite")
    result = seedr("index", "--embeddings", embeddings, "--out", index, "--overwrite", "--factory", "HNSW8")
    assert result.exit_code == 0, result.output
    assert json.loads((index / "index.json").read_text())["factory"] == "HNSW8"

    # every other stage's --out: another kind is refused before anything is written
    assert_one_clear_line(seedr("encode", "--model", "x", "--corpus", "y", "--out", index), "faiss index folder")
    assert_one_clear_line(seedr("prepare", "--out", embeddings), "embeddings folder")
    assert_one_clear_line(seedr("pretrain", "--out", index, "--size", "tiny"), "faiss index folder")
    assert_one_clear_line(seedr("finetune", "--out", embeddings, "--train", "x"), "embeddings folder")
    assert snapshot(embeddings) == before


def test_bm25_index_output_needs_overwrite_and_is_never_another_folder(embeddings: Path, corpus: Path,
                                                                       queries: Path, tmp_path: Path) -> None:
    before = snapshot(embeddings)
    search = ("search", "--bm25", "--corpus", corpus, "--queries", queries, "--out", tmp_path / "bm25.trec")
    assert_one_clear_line(seedr(*search, "--bm25-index", embeddings), "embeddings folder")
    assert snapshot(embeddings) == before and not (tmp_path / "bm25.trec").exists()
    assert seedr(*search, "--bm25-index", tmp_path / "bm25").exit_code == 0
    assert_one_clear_line(seedr(*search, "--bm25-index", tmp_path / "bm25"), "--overwrite")
    assert seedr(*search, "--bm25-index", tmp_path / "bm25", "--overwrite").exit_code == 0


# ------------------------------------------------------------------ 2, 3. the model's fingerprint


def test_encode_refuses_shards_of_a_changed_model_or_precision(tokenizer, corpus: Path, tmp_path: Path) -> None:
    model = save_tiny_model(tokenizer, tmp_path / "run" / "encoder", seed=1)
    out = tmp_path / "emb"
    assert encode(model, corpus, out, "--compute-dtype", "float32").exit_code == 0
    settings = json.loads((out / "settings.json").read_text())
    assert settings["encoder"]["fingerprint"] == model_fingerprint(model)
    assert settings["encoder"]["model"] == str(model.resolve()) and settings["encoder"]["compute_dtype"] == "float32"
    assert_one_clear_line(encode(model, corpus, out, "--compute-dtype", "bfloat16"), "encoder.compute_dtype")
    save_tiny_model(tokenizer, model, seed=2)  # re-trained into the same run folder
    before = snapshot(out)
    assert_one_clear_line(encode(model, corpus, out, "--compute-dtype", "float32"), "encoder.fingerprint")
    assert snapshot(out) == before


def test_search_finds_the_recorded_model_from_any_directory_and_refuses_a_changed_one(
        tokenizer, corpus: Path, queries: Path, tmp_path: Path, monkeypatch) -> None:
    save_tiny_model(tokenizer, tmp_path / "runs" / "A" / "encoder", seed=3)
    monkeypatch.chdir(tmp_path)
    assert encode(Path("runs/A/encoder"), corpus, Path("emb")).exit_code == 0
    assert seedr("index", "--embeddings", "emb", "--out", "index").exit_code == 0
    recorded = json.loads((tmp_path / "index" / "index.json").read_text())["encoder"]
    assert recorded["model"] == str((tmp_path / "runs" / "A" / "encoder").resolve())
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "runs" / "A").mkdir(parents=True)
    save_tiny_model(tokenizer, elsewhere / "runs" / "A" / "encoder", seed=4)  # the same relative path, another model
    monkeypatch.chdir(elsewhere)
    result = seedr("search", "--index", tmp_path / "index", "--queries", queries, "--out", "run.trec", "--k", 5)
    assert result.exit_code == 0, result.output
    result = seedr("search", "--index", tmp_path / "index", "--queries", queries, "--out", "other.trec",
                   "--model", "runs/A/encoder")
    assert_one_clear_line(result, "fingerprint")
    save_tiny_model(tokenizer, tmp_path / "runs" / "A" / "encoder", seed=5)  # re-trained in place
    result = seedr("search", "--index", tmp_path / "index", "--queries", queries, "--out", "again.trec")
    assert_one_clear_line(result, "fingerprint", "encode and index the corpus again")
    assert not (elsewhere / "other.trec").exists() and not (elsewhere / "again.trec").exists()


# ------------------------------------------------------------------ 4. one run per output at a time


def test_an_output_in_use_is_refused_naming_its_holder(model: Path, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "emb"
    with output_lock(out) as lock:
        holder = json.loads(lock.read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
        assert_one_clear_line(encode(model, corpus, out), f"in use by process {os.getpid()}")
        with pytest.raises(DataError, match="in use by process"):
            with output_lock(out):
                pass
    assert not out.exists() and not lock_path(out).exists()


def test_a_stale_lock_is_taken_over(model: Path, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "emb"
    lock_path(out).write_text(json.dumps({"pid": dead_pid(), "host": socket.gethostname()}))
    result = encode(model, corpus, out)
    assert result.exit_code == 0, result.output
    assert not lock_path(out).exists() and (out / "manifest.json").exists()


@pytest.mark.parametrize("call", ["pwrite", "open"])
def test_a_full_disk_while_taking_the_lock_names_the_lock_and_leaves_nothing(model: Path, corpus: Path,
                                                                             tmp_path: Path, monkeypatch,
                                                                             call: str) -> None:
    """#65 item 10: a disk that fills while the lock's record is written (or its file made) was a bare
    "[Errno 28] No space left on device", naming no file; now one line names the lock, and neither it nor
    the folders made for it are left."""
    real = getattr(os, call)

    def full(*args, **kwargs):
        if call == "pwrite" or str(args[0]).endswith(LOCK_SUFFIX):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(os, call, full)
    out = tmp_path / "new" / "emb"
    result = encode(model, corpus, out)
    monkeypatch.undo()
    assert_one_clear_line(result, str(lock_path(out)), "no space left on the device")
    assert list(tmp_path.iterdir()) == []


def hold_briefly(out: Path, barrier, holders, most, taken) -> None:
    """One taker of ``test_concurrent_takers_never_hold_one_output_at_once``: start with the others, and
    while holding the lock count how many hold it at once. Removing a lock file is slowed down, as on a
    loaded machine: a pid file's takers, each judging a lock stale and removing it, were then overtaken
    in the first round (and in one round of a hundred without it)."""
    unlink = os.unlink

    def slow_unlink(path, *args, **kwargs):
        if str(path).endswith(LOCK_SUFFIX):
            time.sleep(0.002)
        unlink(path, *args, **kwargs)

    os.unlink = slow_unlink  # in this forked taker only
    barrier.wait()
    try:
        with output_lock(out):
            with holders.get_lock():
                holders.value += 1
                most.value = max(most.value, holders.value)
                taken.value += 1
            time.sleep(0.01)
            with holders.get_lock():
                holders.value -= 1
    except DataError:
        pass  # refused: another holds it


def test_concurrent_takers_never_hold_one_output_at_once(tmp_path: Path) -> None:
    """Issue 58.5: takers started together, on a free output or on one whose lock a dead process left
    (where two takers of the old pid file could both take it over), never hold it two at once."""
    fork = multiprocessing.get_context("fork")
    out = tmp_path / "emb"
    for round in range(8):
        if round % 4:  # three rounds in four start from a stale lock
            lock_path(out).write_text(json.dumps({"pid": dead_pid(), "host": socket.gethostname()}))
        barrier = fork.Barrier(8)
        holders, most, taken = fork.Value("i", 0), fork.Value("i", 0), fork.Value("i", 0)
        counts = (holders, most, taken)
        takers = [fork.Process(target=hold_briefly, args=(out, barrier, *counts)) for _ in range(8)]
        for taker in takers:
            taker.start()
        for taker in takers:
            taker.join(30)
        assert [taker.exitcode for taker in takers] == [0] * 8
        assert taken.value >= 1 and most.value == 1, f"round {round}: {most.value} held it at once"
    assert not lock_path(out).exists()


# ------------------------------------------------------------------ 5. a diverging run


class NaNFrom(nn.Module):
    """An objective whose loss turns NaN from its ``call``-th forward pass on (one part of it)."""

    def __init__(self, objective: MaskedLanguageModel, call: int) -> None:
        super().__init__()
        self.objective, self.call, self.calls = objective, call, 0

    def forward(self, **batch):
        output = self.objective(**batch)
        if not self.training:  # the trainer's check of the weights before a checkpoint: they are good
            return output
        self.calls += 1
        if self.calls < self.call:
            return output
        broken = output.parts["mlm"] * float("nan")
        return ObjectiveOutput(loss=broken, parts={"mlm": broken})


@pytest.fixture(scope="module")
def shards(tmp_path_factory, wiki_shard, tokenizer) -> Path:
    """The first 64 tokens of the first 24 real articles of wiki shard 00."""
    directory = tmp_path_factory.mktemp("shards") / "shards"
    write_token_shards(itertools.islice(read_corpus(wiki_shard), 24), tokenizer, directory,
                       max_seq_length=SEQ_LEN, packing="first_block", progress=False)
    return directory


def trainer(module: nn.Module, shards: Path, out: Path, run_settings: dict | None = None,
            safe_to_change: tuple[str, ...] = (), **settings) -> Trainer:
    """A Trainer of ``module``; ``run_settings``: the run's own settings beside ``train`` (as a fine-tuning
    run's dev_every), recorded in its checkpoints."""
    config = TrainConfig(**{"max_steps": 4, "batch_size": 2, "warmup_steps": 1, "log_every": 1, "save_every": 2,
                            "seed": 7, **settings})
    objective = module.objective if isinstance(module, NaNFrom) else module

    def save_product(unwrapped, directory):
        objective.save_encoder(directory, max_seq_length=SEQ_LEN)

    run_config = {"train": dataclasses.asdict(config), **run_settings} if run_settings else None
    return Trainer(module, TokenShardData(shards, seed=7), objective.collate, config, out, save_product,
                   run_config=run_config, safe_to_change=safe_to_change)


def mlm(tokenizer, seed: int = 0) -> MaskedLanguageModel:
    torch.manual_seed(seed)
    return MaskedLanguageModel(tiny_bert(tokenizer, intermediate_size=64, max_position_embeddings=SEQ_LEN),
                               tokenizer, MLMConfig())


def test_a_non_finite_loss_stops_training_and_keeps_the_last_good_product(tokenizer, shards, tmp_path) -> None:
    out = tmp_path / "run"
    with pytest.raises(NonFiniteLossError, match=r"diverged at step 3: the loss is nan \(not finite: mlm\)"):
        trainer(NaNFrom(mlm(tokenizer), call=3), shards, out).train()
    assert [step for step, _ in list_checkpoints(out)] == [2]
    assert model_fingerprint(out / "encoder") == model_fingerprint(out / "checkpoints" / "step-2" / "encoder")
    from safetensors.torch import load_file

    assert all(torch.isfinite(t).all() for t in load_file(out / "encoder" / "model.safetensors").values())
    assert issubclass(NonFiniteLossError, ValueError)  # the stages' clear_errors: one line, exit 1


def test_the_issues_diverging_run_exits_non_zero_with_a_finite_product(wiki_shard, tmp_path) -> None:
    out = tmp_path / "runs" / "diverged"  # the issue's case: train.learning_rate=1e3
    result = seedr("pretrain", "--objective", "mlm", "--corpus", wiki_shard, "--size", "tiny", "--tokenizer", "minilm",
                   *(item for setting in ("model.hidden_size=32", "model.num_attention_heads=2",
                                          "model.intermediate_size=64", "data.max_documents=100",
                                          "data.max_seq_length=64", "train.max_steps=40", "train.batch_size=4",
                                          "train.save_every=2", "train.learning_rate=1e3",
                                          "train.warmup_ratio=null")  # as the issue ran it: no warm-up
                     for item in ("--set", setting)), "--out", out)
    assert_one_clear_line(result, "training diverged at step", "stopped before updating the weights")
    assert result.output.splitlines()[-1].startswith("error:")  # on a line of its own, after the progress bar
    from safetensors.torch import load_file

    (step, newest), *_ = reversed(list_checkpoints(out))
    assert step < 40 and model_fingerprint(out / "encoder") == model_fingerprint(newest / "encoder")
    assert all(torch.isfinite(t).all() for t in load_file(out / "encoder" / "model.safetensors").values())


def test_nan_vectors_are_refused_by_encode_and_index(tokenizer, corpus, embeddings, tmp_path) -> None:
    broken = save_tiny_model(tokenizer, tmp_path / "broken", fill=float("nan"))
    result = encode(broken, corpus, tmp_path / "emb")
    assert_one_clear_line(result, "non-finite vectors")
    assert not (tmp_path / "emb").exists()
    assert result.output.splitlines()[-1].startswith("error:")  # not glued to the progress bar

    poisoned = tmp_path / "poisoned"
    shutil.copytree(embeddings, poisoned)
    vectors = np.load(poisoned / "embeddings-00000.npy")
    vectors[3] = np.nan
    np.save(poisoned / "embeddings-00000.npy", vectors)
    assert_one_clear_line(seedr("index", "--embeddings", poisoned, "--out", tmp_path / "index"), "not finite")
    assert not (tmp_path / "index").exists()


def test_evaluate_refuses_an_empty_run(shared_data: Path, tmp_path: Path) -> None:
    (tmp_path / "empty.trec").write_text("")
    result = seedr("evaluate", tmp_path / "empty.trec", "--qrels", shared_data / "scifact" / "qrels" / "test.tsv")
    assert_one_clear_line(result, "empty.trec", "empty run")


# ------------------------------------------------------------------ 6, 7, 8, 10. resume


@pytest.fixture(scope="module")
def finished(tokenizer, shards, tmp_path_factory) -> Path:
    """A finished 4-step run with checkpoints at steps 2 and 4."""
    out = tmp_path_factory.mktemp("finished") / "run"
    trainer(mlm(tokenizer), shards, out).train()
    return out


def copy_run(finished: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(finished, out)
    return out


def test_resume_republishes_a_missing_or_older_product(tokenizer, shards, finished, tmp_path) -> None:
    newest = model_fingerprint(finished / "checkpoints" / "step-4" / "encoder")
    out = copy_run(finished, tmp_path)
    shutil.rmtree(out / "encoder")  # killed between the final checkpoint and the product
    trainer(mlm(tokenizer), shards, out).train(resume=True)
    assert model_fingerprint(out / "encoder") == newest
    shutil.rmtree(out / "encoder")
    shutil.copytree(out / "checkpoints" / "step-2" / "encoder", out / "encoder")  # an older product
    trainer(mlm(tokenizer), shards, out).train(resume=True)
    assert model_fingerprint(out / "encoder") == newest


def test_a_kill_during_the_final_publish_is_repaired(tokenizer, shards, finished, tmp_path, monkeypatch) -> None:
    out = copy_run(finished, tmp_path)  # the product stale: the kill came before the final publish
    shutil.rmtree(out / "encoder")
    shutil.copytree(out / "checkpoints" / "step-2" / "encoder", out / "encoder")
    real_replace = os.replace

    def killed_midway(source, target):  # the old product moved aside, the new one not yet in
        if Path(target).name == ".encoder.old":
            real_replace(source, target)
            raise KeyboardInterrupt("killed")
        return real_replace(source, target)

    monkeypatch.setattr(os, "replace", killed_midway)
    with pytest.raises(KeyboardInterrupt):
        trainer(mlm(tokenizer), shards, out).train(resume=True)
    monkeypatch.setattr(os, "replace", real_replace)
    assert not (out / "encoder").exists()
    trainer(mlm(tokenizer), shards, out).train(resume=True)
    assert model_fingerprint(out / "encoder") == model_fingerprint(finished / "encoder")
    assert not (out / ".encoder.old").exists()


def _renames_of_a_run(tokenizer, shards, out: Path, monkeypatch) -> list[str]:
    """The targets of every ``os.replace`` a whole run makes: where a kill could leave it half-updated."""
    real_replace, calls = os.replace, []

    def counting(source, target):
        calls.append(str(target))
        return real_replace(source, target)

    monkeypatch.setattr(os, "replace", counting)
    trainer(mlm(tokenizer), shards, out).train()
    monkeypatch.setattr(os, "replace", real_replace)
    return calls


def _stop_at_rename_then_resume(tokenizer, shards, finished: Path, out: Path, monkeypatch, chosen: int,
                                after: bool) -> None:
    real_replace, seen = os.replace, []

    def stopping(source, target):
        seen.append(target)
        if len(seen) - 1 == chosen:
            if after:
                real_replace(source, target)
            raise KeyboardInterrupt("killed")
        return real_replace(source, target)

    monkeypatch.setattr(os, "replace", stopping)
    with pytest.raises(KeyboardInterrupt):
        trainer(mlm(tokenizer), shards, out).train()
    monkeypatch.setattr(os, "replace", real_replace)
    trainer(mlm(tokenizer), shards, out).train(resume=True)
    from safetensors.torch import load_file

    expected = load_file(finished / "encoder" / "model.safetensors")
    resumed = load_file(out / "encoder" / "model.safetensors")
    assert all(torch.equal(expected[name], resumed[name]) for name in expected)
    assert [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()] == [1, 2, 3, 4]


def test_training_stopped_at_a_random_rename_resumes_exactly(tokenizer, shards, finished, tmp_path,
                                                             monkeypatch) -> None:
    """A stop just before or after a random rename of the run (checkpoint folders, the product, metrics,
    config), then a resume: the product of the uninterrupted run."""
    renames = _renames_of_a_run(tokenizer, shards, tmp_path / "counted", monkeypatch)
    rng = random.Random(13)  # a fixed stop, so a failure reruns as it failed; the slow test below tries every one
    chosen, after = rng.randrange(len(renames)), rng.random() < 0.5
    print(f"stopped {'after' if after else 'before'} rename {chosen + 1} of {len(renames)}: {renames[chosen]}")
    _stop_at_rename_then_resume(tokenizer, shards, finished, tmp_path / "run", monkeypatch, chosen, after)


@pytest.mark.slow
def test_training_stopped_at_every_rename_resumes_exactly(tokenizer, shards, finished, tmp_path,
                                                          monkeypatch) -> None:
    renames = _renames_of_a_run(tokenizer, shards, tmp_path / "counted", monkeypatch)
    for chosen, after in itertools.product(range(len(renames)), (False, True)):
        _stop_at_rename_then_resume(tokenizer, shards, finished, tmp_path / f"run-{chosen}-{after}", monkeypatch,
                                    chosen, after)
    print(f"{2 * len(renames)} stops tried")


def test_resume_refuses_changed_settings_but_safe_ones(tokenizer, shards, finished, tmp_path) -> None:
    out = copy_run(finished, tmp_path)
    with pytest.raises(ValueError, match=r"train\.learning_rate 0\.0001 → 0\.001.*train\.max_steps 4 → 6"):
        trainer(mlm(tokenizer), shards, out, learning_rate=1e-3, max_steps=6).train(resume=True)
    trainer(mlm(tokenizer), shards, out, log_every=3, save_every=4, keep_checkpoints=3).train(resume=True)


def test_a_run_names_its_own_settings_that_a_resume_may_change(tokenizer, shards, tmp_path) -> None:
    """The engine knows only its own safe settings (logging, saving); a run adds its own, as fine-tuning
    does with its development evaluation's (``seedr.training.finetune.DEV_SETTINGS``)."""
    out = tmp_path / "run"
    trainer(mlm(tokenizer), shards, out, run_settings={"dev_every": 2}).train()
    with pytest.raises(ValueError, match=r"dev_every 2 → 3"):
        trainer(mlm(tokenizer), shards, out, run_settings={"dev_every": 3}).train(resume=True)
    trainer(mlm(tokenizer), shards, out, run_settings={"dev_every": 3},
            safe_to_change=tuple(DEV_SETTINGS)).train(resume=True)


def test_a_crafted_pickle_in_a_run_folder_is_never_run(tokenizer, shards, finished, tmp_path) -> None:
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    out = copy_run(finished, tmp_path)
    checkpoint = out / "checkpoints" / "step-4"
    (checkpoint / "extra_state.json").unlink()
    torch.save({"data": Exploit()}, checkpoint / "extra_state.pt")  # the format older checkpoints used
    with pytest.raises(DataError, match="refused"):
        read_extra_state(checkpoint)
    assert not marker.exists()

    out = copy_run(finished, tmp_path / "second")
    torch.save({"state": Exploit()}, out / "checkpoints" / "step-4" / "state" / "optimizer.bin")
    with pytest.raises(DataError, match="cannot be restored"):
        trainer(mlm(tokenizer), shards, out).train(resume=True)
    assert not marker.exists()

    # Accelerate would take a refused RNG pickle for "no RNG state" and resume inexactly: it is refused
    out = copy_run(finished, tmp_path / "third")
    for checkpoint in ("step-2", "step-4"):
        torch.save({"random_state": Exploit()}, out / "checkpoints" / checkpoint / "state" / "random_states_0.pkl")
    with pytest.raises(DataError, match="none of its 2 checkpoints can be read"):
        trainer(mlm(tokenizer), shards, out).train(resume=True)
    assert not marker.exists()


def test_a_damaged_newest_checkpoint_falls_back_to_the_previous_one(tokenizer, shards, finished, tmp_path,
                                                                     capsys) -> None:
    out = copy_run(finished, tmp_path)
    weights = out / "checkpoints" / "step-4" / "state" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    trainer(mlm(tokenizer), shards, out).train(resume=True)  # retrains steps 3 and 4 from step 2
    printed = capsys.readouterr().out
    assert "skipping a damaged checkpoint" in printed
    # only the newest checkpoint keeps AdamW's moments (issue 13): step 2 restores all but them, and says so
    assert "optimizer's moments start afresh" in printed
    from safetensors.torch import load_file

    expected = load_file(finished / "encoder" / "model.safetensors")
    resumed = load_file(out / "encoder" / "model.safetensors")
    assert expected.keys() == resumed.keys()
    assert all(torch.isfinite(resumed[name]).all() for name in resumed)
    from seedr.engine.checkpoint import read_position

    assert read_position(out / "checkpoints" / "step-4")["step"] == 4


def test_saved_weights_have_the_mode_of_their_siblings(finished: Path) -> None:
    modes = {path.name: path.stat().st_mode & 0o777 for path in (finished / "encoder").iterdir() if path.is_file()}
    assert modes["model.safetensors"] == modes["config.json"] == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ------------------------------------------------------------------ 9. bad input: one line, nothing left


def compressed(tmp_path: Path, corpus: Path, suffix: str, damage: str) -> Path:
    data = corpus.read_bytes()
    packed = {".gz": gzip.compress, ".xz": lzma.compress, ".bz2": bz2.compress}[suffix](data)
    packed = packed[: len(packed) // 2] if damage == "truncated" else b"plain text, not compressed\n" * 3
    path = tmp_path / f"corpus.jsonl{suffix}"
    path.write_bytes(packed)
    return path


@pytest.mark.parametrize("suffix", [".gz", ".xz", ".bz2"])
@pytest.mark.parametrize("damage", ["truncated", "not compressed"])
def test_damaged_compressed_corpus_is_one_line(model: Path, corpus: Path, tmp_path: Path, suffix, damage) -> None:
    path = compressed(tmp_path, corpus, suffix, damage)
    result = encode(model, path, tmp_path / "emb")
    assert_one_clear_line(result, path.name, f"truncated or corrupt {suffix} file")
    assert not (tmp_path / "emb").exists()


def test_bad_files_given_to_the_stages_are_one_line_each(model, corpus, queries, embeddings, tmp_path) -> None:
    index = tmp_path / "index"
    assert seedr("index", "--embeddings", embeddings, "--out", index).exit_code == 0
    folder = tmp_path / "a-folder"
    folder.mkdir()
    broken_index = tmp_path / "broken-index"
    shutil.copytree(index, broken_index)
    (broken_index / "index.faiss").write_bytes(b"\x00garbage" * 10)
    broken_model = tmp_path / "broken-model"
    shutil.copytree(model, broken_model)
    (broken_model / "model.safetensors").write_bytes((model / "model.safetensors").read_bytes()[:500])

    def damaged_embeddings(name: str, change) -> Path:
        path = tmp_path / name
        shutil.copytree(embeddings, path)
        change(path)
        return path

    bad_manifest = damaged_embeddings("bad-manifest", lambda p: (p / "manifest.json").write_text(
        json.dumps({**json.loads((p / "manifest.json").read_text()), "shards": 3})))
    truncated_npy = damaged_embeddings("truncated-npy", lambda p: (p / "embeddings-00001.npy").write_bytes(
        (p / "embeddings-00001.npy").read_bytes()[:300]))
    duplicate_ids = damaged_embeddings("duplicate-ids", lambda p: (p / "ids-00001.txt").write_text(
        (p / "ids-00000.txt").read_text().splitlines()[0] + "\n"
        + "\n".join((p / "ids-00001.txt").read_text().splitlines()[1:]) + "\n"))
    out = tmp_path / "out"
    cases = [
        # a folder is a valid input (its shards); an empty one is named as such
        (("encode", "--model", model, "--corpus", folder, "--out", out), ["a-folder", "holds no corpus files"]),
        (("search", "--bm25", "--corpus", corpus, "--queries", folder, "--out", out), ["a-folder", "holds no"]),
        (("evaluate", folder, "--qrels", folder), ["a-folder", "is a folder"]),
        (("search", "--index", broken_index, "--queries", queries, "--out", out), ["index.faiss", "not a readable"]),
        (("encode", "--model", broken_model, "--corpus", corpus, "--out", out), ["model.safetensors", "damaged"]),
        (("index", "--embeddings", embeddings, "--out", out, "--factory", "IVF64,Flat"),
         ["needs at least 64 training vectors"]),
        (("index", "--embeddings", bad_manifest, "--out", out), ["manifest.json", "field 'shards'"]),
        (("index", "--embeddings", truncated_npy, "--out", out), ["embeddings-00001.npy", "not a complete .npy"]),
        (("index", "--embeddings", duplicate_ids, "--out", out), ["ids-00001.txt, line 1", "duplicate id"]),
        (("pretrain", "--out", out, "--size", "tiny", "--set", "train.max_steps=abc"), ["train.max_steps", "'abc'"]),
        (("pretrain", "--out", out, "--size", "tiny", "--set", "train.seed=true"), ["train.seed", "not an integer"]),
        (("pretrain", "--out", out, "--size", "tiny", "--tokenizer", "minilm", "--set",
          "objective.mask_probability=1.5"), ["objective.mask_probability"]),
    ]
    for arguments, expected in cases:
        result = seedr(*arguments)
        assert_one_clear_line(result, *expected)
        assert not out.exists(), arguments
    refused_by_the_parser = [  # with their range in --help (tests/test_cli.py walks every option)
        ("encode", "--model", model, "--corpus", corpus, "--out", out, "--shard-size", 0),
        ("encode", "--model", model, "--corpus", corpus, "--out", out, "--batch-size", 0),
        ("encode", "--model", model, "--corpus", corpus, "--out", out, "--limit", -5),
        ("search", "--index", index, "--queries", queries, "--out", out, "--k", -3),
        ("search", "--index", index, "--queries", queries, "--out", out, "--k", 0),
    ]
    for arguments in refused_by_the_parser:
        result = seedr(*arguments)
        assert result.exit_code == 2 and f"Invalid value for '{arguments[-2]}'" in result.output, result.output
        assert not out.exists(), arguments
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".")]  # no lock, no temporary


def test_a_failed_encode_leaves_nothing_that_blocks_the_corrected_command(model, corpus, tmp_path) -> None:
    lines = corpus.read_text().splitlines()
    bad = tmp_path / "corpus.jsonl"
    bad.write_text("\n".join(lines[:30] + ['{"_id": "x", "text": '] + lines[30:]) + "\n")
    assert_one_clear_line(encode(model, bad, tmp_path / "emb", "--max-length", 32), "corpus.jsonl, line 31")
    assert not (tmp_path / "emb").exists()
    bad.write_text("\n".join(lines) + "\n")
    assert encode(model, bad, tmp_path / "emb").exit_code == 0  # other settings, the same folder


# ------------------------------------------------------------------ 10. smaller


def test_temporaries_of_killed_processes_are_cleaned(tmp_path: Path) -> None:
    target = tmp_path / "prepared"
    host = socket.gethostname()
    dead = tmp_path / f".prepared.{dead_pid()}@{host}.k1ll3d00.tmp"
    alive = tmp_path / f".prepared.{os.getpid()}@{host}.st1ll0n0.tmp"
    other_host = tmp_path / f".prepared.{dead_pid()}@another-host.example.qq.tmp"
    for folder in (dead, alive, other_host):
        folder.mkdir()
    dead_file = tmp_path / f".prepared.{dead_pid()}@{host}.abcdefgh.tmp"
    dead_file.write_text("half")
    with atomic_directory(target) as building:
        (building / "corpus.jsonl").write_text("{}\n")
    assert not dead.exists() and not dead_file.exists()
    assert alive.exists() and other_host.exists()  # still being written, or unknown: kept
    assert remove_stale_temporaries(target) == []


def test_a_failed_plot_leaves_no_half_file(tmp_path: Path, monkeypatch) -> None:
    import matplotlib.figure

    from seedr.reporting.report import RunSummary, plot_history

    def fail_midway(self, stream, **options):
        stream.write(b"\x89PNG half")
        raise OSError("disk full")

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", fail_midway)
    run = RunSummary(name="r", path=tmp_path, config={}, history=[{"step": 1, "loss": 2.0}])
    with pytest.raises(OSError):
        plot_history([run], tmp_path)
    assert [path.name for path in tmp_path.iterdir()] == []


def test_json_errors_read_well(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"_id": "1", "text": "unterminated}\n')
    with pytest.raises(DataError) as info:
        list(iter_jsonl(path))
    assert "at at" not in str(info.value) and "Unterminated string starting at" in str(info.value)


def test_atomic_write_refuses_a_folder(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="is a folder"):
        with atomic_write(tmp_path):
            pass


# ------------------------------------------------------------------ issue 25: locks and --overwrite through symlinks


def test_a_symlink_to_an_output_takes_the_outputs_own_lock(model: Path, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "emb3"
    out.mkdir()
    alias = tmp_path / "alias3"
    alias.symlink_to("emb3")
    (tmp_path / "linked-parent").symlink_to(tmp_path)
    assert lock_path(alias) == lock_path(out) == lock_path(tmp_path / "linked-parent" / "emb3")
    with output_lock(out):  # the issue's race: encode --out emb3 running, encode --out alias3 started
        assert_one_clear_line(encode(model, corpus, alias, "--pooling", "mean"), f"in use by process {os.getpid()}")
    assert not any(out.iterdir())
    result = encode(model, corpus, alias, "--pooling", "mean")
    assert result.exit_code == 0, result.output
    assert not lock_path(out).exists() and not lock_path(alias).with_name(".alias3.lock").exists()


def test_the_root_folder_as_out_is_one_plain_line(model: Path, corpus: Path) -> None:
    result = encode(model, corpus, Path("/"))
    assert_one_clear_line(result, "/: is the root of the file system")
    assert "PosixPath" not in result.output and "empty name" not in result.output


def test_overwrite_through_a_symlink_replaces_where_it_points_and_never_wedges(embeddings: Path,
                                                                              tmp_path: Path) -> None:
    real = tmp_path / "idx1"
    assert seedr("index", "--embeddings", embeddings, "--out", real).exit_code == 0
    link = tmp_path / "idxlink"
    link.symlink_to("idx1")
    for factory in ("HNSW8", "Flat", "HNSW8"):  # the issue's wedge came on the second run
        result = seedr("index", "--embeddings", embeddings, "--out", link, "--overwrite", "--factory", factory)
        assert result.exit_code == 0, result.output
        assert link.is_symlink() and json.loads((real / "index.json").read_text())["factory"] == factory
    assert sorted(path.name for path in tmp_path.iterdir()) == ["idx1", "idxlink"]

    # the state older versions left: the link replaced by a folder, and `.wedged.old` a link to the real index
    wedged = tmp_path / "wedged"
    shutil.copytree(real, wedged)
    (tmp_path / ".wedged.old").symlink_to("idx1")
    result = seedr("index", "--embeddings", embeddings, "--out", wedged, "--overwrite")
    assert result.exit_code == 0, result.output
    assert not (tmp_path / ".wedged.old").exists() and not (tmp_path / ".wedged.old").is_symlink()
    assert json.loads((real / "index.json").read_text())["factory"] == "HNSW8"  # what the link pointed to: kept


def test_overwrite_never_deletes_a_file_seedr_did_not_write(embeddings: Path, corpus: Path, queries: Path,
                                                            tmp_path: Path) -> None:
    index = tmp_path / "index"
    assert seedr("index", "--embeddings", embeddings, "--out", index).exit_code == 0
    (index / "notes.txt").write_text("my notes on this index")
    before = snapshot(index)
    result = seedr("index", "--embeddings", embeddings, "--out", index, "--overwrite", "--factory", "HNSW8")
    assert_one_clear_line(result, "notes.txt", "which seedr did not write", "move it out")
    assert snapshot(index) == before

    search = ("search", "--bm25", "--corpus", corpus, "--queries", queries, "--out", tmp_path / "bm25.trec",
              "--bm25-index", tmp_path / "bm25")
    assert seedr(*search).exit_code == 0
    assert seedr(*search, "--overwrite").exit_code == 0  # every file bm25s writes is known
    (tmp_path / "bm25" / "mine").mkdir()
    assert_one_clear_line(seedr(*search, "--overwrite"), "mine", "which seedr did not write")
    assert (tmp_path / "bm25" / "mine").is_dir()


# ------------------------------------------------------------------ issue 25: experiments take locks


def experiment_file(folder: Path, name: str, metrics: str) -> Path:
    path = folder / "experiments" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(bm25_experiment("BM25 on a slice of SciFact", metrics,
                                    "  bm25: {retrieve: bm25}\n  bm25_again: {retrieve: bm25}\n", resamples=50))
    return path


def test_experiments_lock_their_report_and_each_step_they_compute(scifact_slice: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    first = experiment_file(tmp_path, "first", "nDCG@10")
    data = ("--set", f"data={scifact_slice}")
    with output_lock(work / "reports" / "first"):  # the same experiment already running into this work folder
        assert_one_clear_line(seedr("experiment", first, "--out", work, *data), f"in use by process {os.getpid()}")
    result = seedr("experiment", first, "--out", work, *data)
    assert result.exit_code == 0, result.output
    (retrieval,) = (work / "retrieval").iterdir()  # the two conditions share their one retrieval
    (retrieval / "run.trec").unlink()  # as if another experiment were computing it now
    second = experiment_file(tmp_path, "second", "nDCG@10")  # another experiment, the same retrieval
    third = experiment_file(tmp_path, "third", "R@10")  # another experiment, another retrieval
    with output_lock(retrieval):
        assert_one_clear_line(seedr("experiment", second, "--out", work, *data), retrieval.name, "in use by process")
        result = seedr("experiment", third, "--out", work, *data)  # shares the work folder, not a step
        assert result.exit_code == 0, result.output
    assert not (retrieval / "run.trec").exists()
    result = seedr("experiment", second, "--out", work, *data)
    assert result.exit_code == 0, result.output
    assert not [path for path in work.rglob(".*.lock")]


TASK_EXPERIMENT = """\
title: BM25 on a held-out sample of a slice of SciFact, cut by a set-up step
variables: {data: ""}
setup:
  task: {kind: retrieval_task, source: "{data}", test_queries: 6}
tasks:
  heldout:
    kind: qrels
    corpus: "{setup.task}/corpus.jsonl"
    queries: "{setup.task}/queries.jsonl"
    qrels: "{setup.task}/qrels/heldout.tsv"
    metrics: [METRICS]
conditions:
  bm25: {retrieve: bm25}
baseline: bm25
resamples: 50
"""


def test_two_experiments_in_one_work_folder_never_write_one_step_at_once(shared_data: Path, scifact_slice: Path,
                                                                         tmp_path: Path) -> None:
    """Issue 22.3: ``seedr experiment`` holds the output lock of every step it computes (as ``seedr
    demo`` holds its own), so a second experiment needing a step that another is computing is refused,
    naming it, and writes nothing there; once that one is done, the step is computed (or read back)."""
    beir = tmp_path / "beir"  # the slice as a task source: with its judged abstracts and training labels
    shutil.copytree(scifact_slice, beir)
    judged = {line.split("\t")[1] for line in (beir / "qrels" / "test.tsv").read_text().splitlines()[1:]}
    with open(shared_data / "scifact" / "corpus.jsonl") as lines, open(beir / "corpus.jsonl", "a") as corpus:
        corpus.writelines(line for line in lines if json.loads(line)["_id"] in judged)
    shutil.copyfile(beir / "qrels" / "test.tsv", beir / "qrels" / "train.tsv")
    work, data = tmp_path / "work", ("--set", f"data={beir}")
    first = tmp_path / "experiments" / "first.yaml"
    first.parent.mkdir()
    first.write_text(TASK_EXPERIMENT.replace("METRICS", "nDCG@10"))
    second = first.with_name("second.yaml")  # another experiment, the same set-up step
    second.write_text(TASK_EXPERIMENT.replace("METRICS", "R@10"))
    assert seedr("experiment", first, "--out", work, *data).exit_code == 0
    (step,) = [folder for folder in (work / "steps").iterdir() if folder.name.startswith("task-")]
    (step / "step.json").unlink()  # as if the first experiment were computing it now
    before = snapshot(step)
    with output_lock(step):
        assert_one_clear_line(seedr("experiment", second, "--out", work, *data), step.name, "in use by process")
        assert snapshot(step) == before and not (work / "reports" / "second" / "results.json").exists()
    result = seedr("experiment", second, "--out", work, *data)
    assert result.exit_code == 0, result.output
    assert (step / "step.json").exists() and not [path for path in work.rglob(".*.lock")]


# ------------------------------------------------------------------ issue 25: the last good checkpoint is good

BLOWN_UP = {"learning_rate": 1e30, "max_grad_norm": None, "warmup_steps": 0, "save_every": 1}


def test_weights_blown_up_by_a_finite_loss_are_never_called_good(tokenizer, shards, tmp_path) -> None:
    """The issue's run: lr 1e30 gives a finite loss at step 1 and weights of ~1e30, whose every output is
    NaN. They are checked before the checkpoint is saved: none is made, and none is called good."""
    out = tmp_path / "run"
    with pytest.raises(NonFiniteLossError, match=r"diverged at step 1: the updated weights give a loss of nan.*"
                                                  r"stopped before saving them, no checkpoint was made"):
        trainer(mlm(tokenizer), shards, out, **BLOWN_UP).train()
    assert list_checkpoints(out) == [] and not (out / "encoder").exists()

    # a run that diverges later keeps the last checkpoint whose weights were checked
    out = tmp_path / "later"
    with pytest.raises(NonFiniteLossError, match=r"step-2 and .*encoder are the last good ones"):
        trainer(NaNFrom(mlm(tokenizer), call=3), shards, out, save_every=1).train()
    from safetensors.torch import load_file

    assert [step for step, _ in list_checkpoints(out)] == [1, 2]
    assert all(torch.isfinite(t).all() for t in load_file(out / "encoder" / "model.safetensors").values())


def test_checking_the_weights_leaves_a_resumed_run_exact(tokenizer, shards, finished, tmp_path, monkeypatch) -> None:
    """The check draws nothing from the training's generators: a run stopped once step 2's product is
    published (after its check), then resumed, ends with the uninterrupted run's weights."""
    renames = _renames_of_a_run(tokenizer, shards, tmp_path / "counted", monkeypatch)
    published = renames.index(str(tmp_path / "counted" / "encoder"))
    _stop_at_rename_then_resume(tokenizer, shards, finished, tmp_path / "run", monkeypatch, published, after=True)


@pytest.fixture(scope="module")
def scifact_train(shared_data: Path, tmp_path_factory) -> Path:
    """A BEIR folder of SciFact's first 8 training queries, their abstracts and 40 others."""
    source = shared_data / "scifact"
    folder = tmp_path_factory.mktemp("scifact-train")
    lines = (source / "qrels" / "train.tsv").read_text().splitlines()
    (folder / "qrels").mkdir()
    (folder / "qrels" / "train.tsv").write_text("\n".join(lines[:9]) + "\n")
    queries, documents = {line.split("\t")[0] for line in lines[1:9]}, {line.split("\t")[1] for line in lines[1:9]}
    corpus = (source / "corpus.jsonl").read_text().splitlines()
    kept = [line for line in corpus if json.loads(line)["_id"] in documents] + corpus[:40]
    (folder / "corpus.jsonl").write_text("\n".join(dict.fromkeys(kept)) + "\n")
    (folder / "queries.jsonl").write_text("\n".join(
        line for line in (source / "queries.jsonl").read_text().splitlines() if json.loads(line)["_id"] in queries)
        + "\n")
    return folder


def test_fine_tuning_never_calls_blown_up_weights_good(model: Path, scifact_train: Path, tmp_path: Path) -> None:
    out = tmp_path / "ft"
    settings = ["train.max_steps=4", "train.batch_size=4", "train.save_every=1", "train.learning_rate=1e30",
                "train.max_grad_norm=0", "train.warmup_ratio=0", "document_max_length=32", "query_max_length=16"]
    result = seedr("finetune", "--model", model, "--train", scifact_train, "--negatives", "in_batch", "--loss", "nll",
                   "--out", out,
                   *(item for setting in settings for item in ("--set", setting)))
    assert_one_clear_line(result, "training diverged at step 1", "no checkpoint was made")
    assert list_checkpoints(out) == [] and not (out / "encoder").exists()


# ------------------------------------------------------------------ issue 25: impossible settings, before any work


@pytest.mark.parametrize("value", ["nan", "-1", "0", ".inf"])
def test_an_impossible_learning_rate_is_refused_before_any_work(model: Path, scifact_train: Path, tmp_path: Path,
                                                                value: str) -> None:
    out = tmp_path / "ft"
    result = seedr("finetune", "--model", model, "--train", scifact_train, "--negatives", "bm25", "--loss", "nll",
                   "--out", out, "--set", f"train.learning_rate={value}")
    reason = "is not a finite number" if value in ("nan", ".inf") else "must be a positive number"
    assert_one_clear_line(result, "train.learning_rate", reason)
    assert "other options make it" not in result.output  # the misleading message of the issue
    assert "mining" not in result.output and not out.exists()
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".")]
    result = seedr("pretrain", "--size", "tiny", "--tokenizer", "minilm", "--out", tmp_path / "pt",
                   "--set", f"train.learning_rate={value}")
    assert_one_clear_line(result, "train.learning_rate", reason)
    assert not (tmp_path / "pt").exists()


def test_the_default_run_tag_of_an_index_folder_with_spaces_is_valid(embeddings: Path, queries: Path,
                                                                    tmp_path: Path) -> None:
    index = tmp_path / "idx dir"
    assert seedr("index", "--embeddings", embeddings, "--out", index).exit_code == 0
    result = seedr("search", "--index", index, "--queries", queries, "--out", tmp_path / "run.trec", "--k", 5)
    assert result.exit_code == 0, result.output
    assert {line.split()[-1] for line in (tmp_path / "run.trec").read_text().splitlines()} == {"idx_dir"}


# ------------------------------------------------------------------ issue 25: errors in one line


def test_a_pickled_pytorch_model_bin_is_one_line_saying_safetensors_only(model: Path, corpus: Path,
                                                                         tmp_path: Path) -> None:
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    crafted = tmp_path / "crafted"
    shutil.copytree(model, crafted)
    (crafted / "model.safetensors").unlink()
    torch.save({"embeddings.word_embeddings.weight": Exploit()}, crafted / "pytorch_model.bin")
    result = encode(crafted, corpus, tmp_path / "emb")
    assert_one_clear_line(result, "pytorch_model.bin", "seedr loads safetensors only")
    assert "weights_only" not in result.output and not marker.exists() and not (tmp_path / "emb").exists()


def test_a_full_disk_during_encode_names_the_file_and_leaves_no_half_shard(model: Path, corpus: Path, tmp_path: Path,
                                                                           monkeypatch) -> None:
    real_save = np.save

    def full_disk(stream, array, *args, **kwargs):  # numpy's own short write, which carries no errno
        stream.write(b"\x93NUMPY" + bytes(200))
        raise OSError(f"{array.nbytes} requested and 8160 written")

    monkeypatch.setattr(np, "save", full_disk)
    out = tmp_path / "emb"
    result = encode(model, corpus, out)
    assert_one_clear_line(result, "embeddings-00000.npy", "no space left on the device")
    assert not out.exists()  # a new folder that failed is removed: no shard, whole or half
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".")]
    monkeypatch.setattr(np, "save", real_save)
    assert encode(model, corpus, out).exit_code == 0  # space freed: the same command completes the folder

    def enospc(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", enospc)
    assert_one_clear_line(encode(model, corpus, tmp_path / "other"), "settings.json", "no space left")
    assert not (tmp_path / "other").exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["emb"]


def test_a_full_disk_during_index_names_the_file_and_leaves_nothing(embeddings: Path, tmp_path: Path,
                                                                    monkeypatch) -> None:
    import faiss

    def full_disk(index, path):
        Path(path).write_bytes(b"IxF2" + bytes(100))
        raise RuntimeError("Error in void faiss::write_index(const faiss::Index*, faiss::IOWriter*, int) at "
                           "faiss/impl/index_write.cpp:817: Error: 'ret == (n)' failed: write error in "
                           f"{path}: 0 != 1 (No space left on device)\n" + "  frame\n" * 60)

    monkeypatch.setattr(faiss, "write_index", full_disk)
    out = tmp_path / "index"
    result = seedr("index", "--embeddings", embeddings, "--out", out)
    assert_one_clear_line(result, "index/index.faiss", "no space left on the device")
    assert "frame" not in result.output
    assert sorted(path.name for path in tmp_path.iterdir()) == []  # no folder, temporary or lock


# ------------------------------------------------------------------ issue 25: no silent staleness


def test_encode_says_which_step_of_a_run_it_encodes(finished: Path, corpus: Path, tmp_path: Path) -> None:
    result = encode(finished, corpus, tmp_path / "emb")
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())  # the line wraps where the run folder's path is long
    assert "step 4 of the run" in said and "warning" not in said
    out = copy_run(finished, tmp_path)  # killed between step 4's checkpoint and its product
    shutil.rmtree(out / "encoder")
    shutil.copytree(out / "checkpoints" / "step-2" / "encoder", out / "encoder")
    result = encode(out, corpus, tmp_path / "stale")
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "step 2 of the run" in said and "newer checkpoint, step 4" in said and "--resume" in said


def test_qa_coverage_leaves_out_cutoffs_deeper_than_the_runs(wiki_shard: Path, shared_data: Path,
                                                             tmp_path: Path) -> None:
    from seedr.data.articles import read_articles
    from seedr.data.corpus import write_corpus
    from seedr.data.passages import split_passages

    write_corpus(tmp_path / "passages.jsonl", split_passages(itertools.islice(read_articles(wiki_shard), 10)))
    lines = (shared_data / "nq-open" / "NQ-open.dev.jsonl").read_text().splitlines()[:20]
    (tmp_path / "nq.jsonl").write_text("\n".join(lines) + "\n")
    result = seedr("search", "--bm25", "--corpus", tmp_path / "passages.jsonl", "--questions", tmp_path / "nq.jsonl",
                   "--k", 5, "--out", tmp_path / "run.trec")
    assert result.exit_code == 0, result.output
    result = seedr("evaluate", tmp_path / "run.trec", "--qa-answers", tmp_path / "nq.jsonl", "--corpus",
                   tmp_path / "passages.jsonl", "--ks", "1,5,20,100", "--json", tmp_path / "qa.json")
    assert result.exit_code == 0, result.output
    assert "left out Top-20, Top-100: the runs rank at most 5 passages" in " ".join(result.output.split())
    scored = json.loads((tmp_path / "qa.json").read_text())
    assert set(scored["metrics"]) == {"Top-1", "Top-5"}
    assert scored["left_out"] == {"metrics": ["Top-20", "Top-100"], "run_depth": 5}
    result = seedr("evaluate", tmp_path / "run.trec", "--qa-answers", tmp_path / "nq.jsonl", "--corpus",
                   tmp_path / "passages.jsonl", "--ks", "20,100")
    assert_one_clear_line(result, "deeper than the runs")


def test_refusals_read_well(embeddings: Path, model: Path, corpus: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-embeddings"
    other.mkdir()
    (other / "settings.json").write_text("{}")
    result = seedr("index", "--embeddings", embeddings, "--out", other)
    assert_one_clear_line(result, "exists and is an embeddings folder")
    assert "a embeddings" not in result.output
    index = tmp_path / "index"
    assert seedr("index", "--embeddings", embeddings, "--out", index).exit_code == 0
    assert_one_clear_line(encode(model, corpus, index), "exists and is a faiss index folder")
    assert_one_clear_line(seedr("index", "--embeddings", embeddings, "--out", index), "a faiss index folder is already")
