"""Memory-mapped token shards: a corpus is tokenised once, then trained on for many epochs.

A shard folder holds ``manifest.json`` and, per shard, ``tokens-NNNNN.npy`` (the token ids of all its
examples end to end, ``uint16`` when the vocabulary fits, else ``uint32``) and ``offsets-NNNNN.npy``
(``int64``, example ``i`` is ``tokens[offsets[i]:offsets[i + 1]]``). Both are opened with
``np.load(mmap_mode="r")``, so a corpus larger than memory is trained on without loading it; writing
streams too (documents are tokenised in batches with the fast tokenizer, and only one shard's tokens
are buffered). The folder appears whole or not at all (``atomic_directory``).

Every example is ``[CLS] … [SEP]`` of at most ``max_seq_length`` tokens (512 in all three papers),
cut from the corpus by a *packing* strategy (``PACKINGS``):

- ``full_sentences`` — RoBERTa's FULL-SENTENCES (Liu et al., 2019, §4.2): whole sentences packed
  contiguously up to the length limit, crossing document boundaries with an extra [SEP]. SEED-Encoder
  (Lu et al., 2021, §4.1) pre-trains "following the setup of BERT-base", with the pre-processing of
  Ke et al. (2020) in fairseq and without next-sentence prediction "following Liu et al. (2019)":
  fairseq's ``--sample-break-mode complete`` is this mode. Default for ``mlm``/``seed``.
- ``doc_sentences`` — RoBERTa's DOC-SENTENCES: the same, but a block never crosses a document, so
  each example is one text of one article. Default for CPDAE (Ma et al., 2022, §4.1.3: BERT continued
  on English Wikipedia), whose contrastive loss treats each example as one text and the other
  examples of the batch as other texts; the paper does not state its packing.
- ``first_block`` — one example per document, truncated (the "FirstP" view of a document).

A sentence longer than a block (tables, lists) is cut into block-sized pieces.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tokenizers import Tokenizer
from tqdm.auto import tqdm
from transformers import PreTrainedTokenizerBase

from seedr.config.settings import MAX_LENGTH, PACKING, SEED
from seedr.data.records import Document
from seedr.data.sentences import sentence_spans
from seedr.io import DataError, atomic_directory
from seedr.registry import Registry

SHARD_FORMAT = "seedr-token-shards"
MANIFEST = "manifest.json"
#: 32M tokens a shard: 64 MB as uint16, a bounded write buffer whatever the corpus size.
DEFAULT_TOKENS_PER_SHARD = 1 << 25


# ---------------------------------------------------------------------------------------------- packing

class SentencePacker:
    """Greedy packing of whole sentences into blocks of at most ``capacity`` content tokens.

    ``cross_documents=True`` is FULL-SENTENCES (a [SEP] marks where a new document continues a block),
    ``False`` is DOC-SENTENCES (every document starts a new block).
    """

    needs_sentences = True

    def __init__(self, capacity: int, separator: int, cross_documents: bool) -> None:
        self.capacity, self.separator, self.cross_documents = capacity, separator, cross_documents
        self._pieces: list[np.ndarray] = []
        self._length = 0

    def add(self, ids: np.ndarray, sentence_starts: np.ndarray) -> Iterator[np.ndarray]:
        """Feed one document's token ids with the token index where each sentence starts; yield full blocks."""
        for index, sentence in enumerate(np.split(ids, sentence_starts[1:])):
            continues_block = index == 0 and self._length > 0  # only with cross_documents
            if self._length + continues_block + len(sentence) > self.capacity and self._length:
                yield self._emit()
                continues_block = False
            if continues_block:
                self._append(np.array([self.separator], dtype=ids.dtype))
            while len(sentence) > self.capacity:  # a "sentence" longer than a block: cut it
                yield sentence[: self.capacity]
                sentence = sentence[self.capacity:]
            self._append(sentence)
        if not self.cross_documents:
            yield from self.finish()

    def finish(self) -> Iterator[np.ndarray]:
        """Yield the last, partly filled block."""
        if self._length:
            yield self._emit()

    def _append(self, piece: np.ndarray) -> None:
        if len(piece):
            self._pieces.append(piece)
            self._length += len(piece)

    def _emit(self) -> np.ndarray:
        block = np.concatenate(self._pieces)
        self._pieces, self._length = [], 0
        return block


