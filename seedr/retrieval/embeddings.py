"""An embeddings folder, the on-disk form of an encoded corpus (``seedr encode``; read by ``seedr index`` and
experiments): ``embeddings-00000.npy`` + ``ids-00000.txt`` + ``documents-00000.sha256`` per shard (the
vectors, their ids, and the fingerprint of the documents they were made from: a resumed or repeated
encoding over a corpus whose texts changed is refused), ``settings.json`` (the encoder, its weights'
fingerprint and the options the shards were made with: a resumed encoding must use the same), and
``manifest.json``, written last, whose presence means complete (dimension, dtype, count, shards).

``seedr.retrieval.encode.encode_corpus_to_shards`` writes one; ``load_embeddings`` reads one, lazily
(memory maps; several shards as one ``ShardedEmbeddings`` array).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seedr.data.records import Document
from seedr.io import DataError, atomic_write, iter_lines, read_json, require_file, unique_id

MANIFEST = "manifest.json"
SETTINGS = "settings.json"


def shard_paths(out_dir: Path, shard: int) -> tuple[Path, Path]:
    """The embeddings and ids files of shard number ``shard``."""
    return out_dir / f"embeddings-{shard:05d}.npy", out_dir / f"ids-{shard:05d}.txt"


def fingerprint_path(out_dir: Path, shard: int) -> Path:
    """The file holding the ``documents_fingerprint`` of shard number ``shard`` (written last of its files)."""
    return out_dir / f"documents-{shard:05d}.sha256"


def documents_fingerprint(documents: Sequence[Document]) -> str:
    """sha256 of the documents' ids, titles and texts, in order (each length-prefixed, so no two lists of
    documents run together into the same bytes): what a shard's vectors were computed from, beside the
    encoder and options that ``settings.json`` records."""
    digest = hashlib.sha256()
    for document in documents:
        for part in (document.id, document.title, document.text):
            data = part.encode("utf-8", "surrogatepass")  # a lone surrogate read from JSON ("\ud800") too
            digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


def _corpus_changed(path: Path, shard: int, what: str) -> DataError:
    return DataError(path, f"the corpus changed since these embeddings were made: shard {shard} was made from "
                           f"other {what}, so the corpus differs from the one these shards were made from; "
                           "encode it into a new --out (or give the corpus they were made from)")


def finished_shard(out_dir: Path, shard: int, ids: Sequence[str], fingerprint: str) -> bool:
    """Whether an earlier run wrote shard number ``shard`` whole (its vectors, ids and fingerprint) from the
    documents of ``ids`` and ``documents_fingerprint`` ``fingerprint``; ``False`` for a shard to encode
    (missing, cut short, or written by a seedr that did not fingerprint its documents).

    Raises:
        DataError: the shard was made from other documents (other ids, or other titles or texts: the
            corpus was edited), whose vectors would be kept silently.
    """
    embeddings_path, ids_path = shard_paths(out_dir, shard)
    recorded = fingerprint_path(out_dir, shard)
    if not (embeddings_path.exists() and ids_path.exists() and recorded.exists()):
        return False
    if ids_path.read_text(encoding="utf-8").splitlines() != list(ids):
        raise _corpus_changed(ids_path, shard, "document ids")
    if recorded.read_text(encoding="utf-8").strip() != fingerprint:
        raise _corpus_changed(recorded, shard, "titles or texts under the same ids")
    return True


@dataclass(frozen=True)
class ShardSettings:
    """How the shards of a folder were made; a resumed run must use the same."""

    encoder: dict[str, Any]
    shard_size: int
    dtype: str
    extra: dict[str, Any]


def changed_settings(previous: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    """The (dotted) names of the settings that differ, e.g. ``encoder.fingerprint``."""
    changed = []
    for key in sorted(set(previous) | set(settings)):
        old, new = previous.get(key), settings.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            changed += [f"{key}.{name}" for name in changed_settings(old, new)]
        elif old != new:
            changed.append(key)
    return changed


def record_settings(out_dir: Path, settings: ShardSettings) -> None:
    """Write ``settings.json``, refusing a folder that holds shards made with other settings."""
    recorded = asdict(settings)
    settings_path = out_dir / SETTINGS
    previous = json.loads(settings_path.read_text(encoding="utf-8")) if settings_path.exists() else None
    if previous is not None and previous != recorded and any(out_dir.glob("embeddings-*.npy")):
        raise DataError(settings_path, f"this folder holds embeddings made with other settings "
                                       f"({', '.join(changed_settings(previous, recorded))}); use a new folder "
                                       f"or the same settings")
    if previous != recorded:  # new, or no shard was made with the old settings
        with atomic_write(settings_path) as stream:
            json.dump(recorded, stream, indent=2)


def write_shard(out_dir: Path, shard: int, ids: Sequence[str], vectors: np.ndarray, fingerprint: str) -> None:
    """Write shard number ``shard``: its vectors (N, D), its ids, then the ``documents_fingerprint`` of its
    documents, each file atomically (the last one makes the shard whole: ``finished_shard``)."""
    embeddings_path, ids_path = shard_paths(out_dir, shard)
    with atomic_write(embeddings_path, "wb") as stream:
        np.save(stream, vectors)
    with atomic_write(ids_path) as stream:
        stream.write("".join(f"{doc_id}\n" for doc_id in ids))
    with atomic_write(fingerprint_path(out_dir, shard)) as stream:
        stream.write(fingerprint + "\n")


def write_manifest_when_complete(out_dir: Path, settings: dict[str, Any], dim: int,
                                  shards: list[dict[str, Any]]) -> bool:
    """Write ``manifest.json`` if every shard's files are on disk; whether it is written.

    Each process writes its own shards before it looks at the others', so at least the last one to
    finish sees them all. Shards of other processes are checked for their number of ids and for the
    fingerprint of their documents (``shards[i]["sha256"]``, which the manifest records).
    """
    for number, shard in enumerate(shards):
        embeddings_path, ids_path = out_dir / shard["embeddings"], out_dir / shard["ids"]
        recorded = fingerprint_path(out_dir, number)
        if not (embeddings_path.exists() and ids_path.exists() and recorded.exists()):
            return False
        count = len(ids_path.read_text(encoding="utf-8").splitlines())
        if count != shard["count"]:
            raise DataError(ids_path, f"{count} ids where the corpus gives this shard {shard['count']} documents; "
                                      "the corpus differs from the one these shards were made from")
        if recorded.read_text(encoding="utf-8").strip() != shard["sha256"]:
            raise _corpus_changed(recorded, number, "titles or texts")
    manifest = {**settings, "dim": dim, "count": sum(shard["count"] for shard in shards), "shards": shards}
    with atomic_write(out_dir / MANIFEST) as stream:
        json.dump(manifest, stream, indent=2)
    return True


def read_manifest(directory: str | os.PathLike) -> dict[str, Any]:
    """The manifest of a complete embeddings folder (``DataError`` when the encoding did not finish, or
    the manifest is malformed)."""
    path = Path(directory) / MANIFEST
    if not Path(directory).is_dir():
        raise DataError(directory, "not a folder: --embeddings is the folder `seedr encode` wrote")
    if not path.exists():
        raise DataError(directory, f"no {MANIFEST}: not an embeddings folder, or its encoding did not finish "
                                   "(run `seedr encode` again to resume it)")
    manifest = read_json(path)
    if not isinstance(manifest, dict):
        raise DataError(path, f"expected a JSON object, got {type(manifest).__name__}")
    for field, kind in (("shards", list), ("dim", int), ("dtype", str), ("encoder", dict), ("extra", dict)):
        if not isinstance(manifest.get(field), kind):
            raise DataError(path, f"missing or not {kind.__name__}", field=field)
    for number, shard in enumerate(manifest["shards"]):
        if not (isinstance(shard, dict) and isinstance(shard.get("ids"), str)
                and isinstance(shard.get("embeddings"), str) and isinstance(shard.get("count"), int)):
            raise DataError(path, f"shard {number} needs 'embeddings', 'ids' (file names) and 'count'",
                            field="shards")
    return manifest


class ShardedEmbeddings:
    """The memory-mapped shards of an embeddings folder seen as one read-only ``(N, D)`` array.

    A slice or a selection of rows reads only those rows from disk, so ``DenseIndex.build`` can train
    on a sample and add a chunk at a time without the whole corpus ever being in memory (let alone
    twice, as concatenating the shards first would). ``np.asarray`` gives the whole array.
    """

    def __init__(self, arrays: Sequence[np.ndarray]) -> None:
        self.arrays = list(arrays)
        self.offsets = np.cumsum([0, *(len(array) for array in self.arrays)])  # shard s: rows offsets[s]…[s+1]
        self.shape = (int(self.offsets[-1]), self.arrays[0].shape[1])
        self.dtype = self.arrays[0].dtype

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index: slice | np.ndarray | Sequence[int]) -> np.ndarray:
        if isinstance(index, slice) and index.step in (None, 1):
            start, stop, _ = index.indices(len(self))
            pieces = [array[max(start, low) - low:min(stop, high) - low]
                      for array, low, high in zip(self.arrays, self.offsets[:-1], self.offsets[1:], strict=True)
                      if max(start, low) < min(stop, high)]
            return np.concatenate(pieces) if pieces else np.empty((0, self.shape[1]), self.dtype)
        positions = np.arange(len(self))[index] if isinstance(index, slice) else np.asarray(index)
        shard_of = np.searchsorted(self.offsets, positions, side="right") - 1  # (n,)
        rows = np.empty((len(positions), self.shape[1]), self.dtype)
        for shard in np.unique(shard_of):
            selected = shard_of == shard
            rows[selected] = self.arrays[shard][positions[selected] - self.offsets[shard]]
        return rows

    def __array__(self, dtype: np.dtype | None = None, copy: bool | None = None) -> np.ndarray:
        whole = np.concatenate(self.arrays)
        return whole if dtype is None else whole.astype(dtype)


def load_embeddings(directory: str | os.PathLike) -> tuple[list[str], np.ndarray | ShardedEmbeddings]:
    """``(ids, embeddings)`` of a complete embeddings folder, embeddings (N, H) in the stored dtype.

    Nothing is read until used: one shard is a memory-mapped array, several a ``ShardedEmbeddings``
    over their memory maps.
    Missing, truncated or mis-shaped shards and duplicate ids are ``DataError``s naming the file.
    """
    directory = Path(directory)
    manifest = read_manifest(directory)
    ids: list[str] = []
    seen: dict[str, int] = {}
    arrays = []
    for shard in manifest["shards"]:
        ids_path, embeddings_path = directory / shard["ids"], directory / shard["embeddings"]
        shard_ids = [unique_id(seen, doc_id, ids_path, line) for line, doc_id in iter_lines(ids_path)]
        require_file(embeddings_path)
        try:
            array = np.load(embeddings_path, mmap_mode="r")
        except (ValueError, OSError, EOFError) as error:
            raise DataError(embeddings_path, f"not a complete .npy array ({error})") from None
        if array.ndim != 2 or array.shape[1] != manifest["dim"]:
            raise DataError(embeddings_path, f"array of shape {array.shape}, expected (N, {manifest['dim']})")
        if len(shard_ids) != len(array) or len(shard_ids) != shard["count"]:
            raise DataError(ids_path, f"{len(shard_ids)} ids but {len(array)} embeddings "
                                      f"(manifest: {shard['count']})")
        ids.extend(shard_ids)
        arrays.append(array)
    if not arrays:
        return ids, np.zeros((0, manifest["dim"]), dtype=manifest["dtype"])
    return ids, arrays[0] if len(arrays) == 1 else ShardedEmbeddings(arrays)


__all__ = ["MANIFEST", "SETTINGS", "ShardSettings", "ShardedEmbeddings", "changed_settings", "documents_fingerprint",
           "fingerprint_path", "finished_shard", "load_embeddings", "read_manifest", "record_settings", "shard_paths",
           "write_manifest_when_complete", "write_shard"]
