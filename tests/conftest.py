"""Shared fixtures: the real public data beside the project (``../shared/data``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

SHARED_DATA = Path(os.environ.get("SEEDR_SHARED_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data")).resolve()

# Two cores: keep intra-op threads fixed so timings and results are repeatable.
torch.set_num_threads(2)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"the shared data folder is missing: {SHARED_DATA} (set SEEDR_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def wiki_shard(shared_data: Path) -> Path:
    return shared_data / "wiki" / "enwiki-2015-00.jsonl.xz"


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    from seedr.modeling.encoder import resolve_model_path

    return resolve_model_path("minilm")