class FirstBlockPacker:
    """One block per document: its first ``capacity`` tokens."""

    needs_sentences = False

    def __init__(self, capacity: int, separator: int) -> None:
        self.capacity = capacity

    def add(self, ids: np.ndarray, sentence_starts: np.ndarray) -> Iterator[np.ndarray]:
        if len(ids):
            yield ids[: self.capacity]

    def finish(self) -> Iterator[np.ndarray]:
        return iter(())


PACKINGS: Registry[Any] = Registry("packing")
PACKINGS.register("full_sentences")(lambda capacity, separator: SentencePacker(capacity, separator, True))
PACKINGS.register("doc_sentences")(lambda capacity, separator: SentencePacker(capacity, separator, False))
PACKINGS.register("first_block")(FirstBlockPacker)


# ---------------------------------------------------------------------------------------------- writing

def plain_backend(tokenizer: PreTrainedTokenizerBase) -> Tokenizer:
    """The fast tokenizer's Rust backend without the padding/truncation a checkpoint may carry."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ValueError(f"tokenizer {tokenizer.name_or_path!r} has no fast (Rust) backend; token shards "
                         "need one to tokenise a corpus in batches")
    backend = Tokenizer.from_str(backend.to_str())
    backend.no_padding()
    backend.no_truncation()
    return backend


def tokenizer_fingerprint(tokenizer: PreTrainedTokenizerBase) -> str:
    """SHA-256 of the tokenizer's full definition (vocabulary, normaliser, pre-tokeniser)."""
    return hashlib.sha256(plain_backend(tokenizer).to_str().encode("utf-8")).hexdigest()


def _boundary_ids(tokenizer: PreTrainedTokenizerBase) -> tuple[int, int]:
    cls = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
    sep = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
    if cls is None or sep is None:
        raise ValueError(f"tokenizer {tokenizer.name_or_path!r} defines no [CLS]/[SEP] (or <s>/</s>) token")
    return cls, sep


def _sentence_starts(text: str, offsets: Sequence[tuple[int, int]]) -> np.ndarray:
    """Token index at which each sentence of ``text`` starts (always includes 0)."""
    token_starts = np.fromiter((start for start, _ in offsets), dtype=np.int64, count=len(offsets))
    sentence_starts = np.searchsorted(token_starts, [start for start, _ in sentence_spans(text)])
    starts = np.unique(np.concatenate([[0], sentence_starts]))
    return starts[starts < len(offsets)]


class _ShardFileWriter:
    """Buffers at most one shard of examples, then writes it as ``tokens-N.npy`` + ``offsets-N.npy``."""

    def __init__(self, directory: Path, dtype: type, tokens_per_shard: int, cls: int, sep: int) -> None:
        self.directory, self.dtype, self.tokens_per_shard = directory, dtype, tokens_per_shard
        self.prefix, self.suffix = np.array([cls], dtype=dtype), np.array([sep], dtype=dtype)
        self.pieces: list[np.ndarray] = []
        self.lengths: list[int] = []
        self.buffered = 0
        self.shards: list[dict[str, Any]] = []

    def add(self, block: np.ndarray) -> None:
        self.pieces += [self.prefix, block, self.suffix]
        self.lengths.append(len(block) + 2)
        self.buffered += len(block) + 2
        if self.buffered >= self.tokens_per_shard:
            self.flush()

    def flush(self) -> None:
        if not self.lengths:
            return
        number = len(self.shards)
        names = {"tokens_file": f"tokens-{number:05d}.npy", "offsets_file": f"offsets-{number:05d}.npy"}
        np.save(self.directory / names["tokens_file"], np.concatenate(self.pieces).astype(self.dtype, copy=False))
        np.save(self.directory / names["offsets_file"], np.concatenate([[0], np.cumsum(self.lengths)]).astype(np.int64))
        self.shards.append({**names, "examples": len(self.lengths), "tokens": self.buffered})
        self.pieces, self.lengths, self.buffered = [], [], 0


#: Documents tokenised per call of the (fast, batched) tokenizer while shards are written.
TOKENIZE_BATCH_SIZE = 256


