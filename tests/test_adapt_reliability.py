"""``seedr adapt``'s run folder and validation (#65): a resumed run continues the run it names or is refused,
a copied or moved run folder resumes, and a validation that cannot rank is not taken as one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file
from typer.testing import CliRunner

import seedr
from seedr.cli import app
from tests.helpers import save_tiny_bert

runner = CliRunner()

#: Two steps of a tiny model: seconds on a CPU.
TINY = {"train.max_steps": 2, "train.batch_size": 4, "train.log_every": 1, "query_max_length": 32,
        "document_max_length": 64, "encode_batch_size": 64}
PRETRAIN = {"train.max_steps": 2, "train.batch_size": 4, "train.global_batch_size": 4,
            "data.max_seq_length": 64, "train.log_every": 1}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    """A freshly initialised 2-layer, 32-wide BERT with MiniLM's vocabulary."""
    return save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), "mean")


def _abstracts(shared_data: Path, folder: Path, lines: slice) -> Path:
    """A JSONL corpus of real SciFact abstracts (``lines`` of its corpus)."""
    rows = (shared_data / "scifact" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[lines]
    path = folder / "corpus.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def corpus(shared_data: Path, tmp_path_factory) -> Path:
    """SciFact's first 50 abstracts."""
    return _abstracts(shared_data, tmp_path_factory.mktemp("sf50"), slice(0, 50))


def _command(model: Path, corpus: Path, out: Path, *more: str, validation: str | None = "20") -> list[str]:
    """``seedr adapt`` of ``corpus`` into ``out`` with two steps of the tiny model, validated every step."""
    settings = [argument for key, value in TINY.items() for argument in ("--set", f"{key}={value}")]
    held_out = ["--validation", validation] if validation is not None else []
    return ["adapt", "--model", str(model), "--corpus", str(corpus), "--out", str(out), *held_out,
            "--dev-every", "1", "--patience", "0", *settings, *more]


@pytest.fixture(scope="module")
def started(tiny_model, corpus, tmp_path_factory) -> Path:
    """An adapt run of ``corpus``, finished: each test resumes a copy of it."""
    out = tmp_path_factory.mktemp("started") / "run"
    result = runner.invoke(app, _command(tiny_model, corpus, out))
    assert result.exit_code == 0, result.output
    return out


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of ``folder``: its bytes and modification time."""
    return {str(path.relative_to(folder)): (path.read_bytes(), path.stat().st_mtime_ns)
            for path in sorted(folder.rglob("*")) if path.is_file()}


def test_a_resume_with_other_inputs_is_refused_before_anything_changes(tiny_model, corpus, started,
                                                                     shared_data, tmp_path):
    """Another corpus, other pair sources, another validation, fewer documents or another seed: one line
    naming what changed, exit 1, the run folder as it was. Resumed with another corpus, adapt said
    "negatives: reusing r/negatives" and trained on the first corpus's pairs. The same documents in a copy
    of the file are the same corpus (compared by content, not by name, size or date)."""
    run = tmp_path / "run"
    shutil.copytree(started, run)
    before = _files(run)
    other = _abstracts(shared_data, tmp_path, slice(100, 150))
    for given, more, said in ((other, [], f"corpus {corpus} (sha256 "),
                              (corpus, ["--pairs", "ict"], "pairs None → ['ict']"),
                              (corpus, ["--validation", "25"], "validation 20.0 → 25.0"),
                              (corpus, ["--max-documents", "45"], "max_documents None → 45"),
                              (corpus, ["--set", "train.seed=5"], "seed 13 → 5")):
        result = runner.invoke(app, _command(tiny_model, given, run, "--resume", *more))
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert result.exit_code == 1 and len(lines) == 1 and said in lines[0], result.output
        assert lines[0].startswith(f"error: {run / 'pairs'} was mined from other inputs: "), lines[0]
        assert given == corpus or f"→ {other} (sha256 " in lines[0]
        assert _files(run) == before
    copied = tmp_path / "copied.jsonl"
    copied.write_bytes(corpus.read_bytes())
    result = runner.invoke(app, _command(tiny_model, copied, run, "--resume"))
    assert result.exit_code == 0, result.output


def test_a_copied_or_moved_run_folder_resumes(tiny_model, corpus, tmp_path):
    """Its records name the paths inside it relative to it (the mined pairs, the continued pre-training's
    corpus and shards, the model fine-tuning starts from): resumed elsewhere, it compares as the same run.
    The settings held ``out/pairs/train`` and a copy was refused as ``→ copy/pairs/train``."""
    first = tmp_path / "first"
    arguments = {"corpus": corpus, "model": tiny_model, "validation": 20, "dev_every": 1, "patience": 0,
                 "settings": TINY, "pretrain": "mlm", "pretrain_settings": PRETRAIN}
    seedr.adapt(first, **arguments)
    moved = tmp_path / "elsewhere" / "moved"
    shutil.copytree(first, moved)
    shutil.rmtree(first)  # nothing of the folder it was made in is left to read
    resumed = seedr.adapt(moved, **arguments, resume=True)
    assert resumed.summary["steps"] == 2 and (moved / "encoder" / "model.safetensors").is_file()
    recorded = yaml.safe_load((moved / "config.yaml").read_text())
    assert (recorded["train_data"], recorded["dev_corpus"], recorded["model"]) == (
        "pairs/train", "pairs/validation/corpus.jsonl", "pretrain")
    pretraining = yaml.safe_load((moved / "pretrain" / "config.yaml").read_text())
    assert pretraining["data"]["corpus"] == ["../pairs/documents.jsonl"]
    assert pretraining["model"]["init"] == str(tiny_model)  # outside the run: as given


def test_a_validation_too_small_to_rank_is_refused_before_training(tiny_model, corpus, shared_data, tmp_path):
    """``--validation 1.5`` held out one document: one pair ranked against one candidate, MRR@10 1.0 before
    training, "best at step 0", and ``encoder/`` was the start model. A validation ranks at least 20 pairs
    (twice MRR@10's and R@10's cut-off); fewer are refused in one line, before anything is written, and a
    corpus too small to keep as many to train on cannot take the default either."""
    small = _abstracts(shared_data, tmp_path, slice(0, 30))
    for given, validation, said in (
            (corpus, "1.5", "validation 1.5 holds out 1 of 50 documents, too few to rank: a validation needs "
                            "the pairs of at least 20 (--validation 20 or more)"),
            (corpus, "0.2", "validation 0.2 holds out 10 of 50 documents, too few to rank"),
            (small, None, "30 documents are too few to adapt on with a validation")):
        out = tmp_path / "refused"
        result = runner.invoke(app, _command(tiny_model, given, out, validation=validation))
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert result.exit_code == 1 and len(lines) == 1 and said in lines[0], result.output
        assert not out.exists() or not any(out.iterdir())
    many = _command(tiny_model, corpus, tmp_path / "deep", "--set", "dev_metrics=[MRR@10,R@15]", "--set",
                    "dev_depth=15", validation="25")
    result = runner.invoke(app, many)  # twice R@15's cut-off
    assert result.exit_code == 1 and "the pairs of at least 30" in result.output, result.output


def test_a_widened_validation_and_an_unchanged_model_say_so(tiny_model, corpus, tmp_path):
    """The default 10% of 50 documents is 5: widened to 20, with a warning. A learning rate too small to move
    a weight: no evaluation betters the one before training, so ``encoder/`` is the start model — said in
    a printed line, the summary and the model card, not only as "best at step 0"."""
    out = tmp_path / "run"
    result = runner.invoke(app, _command(tiny_model, corpus, out, "--set", "train.learning_rate=1e-30",
                                         validation=None))
    assert result.exit_code == 0, result.output
    assert ("warning: validation: the default 10% of 50 documents (5) is too few to rank; 20 held out instead"
            in result.output)
    pairs = yaml.safe_load((out / "pairs" / "pairs.json").read_text())
    assert pairs["documents"] == {"train": 30, "validation": 20}
    assert sum(pairs["pairs"]["validation"].values()) == 20
    assert (f"warning: no step bettered the starting model's dev/MRR@10 (" in result.output
            and f"{out / 'encoder'} is {tiny_model}, unchanged" in result.output), result.output
    kept, start = (load_file(folder / "model.safetensors") for folder in (out / "encoder", tiny_model))
    assert kept and all(torch.equal(tensor, start[name]) for name, tensor in kept.items())  # the same weights
    assert "this is the base model, unchanged" in (out / "encoder" / "README.md").read_text()
    run = seedr.adapt(out, corpus=corpus, model=tiny_model, dev_every=1, patience=0,
                      settings={**TINY, "train.learning_rate": 1e-30}, resume=True)
    notes = run.summary["warnings"]  # the API's run says it too
    assert len(notes) == 2 and notes[0].startswith("validation: the default 10%")
    assert notes[1].startswith("no step bettered the starting model's dev/MRR@10")
    assert run.summary["best"]["step"] == 0
