"""Dense retrieval on real text: MiniLM embeddings of SciFact abstracts and queries, faiss vs brute force,
index folders, and resumable embedding shards."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from seedr.data.corpus import load_corpus
from seedr.data.queries import read_qrels, read_queries
from seedr.data.records import Document
from seedr.retrieval.encode import (
    TITLE_MODES,
    TextEncoder,
    document_input,
    encode_corpus_to_shards,
    encode_texts,
    load_embeddings,
)
from seedr.retrieval.faiss_index import DenseIndex, brute_force_topk

MAX_LENGTH = 64  # real abstracts, cut short to keep two shared CPU cores free


@pytest.fixture(scope="module")
def scifact(shared_data: Path):
    """~300 SciFact abstracts (the relevant ones of 50 test queries, then corpus order) and those queries."""
    folder = shared_data / "scifact"
    corpus = load_corpus(folder / "corpus.jsonl")
    queries = read_queries(folder / "queries.jsonl")
    qrels = read_qrels(folder / "qrels" / "test.tsv")
    qids = sorted(qrels)[:50]
    chosen = {doc for qid in qids for doc in qrels[qid]}
    for doc in corpus:
        if len(chosen) >= 300:
            break
        chosen.add(doc)
    documents = [corpus[doc] for doc in sorted(chosen)]
    return documents, {qid: queries[qid] for qid in qids}


@pytest.fixture(scope="module")
def encoder(minilm_path: Path) -> TextEncoder:
    return TextEncoder(minilm_path, pooling="mean", normalize=True, max_length=MAX_LENGTH)


@pytest.fixture(scope="module")
def embeddings(scifact, encoder):
    documents, queries = scifact
    return (encoder.encode_documents(documents, batch_size=32),
            encoder.encode_queries(list(queries.values()), batch_size=50))


def test_encoder_matches_sentence_transformers(scifact, encoder, minilm_path):
    from sentence_transformers import SentenceTransformer

    texts = [document.text for document in scifact[0][:12]]
    reference = SentenceTransformer(str(minilm_path), device="cpu")
    reference.max_seq_length = MAX_LENGTH
    expected = reference.encode(texts, batch_size=5)
    np.testing.assert_allclose(encoder.encode(texts, batch_size=5), expected, atol=1e-5)


def test_length_sorted_batches_restore_input_order(scifact, encoder):
    texts = [document.text[: 40 * (i + 1)] for i, document in enumerate(scifact[0][:8])]  # lengths differ
    forward = encoder.encode(texts, batch_size=3)
    backward = encoder.encode(texts[::-1], batch_size=3)
    np.testing.assert_allclose(forward, backward[::-1], atol=1e-5)
    one_by_one = np.concatenate([encoder.encode([text]) for text in texts])
    np.testing.assert_allclose(forward, one_by_one, atol=1e-5)


def test_documents_are_encoded_as_their_title_mode_says(scifact, encoder, minilm_path):
    document = scifact[0][0]
    tokens = encoder.tokenizer(document.title, document.text, truncation=True, max_length=MAX_LENGTH)
    assert tokens["input_ids"].count(encoder.tokenizer.sep_token_id) == 2  # [CLS] title [SEP] text [SEP]
    assert document_input(document, "pair", "> ") == ("> " + document.title, document.text)
    assert document_input(document, "join") == (f"{document.title} {document.text}", None)
    assert document_input(document, "none") == (document.text, None)
    untitled = Document(document.id, document.text)
    assert {document_input(untitled, mode) for mode in TITLE_MODES} == {(document.text, None)}
    with pytest.raises(ValueError, match="title mode"):
        document_input(document, "prefix")

    assert encoder.title == "pair"  # MiniLM's folder records no mode: DPR's pair
    as_pair = encoder.encode([document.title], text_pairs=[document.text])
    np.testing.assert_allclose(encoder.encode_documents([document]), as_pair, atol=1e-6)
    vectors = {"pair": as_pair}
    for mode, text in (("join", f"{document.title} {document.text}"), ("none", document.text)):
        other = TextEncoder(minilm_path, pooling="mean", normalize=True, max_length=MAX_LENGTH, title=mode)
        vectors[mode] = other.encode_documents([document])
        np.testing.assert_allclose(vectors[mode], encoder.encode([text]), atol=1e-6)
        assert other.settings()["title"] == mode  # recorded beside embeddings and in indexes
    assert not np.allclose(vectors["join"], as_pair, atol=1e-3) and not np.allclose(vectors["none"], as_pair, atol=1e-3)


def test_function_form_keeps_training_mode(scifact, encoder):
    encoder.model.train()
    vectors = encode_texts(encoder.model, encoder.tokenizer, [scifact[0][0].text], pooling="mean",
                           max_length=MAX_LENGTH, normalize=True)
    assert encoder.model.training  # restored after inference in eval mode
    encoder.model.eval()
    np.testing.assert_allclose(vectors, encoder.encode([scifact[0][0].text]), atol=1e-6)


def test_bfloat16_autocast_stays_close(scifact, encoder, embeddings):
    documents = scifact[0][:2]  # bfloat16 matmuls are slow on CPUs without AMX
    vectors = encode_texts(encoder.model, encoder.tokenizer, [d.title for d in documents], "mean", MAX_LENGTH,
                           text_pairs=[d.text for d in documents], normalize=True, autocast_dtype="bfloat16")
    assert vectors.dtype == np.float32
    cosines = (vectors * embeddings[0][:2]).sum(axis=1)  # both unit length
    assert cosines.min() > 0.99


def test_flat_index_equals_brute_force(scifact, embeddings):
    documents, _ = scifact
    ids = [document.id for document in documents]
    doc_vectors, query_vectors = embeddings
    for metric in ("ip", "cosine", "l2"):
        index = DenseIndex.build(doc_vectors, ids, factory="Flat", metric=metric)
        scores, found = index.search(query_vectors, k=10)
        expected_scores, positions = brute_force_topk(query_vectors, doc_vectors, 10, metric=metric, ids=ids)
        np.testing.assert_allclose(scores, expected_scores, atol=1e-4)
        for row_found, row_positions, row_scores in zip(found, positions, expected_scores):
            # the same documents in the same order, except where float error may swap near-ties
            near_tie = np.isclose(row_scores[:-1], row_scores[1:], atol=1e-5)
            for rank, (doc, position) in enumerate(zip(row_found, row_positions)):
                neighbours = near_tie[max(rank - 1, 0):rank + 1]
                assert doc == ids[position] or neighbours.any(), (metric, rank)


def test_hnsw_recall_at_10_against_flat(scifact, embeddings):
    documents, _ = scifact
    ids = [document.id for document in documents]
    doc_vectors, query_vectors = embeddings
    _, exact = DenseIndex.build(doc_vectors, ids, "Flat").search(query_vectors, 10)
    hnsw = DenseIndex.build(doc_vectors, ids, "HNSW32")
    hnsw.set_search_parameters(efSearch=64)
    _, approximate = hnsw.search(query_vectors, 10)
    recall = np.mean([len(set(a) & set(e)) / 10 for a, e in zip(approximate, exact)])
    assert recall >= 0.95


def test_trained_index_and_search_parameters(scifact, embeddings):
    documents, _ = scifact
    ids = [document.id for document in documents]
    index = DenseIndex.build(embeddings[0], ids, "IVF4,Flat", train_sample=200, seed=1)
    index.set_search_parameters(nprobe=4)  # every list probed: exact
    _, found = index.search(embeddings[1], 5)
    _, exact = DenseIndex.build(embeddings[0], ids, "Flat").search(embeddings[1], 5)
    assert found == exact
    with pytest.raises(ValueError, match="nprobe"):
        DenseIndex.build(embeddings[0], ids, "Flat").set_search_parameters(nprobe=4)
    with pytest.raises(ValueError, match="faiss cannot build"):
        DenseIndex.build(embeddings[0], ids, "NoSuchIndex12")


def test_ties_are_broken_by_document_id(scifact, embeddings):
    vector = embeddings[0][:1]
    duplicates = np.repeat(vector, 4, axis=0)  # the same real abstract indexed under four ids
    index = DenseIndex.build(duplicates, ["d", "b", "c", "a"], "Flat")
    scores, found = index.search(vector, 3)
    assert found == [["a", "b", "c"]]
    assert scores[0][0] == scores[0][2]


def test_index_folder_round_trip(tmp_path, scifact, embeddings):
    documents, _ = scifact
    ids = [document.id for document in documents]
    index = DenseIndex.build(embeddings[0], ids, "HNSW32", metric="cosine", encoder={"model": "minilm"})
    before = index.search(embeddings[1], 20)
    index.save(tmp_path / "index")
    assert sorted(p.name for p in (tmp_path / "index").iterdir()) == ["ids.txt", "index.faiss", "index.json"]
    config = json.loads((tmp_path / "index" / "index.json").read_text())
    assert config["factory"] == "HNSW32" and config["metric"] == "cosine"
    assert config["dim"] == 384 and config["count"] == len(ids) and config["encoder"] == {"model": "minilm"}
    loaded = DenseIndex.load(tmp_path / "index")
    after = loaded.search(embeddings[1], 20)
    np.testing.assert_array_equal(before[0], after[0])
    assert before[1] == after[1]
    assert loaded.ids == ids


def test_shards_resume_after_a_kill(tmp_path, scifact, encoder, embeddings):
    documents = scifact[0][:40]
    calls = []

    class CountingEncoder(TextEncoder):
        def __init__(self) -> None:  # share the loaded model
            self.__dict__.update(encoder.__dict__)

        def encode_documents(self, docs, **kwargs):
            calls.append([d.id for d in docs])
            return super().encode_documents(docs, **kwargs)

    def killed_after(count):
        for number, document in enumerate(documents):
            if number == count:
                raise KeyboardInterrupt  # the process dies while shard 2 is being read
            yield document

    out = tmp_path / "embeddings"
    with pytest.raises(KeyboardInterrupt):
        encode_corpus_to_shards(CountingEncoder(), killed_after(35), out, shard_size=16, show_progress=False)
    assert (out / "ids-00001.txt").exists() and not (out / "embeddings-00002.npy").exists()
    assert not (out / "manifest.json").exists()
    with pytest.raises(Exception, match="did not finish"):
        load_embeddings(out)
    # a kill between a shard's two files: its vectors are there, its ids are not; plus a stale temp file
    (out / "ids-00001.txt").unlink()
    (out / ".embeddings-00002.npy.abc.tmp").write_bytes(b"partial")

    calls.clear()
    encode_corpus_to_shards(CountingEncoder(), documents, out, shard_size=16, show_progress=False)
    assert calls == [[d.id for d in documents[16:32]], [d.id for d in documents[32:]]]
    ids, resumed = load_embeddings(out)
    assert ids == [d.id for d in documents]
    np.testing.assert_allclose(resumed, embeddings[0][:40], atol=1e-5)  # as if never interrupted
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["count"] == 40 and [s["count"] for s in manifest["shards"]] == [16, 16, 8]

    with pytest.raises(Exception, match="other settings"):
        encode_corpus_to_shards(CountingEncoder(), documents, out, shard_size=8, show_progress=False)
    with pytest.raises(Exception, match="corpus differs"):
        encode_corpus_to_shards(CountingEncoder(), documents[1:], out, shard_size=16, show_progress=False)


def test_float16_shards_are_memory_mapped(tmp_path, scifact, encoder, embeddings):
    documents = scifact[0][:10]
    out = encode_corpus_to_shards(encoder, documents, tmp_path / "e16", dtype="float16", show_progress=False)
    ids, vectors = load_embeddings(out)
    assert isinstance(vectors, np.memmap) and vectors.dtype == np.float16
    np.testing.assert_allclose(vectors.astype(np.float32), embeddings[0][:10], atol=2e-3)
    index = DenseIndex.build(vectors, ids)  # converted to float32 chunk by chunk
    assert index.search(vectors[:2].astype(np.float32), 1)[1] == [[ids[0]], [ids[1]]]


@pytest.mark.parametrize("factory", ["Flat", "HNSW32", "SQfp16", "IVF4,Flat"])
def test_chunked_build_from_memory_maps_equals_one_add(tmp_path, monkeypatch, scifact, embeddings, factory):
    """Built a few vectors per chunk (codes reserved up front, each chunk's mapped pages dropped once
    added) from one memory-mapped shard or from several, an index holds what one faiss ``add`` of the
    whole array gives (HNSW, whose graph depends on insertion batches and threads: the same neighbours
    up to a few); the maps stay readable and the files untouched."""
    import faiss

    from seedr.retrieval import faiss_index
    from seedr.retrieval.embeddings import ShardedEmbeddings

    doc_vectors, query_vectors = embeddings
    ids = [document.id for document in scifact[0]]
    np.save(tmp_path / "all.npy", doc_vectors)
    halves = [doc_vectors[:100], doc_vectors[100:]]
    for part, vectors in enumerate(halves):
        np.save(tmp_path / f"part{part}.npy", vectors)
    mapped = np.load(tmp_path / "all.npy", mmap_mode="r")
    sharded = ShardedEmbeddings([np.load(tmp_path / f"part{part}.npy", mmap_mode="r") for part in range(2)])

    expected = faiss.index_factory(doc_vectors.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
    expected.train(doc_vectors)
    expected.add(doc_vectors)
    _, expected_positions = expected.search(query_vectors, 10)
    monkeypatch.setattr(faiss_index, "_ADD_CHUNK", 37)  # several chunks, one across the shards' border
    monkeypatch.setattr(faiss_index, "_MIN_ADD_CHUNK", 1)
    for source in (mapped, sharded):
        index = DenseIndex.build(source, ids, factory=factory, gpu=False)
        assert index.index.ntotal == len(ids)
        _, found = index.search(query_vectors, k=10)
        expected_ids = [[ids[position] for position in row] for row in expected_positions]
        if factory.startswith("HNSW"):
            shared = np.mean([len(set(row) & set(other)) / 10 for row, other in zip(found, expected_ids)])
            assert shared >= 0.95, shared
        else:
            assert found == expected_ids, factory
    np.testing.assert_array_equal(mapped, doc_vectors)
    np.testing.assert_array_equal(np.load(tmp_path / "part1.npy"), halves[1])
