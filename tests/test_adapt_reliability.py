"""``seedr adapt``'s run folder and validation (#65): a resumed run continues the run it names or is refused,
a copied or moved run folder resumes, and a validation that cannot rank is not taken as one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

import seedr
from tests.helpers import save_tiny_bert

#: Two steps of a tiny model: seconds on a CPU.
TINY = {"train.max_steps": 2, "train.batch_size": 4, "train.log_every": 1, "query_max_length": 32,
        "document_max_length": 64, "encode_batch_size": 64}
PRETRAIN = {"train.max_steps": 2, "train.batch_size": 4, "train.global_batch_size": 4, "data.max_seq_length": 64,
            "train.log_every": 1}


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
