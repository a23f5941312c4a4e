"""Encoding, indexing and search beyond one process: shards split between processes equal one
process's shards, an index over many shards reads them a chunk at a time, and searching a
memory-mapped index gives the same run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from seedr.cli import app
from seedr.data.corpus import read_corpus
from seedr.data.runs import read_trec_run
from seedr.retrieval.embeddings import ShardedEmbeddings, load_embeddings
from seedr.retrieval.encode import TextEncoder, encode_corpus_to_shards
from seedr.retrieval.faiss_index import DenseIndex

runner = CliRunner()


@pytest.fixture(scope="module")
def scifact_documents(shared_data: Path):
    return list(read_corpus(shared_data / "scifact" / "corpus.jsonl"))[:36]


@pytest.fixture(scope="module")
def encoder(minilm_path: Path) -> TextEncoder:
    return TextEncoder(minilm_path, max_length=64, device="cpu")


def shard_contents(folder: Path) -> list[tuple[str, list[str], np.ndarray]]:
    manifest = json.loads((folder / "manifest.json").read_text())
    return [(shard["embeddings"], (folder / shard["ids"]).read_text().splitlines(),
             np.load(folder / shard["embeddings"])) for shard in manifest["shards"]]


def assert_same_shards(folder: Path, reference: Path) -> None:
    left, right = shard_contents(folder), shard_contents(reference)
    assert [(name, ids) for name, ids, _ in left] == [(name, ids) for name, ids, _ in right]
    for (name, _, vectors), (_, _, expected) in zip(left, right, strict=True):
        np.testing.assert_allclose(vectors, expected, rtol=0, atol=1e-6, err_msg=name)


def test_processes_split_the_shards_and_the_last_one_writes_the_manifest(tmp_path, scifact_documents, encoder):
    one = encode_corpus_to_shards(encoder, scifact_documents, tmp_path / "one", shard_size=8, show_progress=False)
    two = tmp_path / "two"
    encode_corpus_to_shards(encoder, scifact_documents, two, shard_size=8, show_progress=False, rank=1, world_size=2)
    assert sorted(path.name for path in two.glob("ids-*")) == ["ids-00001.txt", "ids-00003.txt"]
    assert not (two / "manifest.json").exists()  # rank 0's shards are still missing
    with pytest.raises(Exception, match="did not finish"):
        load_embeddings(two)
    encode_corpus_to_shards(encoder, scifact_documents, two, shard_size=8, show_progress=False, rank=0, world_size=2)
    assert json.loads((two / "manifest.json").read_text()) == json.loads((one / "manifest.json").read_text())
    assert_same_shards(two, one)
    with pytest.raises(ValueError, match="rank"):
        encode_corpus_to_shards(encoder, scifact_documents, two, shard_size=8, rank=2, world_size=2)


def test_sharded_embeddings_read_rows_across_shards_like_one_array(tmp_path, scifact_documents, encoder):
    folder = encode_corpus_to_shards(encoder, scifact_documents, tmp_path / "e", shard_size=8, show_progress=False)
    ids, vectors = load_embeddings(folder)
    assert isinstance(vectors, ShardedEmbeddings) and vectors.shape == (36, 384) and len(ids) == 36
    whole = np.concatenate([np.load(folder / f"embeddings-{shard:05d}.npy") for shard in range(5)])
    np.testing.assert_array_equal(np.asarray(vectors), whole)
    for rows in (slice(0, 36), slice(5, 21), slice(30, 99), slice(8, 8), slice(1, 30, 7)):
        np.testing.assert_array_equal(vectors[rows], whole[rows])
    sample = np.array([35, 0, 7, 8, 16, 17])
    np.testing.assert_array_equal(vectors[sample], whole[sample])
    # an IVF index trained on a sample and filled a chunk at a time equals one built from the array
    sharded = DenseIndex.build(vectors, ids, factory="IVF4,Flat", train_sample=20, seed=3)
    in_memory = DenseIndex.build(whole, ids, factory="IVF4,Flat", train_sample=20, seed=3)
    sharded.set_search_parameters(nprobe=4)
    in_memory.set_search_parameters(nprobe=4)
    assert sharded.search(whole[:5], 10)[1] == in_memory.search(whole[:5], 10)[1]


@pytest.mark.parametrize("factory", ["Flat", "IVF4,Flat", "HNSW8"])
def test_memory_mapped_index_searches_the_same(tmp_path, scifact_documents, encoder, factory):
    vectors = encoder.encode_documents(scifact_documents)
    ids = [document.id for document in scifact_documents]
    DenseIndex.build(vectors, ids, factory=factory).save(tmp_path / "index")
    in_memory, mapped = DenseIndex.load(tmp_path / "index"), DenseIndex.load(tmp_path / "index", mmap=True)
    for index in (in_memory, mapped):
        if factory.startswith("IVF"):
            index.set_search_parameters(nprobe=4)
    expected, found = in_memory.search(vectors[:6], 12), mapped.search(vectors[:6], 12)
    assert found[1] == expected[1]
    np.testing.assert_array_equal(found[0], expected[0])


def seedr_cli(*args) -> None:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output


@pytest.mark.slow
def test_two_process_encode_equals_one_process_and_search_is_identical(tmp_path, shared_data):
    """``torchrun --nproc_per_node 2 seedr encode`` (gloo on CPUs) against a single-process encode; the
    fast variant is ``test_processes_split_the_shards_and_the_last_one_writes_the_manifest``."""
    corpus, queries = shared_data / "scifact" / "corpus.jsonl", tmp_path / "queries.jsonl"
    lines = (shared_data / "scifact" / "queries.jsonl").read_text().splitlines()[:25]
    queries.write_text("".join(line + "\n" for line in lines))
    options = ["--model", "minilm", "--corpus", corpus, "--limit", 30, "--shard-size", 7, "--max-length", 48,
               "--batch-size", 8, "--device", "cpu"]
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    torchrun, seedr = Path(sys.executable).parent / "torchrun", Path(sys.executable).parent / "seedr"
    result = subprocess.run([str(torchrun), "--standalone", "--nproc_per_node", "2", str(seedr), "encode",
                             *map(str, options), "--out", str(tmp_path / "two")],
                            check=False, capture_output=True, text=True, timeout=300, env=environment)
    assert result.returncode == 0, result.stderr[-3000:]
    seedr_cli("encode", *options, "--out", tmp_path / "one")
    assert json.loads((tmp_path / "two" / "manifest.json").read_text())["count"] == 30
    assert_same_shards(tmp_path / "two", tmp_path / "one")

    runs = []
    for name in ("one", "two"):
        seedr_cli("index", "--embeddings", tmp_path / name, "--out", tmp_path / f"index-{name}")
        for mmap in ([], ["--mmap"]):
            out = tmp_path / f"{name}{len(mmap)}.trec"
            seedr_cli("search", "--index", tmp_path / f"index-{name}", "--queries", queries, "--k", 10,
                      "--out", out, "--tag", "dense", *mmap)
            runs.append(read_trec_run(out))
    assert len(runs[0]) == 25 and all(run == runs[0] for run in runs[1:])