def write_token_shards(documents: Iterable[Document], tokenizer: PreTrainedTokenizerBase,
                       directory: str | os.PathLike, *, max_seq_length: int = MAX_LENGTH,
                       packing: str = PACKING, sources: Any = (),
                       tokens_per_shard: int = DEFAULT_TOKENS_PER_SHARD, batch_size: int = TOKENIZE_BATCH_SIZE,
                       progress: bool = True) -> dict[str, Any]:
    """Tokenise ``documents`` (any iterable, consumed once, never materialised) into a shard folder.

    Only ``Document.text`` is used (titles are headers, which BERT's Wikipedia pre-processing drops).
    ``sources`` (JSON-serialisable) describes the corpus in the manifest. Returns the manifest that is
    written beside the shards.
    """
    if max_seq_length < 3:
        raise ValueError(f"max_seq_length must leave room for [CLS], [SEP] and text, got {max_seq_length}")
    backend = plain_backend(tokenizer)
    cls, sep = _boundary_ids(tokenizer)
    dtype = np.uint16 if len(tokenizer) <= np.iinfo(np.uint16).max + 1 else np.uint32
    packer = PACKINGS.get(packing)(max_seq_length - 2, sep)
    document_count = 0
    with atomic_directory(directory) as temporary:
        writer = _ShardFileWriter(temporary, dtype, tokens_per_shard, cls, sep)
        bar = tqdm(desc="tokenising", unit=" docs", disable=not progress, dynamic_ncols=True)
        stream = iter(documents)
        for batch in iter(lambda: list(itertools.islice(stream, batch_size)), []):
            texts = [document.text for document in batch]
            for text, encoding in zip(texts, backend.encode_batch(texts, add_special_tokens=False)):
                ids = np.asarray(encoding.ids, dtype=dtype)  # (T,)
                starts = _sentence_starts(text, encoding.offsets) if packer.needs_sentences else ids[:0]
                for block in packer.add(ids, starts):
                    writer.add(block)
            document_count += len(batch)
            bar.update(len(batch))
        for block in packer.finish():
            writer.add(block)
        writer.flush()
        bar.close()
        if not writer.shards:
            raise ValueError(f"no text to tokenise for {directory} (read {document_count} documents)")
        manifest = {
            "format": SHARD_FORMAT, "version": 1,
            "tokenizer": {"name": str(tokenizer.name_or_path), "sha256": tokenizer_fingerprint(tokenizer),
                          "vocab_size": len(tokenizer), "cls_token_id": cls, "sep_token_id": sep},
            "max_seq_length": max_seq_length, "packing": packing, "dtype": np.dtype(dtype).name,
            "documents": document_count, "examples": sum(s["examples"] for s in writer.shards),
            "tokens": sum(s["tokens"] for s in writer.shards), "shards": writer.shards,
            "sources": list(sources), "created": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        (temporary / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return manifest


# ---------------------------------------------------------------------------------------------- reading

def read_manifest(directory: str | os.PathLike) -> dict[str, Any]:
    """The manifest of a shard folder, checked."""
    path = Path(directory) / MANIFEST
    if not path.exists():
        raise DataError(path, "no token shards here (manifest.json is missing); shards are written by "
                              "seedr.data.shards.write_token_shards (seedr pretrain does it for you)")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise DataError(path, f"malformed JSON ({error.msg})", line=error.lineno) from None
    if not isinstance(manifest, dict) or manifest.get("format") != SHARD_FORMAT:
        raise DataError(path, f"not a {SHARD_FORMAT} manifest", field="format")
    for shard in manifest.get("shards", []):
        for key in ("tokens_file", "offsets_file"):
            if not (Path(directory) / shard[key]).exists():
                raise DataError(Path(directory) / shard[key], "shard file listed in manifest.json is missing")
    return manifest


class TokenShards(Sequence[np.ndarray]):
    """Random access to the examples of a shard folder; ``shards[i]`` is a read-only ``np.ndarray`` view.

    The arrays are memory-mapped on first access, and reopened (not copied) in DataLoader workers.
    """

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)
        self.manifest = read_manifest(self.directory)
        self._ends = np.cumsum([shard["examples"] for shard in self.manifest["shards"]])  # (S,)
        self._arrays: list[tuple[np.ndarray, np.ndarray]] | None = None

    def _open(self) -> list[tuple[np.ndarray, np.ndarray]]:
        if self._arrays is None:
            self._arrays = [(np.load(self.directory / shard["tokens_file"], mmap_mode="r"),
                             np.load(self.directory / shard["offsets_file"], mmap_mode="r"))
                            for shard in self.manifest["shards"]]
        return self._arrays

    def __len__(self) -> int:
        return int(self._ends[-1]) if len(self._ends) else 0

    def __getitem__(self, index: int) -> np.ndarray:  # type: ignore[override]
        if not -len(self) <= index < len(self):
            raise IndexError(f"example {index} out of range ({len(self)} examples)")
        index %= len(self)
        shard = int(np.searchsorted(self._ends, index, side="right"))
        local = index - (int(self._ends[shard - 1]) if shard else 0)
        tokens, offsets = self._open()[shard]
        return tokens[offsets[local]: offsets[local + 1]]

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_arrays": None}  # workers map the files again instead of pickling them


class ShuffledExamples(torch.utils.data.Dataset):
    """The examples of ``shards`` in the order ``order``; items are token-id lists (``list[int]``)."""

    def __init__(self, shards: TokenShards, order: np.ndarray) -> None:
        self.shards, self.order = shards, order

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, index: int) -> list[int]:
        return self.shards[int(self.order[index])].tolist()


