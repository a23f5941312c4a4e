"""Memory-mapped token shards: ids round-trip to the tokenizer's output, packing at sentence and
document boundaries, streaming writes, the manifest, caching, and the per-epoch order — on real
Wikipedia articles (wiki shard 00) with the MiniLM (BERT) tokenizer."""

from __future__ import annotations

import itertools
import pickle
from pathlib import Path

import numpy as np
import pytest

from seedr.data.corpus import read_corpus
from seedr.data.records import Document
from seedr.data.sentences import sentence_spans
from seedr.data.shards import (
    TokenShardData,
    TokenShards,
    ensure_token_shards,
    read_manifest,
    tokenizer_fingerprint,
    write_token_shards,
)
from seedr.io import DataError


@pytest.fixture(scope="module")
def documents(wiki_shard) -> list[Document]:
    return list(itertools.islice(read_corpus(wiki_shard), 12))


def content_ids(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def test_first_block_ids_are_the_tokenizers_truncated_output(tokenizer, documents, tmp_path):
    manifest = write_token_shards(documents, tokenizer, tmp_path / "s", max_seq_length=64, packing="first_block",
                                  progress=False)
    shards = TokenShards(tmp_path / "s")
    assert len(shards) == manifest["examples"] == manifest["documents"] == len(documents)
    for document, example in zip(documents, shards, strict=True):
        assert example.tolist() == tokenizer(document.text, truncation=True, max_length=64)["input_ids"]


def test_packed_blocks_hold_every_token_of_the_corpus_in_order(tokenizer, documents, tmp_path):
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    expected = [token for document in documents for token in content_ids(tokenizer, document.text)]
    blocks = {}
    for packing in ("full_sentences", "doc_sentences"):
        write_token_shards(documents, tokenizer, tmp_path / packing, max_seq_length=128, packing=packing,
                           progress=False, tokens_per_shard=5000)
        shards = TokenShards(tmp_path / packing)
        assert len(shards.manifest["shards"]) > 1  # several files, read as one sequence of examples
        for example in shards:
            assert len(example) <= 128 and example[0] == cls and example[-1] == sep
        blocks[packing] = [example[1:-1].tolist() for example in shards]
        # blocks are nearly full: one ends early only where the next sentence would not fit
        assert np.mean([len(block) + 2 for block in blocks[packing]]) > 0.75 * 128
    # DOC-SENTENCES: no block crosses a document, and no separator is added
    assert [token for block in blocks["doc_sentences"] for token in block] == expected
    # FULL-SENTENCES: a document continues the previous one's last block after one [SEP]
    junctions = sum(block.count(sep) for block in blocks["full_sentences"])
    assert 0 < junctions < len(documents)
    assert [token for block in blocks["full_sentences"] for token in block if token != sep] == expected
    assert len(blocks["full_sentences"]) < len(blocks["doc_sentences"])


def test_blocks_break_at_sentence_boundaries(tokenizer, documents, tmp_path):
    paragraph = next(p for d in documents for p in d.text.split("\n") if len(sentence_spans(p)) >= 3)
    sentences = [paragraph[start:end] for start, end in sentence_spans(paragraph)][:3]
    text = " ".join(sentences)
    lengths = [len(content_ids(tokenizer, sentence)) for sentence in sentences]
    capacity = lengths[0] + lengths[1]  # the first two sentences fill a block exactly, the third starts one
    write_token_shards([Document("p", text)], tokenizer, tmp_path / "s", max_seq_length=capacity + 2,
                       packing="doc_sentences", progress=False)
    blocks = [example[1:-1].tolist() for example in TokenShards(tmp_path / "s")]
    assert blocks[0] == content_ids(tokenizer, " ".join(sentences[:2]))
    assert blocks[1][: lengths[2]] == content_ids(tokenizer, sentences[2])[: capacity]


def test_writing_streams_a_generator_without_materialising_it(tokenizer, wiki_shard, tmp_path):
    target = tmp_path / "streamed"
    shard_files_seen_while_reading = []

    def corpus():
        for number, document in enumerate(itertools.islice(read_corpus(wiki_shard), 40)):
            # the shards are written in a temporary folder beside the target until the end
            shard_files_seen_while_reading.append(len(list(tmp_path.glob(".streamed.*.tmp/tokens-*.npy"))))
            yield document

    manifest = write_token_shards(corpus(), tokenizer, target, max_seq_length=64, packing="full_sentences",
                                  progress=False, batch_size=4, tokens_per_shard=20_000)
    assert manifest["documents"] == 40
    # shards were flushed to disk while the generator was still producing documents
    assert shard_files_seen_while_reading[-1] >= 5
    assert len(manifest["shards"]) > shard_files_seen_while_reading[-1]
    assert not list(tmp_path.glob(".streamed.*"))  # the temporary folder became the target


def test_manifest_and_memory_mapped_files(tokenizer, documents, tmp_path):
    manifest = write_token_shards(documents, tokenizer, tmp_path / "s", max_seq_length=64,
                                  sources=[{"path": "wiki-00"}], progress=False)
    assert manifest == read_manifest(tmp_path / "s")
    assert manifest["tokenizer"]["sha256"] == tokenizer_fingerprint(tokenizer)
    assert manifest["tokenizer"]["vocab_size"] == 30522 and manifest["dtype"] == "uint16"
    assert manifest["max_seq_length"] == 64 and manifest["packing"] == "full_sentences"
    assert manifest["sources"] == [{"path": "wiki-00"}]
    shards = TokenShards(tmp_path / "s")
    assert manifest["tokens"] == sum(len(example) for example in shards)
    tokens = np.load(tmp_path / "s" / manifest["shards"][0]["tokens_file"], mmap_mode="r")
    assert isinstance(tokens, np.memmap) and tokens.dtype == np.uint16
    assert shards[-1].tolist() == shards[len(shards) - 1].tolist()
    with pytest.raises(IndexError):
        shards[len(shards)]
    # workers re-map the files: pickling carries no token arrays
    assert len(pickle.dumps(shards)) < 10_000
    assert pickle.loads(pickle.dumps(shards))[3].tolist() == shards[3].tolist()


def test_bad_shard_folders_are_clear_errors(tokenizer, documents, tmp_path):
    with pytest.raises(DataError, match="manifest.json is missing"):
        TokenShards(tmp_path)
    write_token_shards(documents[:2], tokenizer, tmp_path / "s", max_seq_length=64, progress=False)
    (tmp_path / "s" / "offsets-00000.npy").unlink()
    with pytest.raises(DataError, match="offsets-00000.npy.*missing"):
        TokenShards(tmp_path / "s")
    with pytest.raises(ValueError, match="no text"):
        write_token_shards([], tokenizer, tmp_path / "empty", max_seq_length=64, progress=False)
    assert not (tmp_path / "empty").exists()  # nothing half-written


def test_cached_shards_are_reused_and_checked(tokenizer, documents, tmp_path):
    calls = []

    def corpus():
        calls.append(1)
        return iter(documents)

    directory = ensure_token_shards(corpus, tokenizer, tmp_path / "cache", sources=["wiki"], max_seq_length=64,
                                    max_documents=5)
    assert read_manifest(directory)["documents"] == 5
    assert ensure_token_shards(corpus, tokenizer, directory, sources=["wiki"], max_seq_length=64) == directory
    assert len(calls) == 1  # the second call read nothing
    with pytest.raises(DataError, match="max_seq_length"):
        ensure_token_shards(corpus, tokenizer, directory, sources=["wiki"], max_seq_length=128)


def test_epoch_order_is_a_seeded_permutation(tokenizer, documents, tmp_path):
    write_token_shards(documents, tokenizer, tmp_path / "s", max_seq_length=64, progress=False)
    data, again = TokenShardData(tmp_path / "s", seed=5), TokenShardData(tmp_path / "s", seed=5)
    epoch0, epoch1 = data.dataset(0), data.dataset(1)
    assert sorted(epoch0.order.tolist()) == list(range(len(data.shards)))  # every example once
    assert epoch0.order.tolist() == again.dataset(0).order.tolist()  # deterministic in (seed, epoch)
    assert epoch0.order.tolist() != epoch1.order.tolist()
    assert epoch0.order.tolist() != TokenShardData(tmp_path / "s", seed=6).dataset(0).order.tolist()
    assert epoch0[0] == data.shards[int(epoch0.order[0])].tolist()
    assert isinstance(epoch0[0], list) and isinstance(epoch0[0][0], int)


def test_unknown_packing_lists_the_valid_ones(tokenizer, documents, tmp_path):
    with pytest.raises(KeyError, match="doc_sentences, first_block, full_sentences"):
        write_token_shards(documents, tokenizer, Path(tmp_path / "s"), packing="sentences", progress=False)
