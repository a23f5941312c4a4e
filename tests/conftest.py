"""Shared fixtures: the real public data beside the project (``../shared/data``) and the MiniLM
tokenizer. Shared helpers (tiny BERTs, real text, file writers) are in ``helpers.py``."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
import torch
from helpers import first_lines
from hypothesis import settings

SHARED_DATA = Path(os.environ.get("SEEDR_SHARED_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data")).resolve()

# One intra-op thread for the whole suite: tiny models gain nothing from a second one, and on a shared
# two-core machine OpenMP threads waiting for a busy core make each small op many times slower. Fixed,
# so that timings and results are repeatable.
torch.set_num_threads(1)

# Property tests (hypothesis) draw the same cases at every run, from a seed each test's code fixes, with no
# example database: a new reader bug fails the change that brings it, every time, not a later run at random.
# The ``slow`` variants explore (profile ``explore``: fresh cases, many more); the cases they find go into
# the tests as explicit ``@example``s.
settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False, database=None)
settings.load_profile("repeatable")

#: CI sets SEEDR_TEST_SEED (``.ci/run``): what the tests draw at random then comes out the same every run:
#: the exploring profile's cases (``make test-slow`` passes it to hypothesis as ``--hypothesis-seed``) and
#: the moment a kill lands (``chance``). Unset, each run draws afresh.
TEST_SEED = os.environ.get("SEEDR_TEST_SEED") or None


@pytest.fixture
def chance() -> random.Random:
    """The random source of a test that draws (the moment to kill a process at): seeded where CI seeds."""
    return random.Random(TEST_SEED)


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


@pytest.fixture(scope="session")
def tokenizer(minilm_path: Path):
    """MiniLM's tokenizer (BERT's uncased WordPiece vocabulary), which the tiny test models share."""
    from seedr.modeling.encoder import load_tokenizer

    return load_tokenizer(minilm_path)


@pytest.fixture(scope="session")
def scifact_slice(shared_data: Path, tmp_path_factory) -> Path:
    """A BEIR folder: SciFact's first 5 test queries, their judgments, and the first 40 abstracts."""
    source = shared_data / "scifact"
    folder = tmp_path_factory.mktemp("scifact-slice")
    first_lines(source / "corpus.jsonl", 40, folder)
    lines = (source / "qrels" / "test.tsv").read_text().splitlines()
    judged = lines[1:8]
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("\n".join([lines[0], *judged]) + "\n")
    wanted = {line.split("\t")[0] for line in judged}
    texts = [line for line in (source / "queries.jsonl").read_text().splitlines()
             if json.loads(line)["_id"] in wanted]
    (folder / "queries.jsonl").write_text("\n".join(texts) + "\n")
    return folder