@dataclass
class TokenShardData:
    """``TrainData`` over a shard folder: every epoch a fresh permutation seeded by ``(seed, epoch)``,
    so a resumed run sees exactly the batches an uninterrupted one would have seen."""

    directory: str | os.PathLike
    seed: int = SEED

    def __post_init__(self) -> None:
        self.shards = TokenShards(self.directory)

    def dataset(self, epoch: int) -> ShuffledExamples:
        order = np.random.default_rng([self.seed, epoch]).permutation(len(self.shards))  # (N,)
        return ShuffledExamples(self.shards, order)


# ---------------------------------------------------------------------------------------------- caching

def source_fingerprint(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Path, size and modification time of a corpus file, or of every file under a corpus folder."""
    root = Path(path).expanduser().resolve()
    if not root.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    return [{"path": str(p), "bytes": p.stat().st_size, "mtime_ns": p.stat().st_mtime_ns} for p in files]


def shard_key(sources: Any, tokenizer: PreTrainedTokenizerBase, max_seq_length: int, packing: str,
              max_documents: int | None) -> str:
    """A short, stable name for the shards of one (corpus, tokenizer, length, packing) combination."""
    description = json.dumps([sources, tokenizer_fingerprint(tokenizer), max_seq_length, packing,
                              max_documents], sort_keys=True)
    return hashlib.sha256(description.encode("utf-8")).hexdigest()[:16]


def ensure_token_shards(documents: Iterable[Document] | Callable[[], Iterable[Document]],
                        tokenizer: PreTrainedTokenizerBase, directory: str | os.PathLike, *, sources: Sequence[Any],
                        max_seq_length: int = MAX_LENGTH, packing: str = PACKING,
                        max_documents: int | None = None, progress: bool = True) -> Path:
    """The shard folder ``directory``, tokenising ``documents`` into it only if it does not exist yet.

    ``documents`` is an iterable or a zero-argument callable returning one (not called when the shards
    exist). Existing shards must have been made with the same tokenizer, length and packing.
    """
    directory = Path(directory)
    if (directory / MANIFEST).exists():
        manifest = read_manifest(directory)
        expected = {"tokenizer": tokenizer_fingerprint(tokenizer), "max_seq_length": max_seq_length,
                    "packing": packing}
        found = {"tokenizer": manifest["tokenizer"]["sha256"], "max_seq_length": manifest["max_seq_length"],
                 "packing": manifest["packing"]}
        for key, wanted in expected.items():
            if wanted != found[key]:
                raise DataError(directory / MANIFEST, f"these shards were made with another {key} "
                                f"({found[key]!r}, wanted {wanted!r})", field=key)
        return directory
    stream = documents() if callable(documents) else documents
    if max_documents is not None:
        stream = itertools.islice(stream, max_documents)
    write_token_shards(stream, tokenizer, directory, max_seq_length=max_seq_length, packing=packing,
                       sources=sources, progress=progress)
    return directory


__all__ = [
    "PACKINGS",
    "FirstBlockPacker",
    "SentencePacker",
    "ShuffledExamples",
    "TokenShardData",
    "TokenShards",
    "ensure_token_shards",
    "plain_backend",
    "read_manifest",
    "shard_key",
    "source_fingerprint",
    "tokenizer_fingerprint",
    "write_token_shards",
]
