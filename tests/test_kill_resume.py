"""SIGKILL at a random moment, then the same command again (issue 10): encoding, pre-training and
fine-tuning end exactly as an uninterrupted run — no stale lock, temporary or product in the way. The
encoding case is fast; pre-training and fine-tuning start real processes and are ``slow``. (A kill in
the middle of the final publish of the product is reproduced exactly in ``test_reliability.py``.)"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import first_lines, tiny_bert
from safetensors.torch import load_file
from typer.testing import CliRunner

from seedr.cli import app
from seedr.modeling.encoder import save_encoder

runner = CliRunner()


def seedr_process(*args: object) -> subprocess.Popen:
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.Popen([sys.executable, "-m", "seedr", *map(str, args)], env=environment,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def kill_when(process: subprocess.Popen, ready, seconds: float, timeout: float = 300) -> bool:
    """SIGKILL ``process`` ``seconds`` after ``ready()`` first holds; False if it ended before."""
    deadline = time.monotonic() + timeout
    while not ready():
        if process.poll() is not None:
            return False
        assert time.monotonic() < deadline, "the process never got there"
        time.sleep(0.05)
    time.sleep(seconds)
    if process.poll() is not None:
        return False
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    return True


def run(*args: object) -> None:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.startswith("."))


@pytest.fixture(scope="module")
def tiny_model(tokenizer, tmp_path_factory) -> Path:
    torch.manual_seed(0)
    return save_encoder(tiny_bert(tokenizer, intermediate_size=64), tokenizer,
                        tmp_path_factory.mktemp("model") / "tiny", max_seq_length=64)


@pytest.fixture(scope="module")
def corpus(shared_data: Path, tmp_path_factory) -> Path:
    """120 real SciFact abstracts."""
    return first_lines(shared_data / "scifact" / "corpus.jsonl", 120, tmp_path_factory.mktemp("corpus"))


def test_encoding_killed_at_a_random_moment_resumes_to_the_same_vectors(tiny_model, corpus, tmp_path,
                                                                       chance) -> None:
    delay = chance.uniform(0, 0.5)
    print(f"killed {delay:.3f} s after the first shard")
    arguments = ("encode", "--model", tiny_model, "--corpus", corpus, "--shard-size", 10, "--batch-size", 10,
                 "--max-length", 64)
    killed = tmp_path / "killed"
    process = seedr_process(*arguments, "--out", killed)
    kill_when(process, lambda: (killed / "ids-00000.txt").exists(), delay)
    run(*arguments, "--out", killed)
    run(*arguments, "--out", tmp_path / "whole")
    manifest = json.loads((killed / "manifest.json").read_text())
    assert manifest == json.loads((tmp_path / "whole" / "manifest.json").read_text())
    for shard in manifest["shards"]:
        assert np.array_equal(np.load(killed / shard["embeddings"]), np.load(tmp_path / "whole" / shard["embeddings"]))
        assert (killed / shard["ids"]).read_text() == (tmp_path / "whole" / shard["ids"]).read_text()
    assert leftovers(killed) == [] and leftovers(tmp_path) == []


def same_weights(first: Path, second: Path) -> bool:
    a, b = load_file(first / "model.safetensors"), load_file(second / "model.safetensors")
    return a.keys() == b.keys() and all(torch.equal(a[name], b[name]) for name in a)


@pytest.mark.slow
def test_pretraining_killed_at_a_random_moment_resumes_to_the_same_encoder(wiki_shard, tmp_path,
                                                                           chance) -> None:
    delay = chance.uniform(0, 3)
    print(f"killed {delay:.3f} s after the first checkpoint")
    arguments = ("pretrain", "--objective", "mlm", "--corpus", wiki_shard, "--size", "tiny", "--tokenizer", "minilm",
                 *(item for setting in ("model.hidden_size=32", "model.num_attention_heads=2",
                                        "model.intermediate_size=64", "data.max_documents=40",
                                        "data.max_seq_length=64", "train.max_steps=12", "train.batch_size=4",
                                        "train.save_every=3", "train.log_every=1", "train.warmup_steps=1")
                   for item in ("--set", setting)))
    killed = tmp_path / "runs" / "killed"
    process = seedr_process(*arguments, "--out", killed)
    kill_when(process, lambda: (killed / "checkpoints" / "step-3").exists(), delay)
    run(*arguments, "--out", killed, "--resume")
    run(*arguments, "--out", tmp_path / "runs" / "whole")
    assert same_weights(killed / "encoder", tmp_path / "runs" / "whole" / "encoder")
    steps = [json.loads(line)["step"] for line in (killed / "metrics.jsonl").read_text().splitlines()]
    assert steps == list(range(1, 13))
    assert leftovers(killed) == [] and leftovers(tmp_path / "runs") == []


@pytest.mark.slow
def test_fine_tuning_killed_at_a_random_moment_resumes_to_the_same_encoder(tiny_model, shared_data, tmp_path,
                                                                         chance) -> None:
    delay = chance.uniform(0, 3)
    print(f"killed {delay:.3f} s after the first checkpoint")
    scifact = shared_data / "scifact"
    arguments = ("finetune", "--model", tiny_model, "--train", scifact, "--negatives", "bm25", "--loss", "nll",
                 *(item for setting in ("train.max_steps=8", "train.batch_size=4", "train.save_every=2",
                                        "train.warmup_ratio=0", "document_max_length=32", "query_max_length=16",
                                        "negative_options.depth=20")
                   for item in ("--set", setting)))
    killed = tmp_path / "killed"
    process = seedr_process(*arguments, "--out", killed)
    kill_when(process, lambda: (killed / "checkpoints" / "step-2").exists(), delay)
    run(*arguments, "--out", killed, "--resume")
    run(*arguments, "--out", tmp_path / "whole")
    assert same_weights(killed / "encoder", tmp_path / "whole" / "encoder")
    assert leftovers(killed) == [] and leftovers(tmp_path) == []


def test_encoding_killed_through_a_symlink_resumes_through_the_real_path(tiny_model, corpus, tmp_path) -> None:
    """The kill and the resume name one folder two ways (issue 25): the lock and the temporaries belong
    to the folder, not to the name, so the resume through the real path finishes the killed run's
    vectors exactly and the link still points at them."""
    delay = random.Random(25).uniform(0, 0.5)
    arguments = ("encode", "--model", tiny_model, "--corpus", corpus, "--shard-size", 10, "--batch-size", 10,
                 "--max-length", 64)
    real, link = tmp_path / "emb", tmp_path / "alias"
    real.mkdir()
    link.symlink_to(real, target_is_directory=True)
    process = seedr_process(*arguments, "--out", link)
    kill_when(process, lambda: (real / "ids-00000.txt").exists(), delay)
    run(*arguments, "--out", real)
    run(*arguments, "--out", tmp_path / "whole")
    manifest = json.loads((real / "manifest.json").read_text())
    assert manifest == json.loads((tmp_path / "whole" / "manifest.json").read_text())
    for shard in manifest["shards"]:
        assert np.array_equal(np.load(link / shard["embeddings"]), np.load(tmp_path / "whole" / shard["embeddings"]))
    assert link.is_symlink() and leftovers(real) == [] and not list(tmp_path.glob(".*"))


def test_an_experiment_killed_at_a_random_moment_runs_again_to_the_same_results(scifact_slice, tmp_path) -> None:
    """A killed ``seedr experiment`` leaves its report and step locks behind a dead process: the next run
    takes them over and ends with the results of an uninterrupted one."""
    from test_reliability import experiment_file

    data = scifact_slice
    first = experiment_file(tmp_path, "first", "nDCG@10")
    delay = random.Random(26).uniform(0, 0.5)
    work = tmp_path / "killed"
    process = seedr_process("experiment", first, "--out", work, "--set", f"data={data}")
    killed_running = kill_when(process, lambda: work.exists(), delay)
    print(f"killed {delay:.3f} s after the work folder appeared: {killed_running}")
    run("experiment", first, "--out", work, "--set", f"data={data}")
    run("experiment", first, "--out", tmp_path / "whole", "--set", f"data={data}")
    killed = json.loads((work / "reports" / "first" / "results.json").read_text())
    whole = json.loads((tmp_path / "whole" / "reports" / "first" / "results.json").read_text())
    assert killed["tasks"] == whole["tasks"] and killed["claims"] == whole["claims"]
    assert not list(work.rglob(".*.lock")) and not list(work.rglob(".*.tmp"))
