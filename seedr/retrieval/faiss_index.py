"""Dense vector index over document embeddings (faiss), saved as a self-describing folder.

An index folder (Pyserini's layout, plus the config that made it) holds::

    index.faiss   the faiss index (``faiss.write_index``)
    ids.txt       the document id of each vector, in insertion order
    index.json    factory, metric, dim, count, encoder settings, creation time

Any ``faiss.index_factory`` string that faiss builds without crashing is accepted (``check_factory``):
``"Flat"`` (exact, the papers' setting for MS MARCO and NQ), ``"HNSW32"`` (graph, DPR's fast option),
``"IVF4096,PQ64np"`` (inverted lists + product quantisation; trained on a sample of the vectors; ``np``
skips faiss's polysemous training, which only its Hamming-filtered search uses and which makes training
over 10× slower). Metrics: ``ip``
(inner product, the dot-product similarity of DPR/ANCE/SEED-Encoder), ``l2``, and ``cosine``
(vectors, and queries at search time, are L2-normalised, then inner product).

Scores are "higher is better": for ``l2`` the score is the negated squared distance. Results are
sorted by (−score, document id), so tied documents always come out in the same order.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from tqdm.auto import tqdm

from seedr.data.runs import id_ranks
from seedr.io import DataError, atomic_directory, disk_full, iter_lines, no_space_left, read_json

METRICS = {"ip": faiss.METRIC_INNER_PRODUCT, "cosine": faiss.METRIC_INNER_PRODUCT, "l2": faiss.METRIC_L2}

#: Extra candidates fetched beyond k so that documents tied with the k-th are ordered by id before the cut.
TIE_MARGIN = 16
#: Vectors added per faiss call, at most: what is held beside the index while building (the chunk's mapped
#: pages or its float32 copy), 24 MiB at 384 dimensions; and at least (faiss's per-call cost).
_ADD_CHUNK = 16_384
_MIN_ADD_CHUNK = 1_024


def _add_chunk(count: int) -> int:
    """Vectors per ``add`` for an index of ``count``: a sixteenth of it within the bounds above, so that
    the chunk held beside the codes while building stays small against them at every size."""
    return max(1, min(_ADD_CHUNK, max(_MIN_ADD_CHUNK, -(-count // 16))))


def _reserve_codes(index: faiss.Index, count: int) -> None:
    """Allocate the flat code array of ``index`` (Flat, SQ, PQ; HNSW's storage) for ``count`` vectors at
    once. Added chunk by chunk, faiss grows it as a ``std::vector`` does, doubling, and holds old and new
    buffers while copying: up to three times the codes at the peak. Resizing to the full size and back
    to zero keeps the capacity, so every later ``add`` fits in place. Other indexes (IVF lists) are left
    alone."""
    storage = faiss.downcast_index(index.storage) if isinstance(index, faiss.IndexHNSW) else index
    if isinstance(storage, faiss.IndexFlatCodes) and storage.ntotal == 0:
        storage.codes.resize(count * storage.code_size)
        storage.codes.resize(0)


def _drop_mapped_pages(embeddings: Any) -> None:
    """Let go of the pages of read-only memory-mapped embeddings already read (``madvise(DONTNEED)``).

    Read once and copied into the index, they would otherwise stay mapped in this process and count in
    its resident memory (the whole corpus a second time by the last chunk); the file stays in the page
    cache, and a later read maps the pages again. Copy-on-write and writable maps are left alone, since
    dropping a private page would lose what was written to it. ``ShardedEmbeddings`` (``.arrays``)
    are handled shard by shard."""
    for array in getattr(embeddings, "arrays", [embeddings]):
        mapping = getattr(array, "_mmap", None)
        if mapping is not None and getattr(array, "mode", None) == "r" and hasattr(mmap, "MADV_DONTNEED"):
            mapping.madvise(mmap.MADV_DONTNEED)


def _as_float32(vectors: np.ndarray, normalize: bool) -> np.ndarray:
    """Contiguous float32 for faiss; normalised in a copy, never in the caller's array."""
    if not normalize:
        return np.ascontiguousarray(vectors, dtype=np.float32)
    vectors = np.array(vectors, dtype=np.float32, order="C", copy=True)
    faiss.normalize_L2(vectors)
    return vectors


def _finite(vectors: np.ndarray, ids: list[str], positions: np.ndarray) -> np.ndarray:
    """``vectors``, refused when one is NaN or infinite (made by a diverged model): faiss would index them."""
    broken = ~np.isfinite(vectors).all(axis=1)
    if broken.any():
        raise ValueError(f"the embedding of document {ids[int(positions[np.argmax(broken)])]!r} is not finite "
                         f"(NaN or inf; {int(broken.sum())} such in this chunk): encode with a working model")
    return vectors


def _training_points_needed(index: faiss.Index) -> int:
    """The fewest training vectors faiss can train ``index`` on: one per inverted list (k-means needs at
    least as many points as centroids) and 2^bits per product-quantiser codebook."""
    needed = 1
    ivf = faiss.try_extract_index_ivf(index)
    if ivf is not None:
        needed = max(needed, ivf.nlist)
    quantizer = getattr(faiss.downcast_index(ivf) if ivf is not None else faiss.downcast_index(index), "pq", None)
    if quantizer is not None:
        needed = max(needed, 1 << quantizer.nbits)
    return needed


#: Numbers of a factory string that faiss takes without checking, with their least value (what is below
#: crashes or hangs the process: ``HNSW0`` fails an assertion and aborts, ``HNSW1`` and ``RR0`` segfault,
#: ``NSG2`` never finishes its graph; ``IVF0`` builds an index whose search fails) and whether the input
#: dimension bounds them from above (a PCA keeps at most the dimensions it is given).
_FACTORY_NUMBERS = (
    (re.compile(r"HNSW(\d+)"), "links per vector", 2, False),
    (re.compile(r"NSG(\d+)"), "links per vector", 4, False),
    (re.compile(r"IVF(\d+)"), "inverted lists", 1, False),
    (re.compile(r"PCAW?R?(\d+)"), "output dimensions", 1, True),
    (re.compile(r"RR(\d+)"), "output dimensions", 1, False),
)


#: Factory strings built without a probe: the common forms, whose numbers ``_FACTORY_NUMBERS`` bounds and
#: whose other values faiss checks itself (``PQ5`` over 32 dimensions, ``OPQ0``: its RuntimeError, not a
#: crash).
_PROBE_FREE = re.compile(r"HNSW\d+(,Flat)?"
                         r"|((OPQ\d+|PCAR?\d+),)?(IVF\d+(_HNSW\d+)?,)?(Flat|PQ\d+(np)?|SQ(4|6|8|fp16))")
#: Random vectors a probe builds its index over: enough to train IVF up to 1024 lists and codebooks up to
#: 10 bits, and well above the few hundred at which faiss itself breaks (OPQ16 trained on 256 vectors
#: corrupts its heap, on 600 it builds): a probe must not refuse what real vectors build.
_PROBE_VECTORS = 1024
#: Seconds a probe may take before the factory is refused as one that does not finish.
_PROBE_SECONDS = 120


def check_factory(factory: str, dim: int, metric: str = "ip") -> None:
    """Refuse, before faiss sees it, a factory string that would crash faiss or build a useless index over
    vectors of ``dim`` dimensions: the numbers of ``_FACTORY_NUMBERS`` below their least value, a PCA to
    more dimensions than it is given, and an ``IDMap``/``IDMap2`` prefix (seedr keeps the document ids
    itself, in ``ids.txt``; faiss's id map refuses plain ``add``). More inverted lists than training
    vectors are refused by ``DenseIndex.build``, which knows the sample.

    Any other string is probed in a child process (``_probe_factory``) unless it is a common form that
    ``_PROBE_FREE`` knows to be safe: faiss's grammar has many more numbers it takes unchecked than a list
    of patterns can keep up with (``PQ8x0`` dies of SIGFPE, ``RQ0x0``, ``LSQ2x0`` and ``PQ8x0np`` of
    SIGSEGV, in training, adding or searching), and a crash ends seedr with no message and its lock left
    behind, so the only sure test of a string is to build with it where a crash costs nothing. The probe
    costs about 0.3 s (a fresh interpreter importing faiss: a forked one would inherit the OpenMP and
    torch threads of this process, which a child cannot use safely), plus its training: little for
    quantisers, longer for an ``OPQ16_64`` rotation (tens of seconds at 384 dimensions), which the common
    ``OPQ16,...`` form skips."""
    prefix = re.match(r"\s*(IDMap2?)\b", factory)
    if prefix:
        name = prefix.group(1)
        raise ValueError(f"faiss factory {factory!r}: {name} is not needed, seedr keeps the document ids itself "
                         f"(ids.txt): drop the '{name},' prefix")
    for pattern, what, least, within_dim in _FACTORY_NUMBERS:
        for match in pattern.finditer(factory):
            number = int(match.group(1))
            if number < least:
                raise ValueError(f"faiss factory {factory!r}: {match.group(0)} asks for {number} {what}, which must "
                                 f"be at least {least}")
            if within_dim and number > dim:
                raise ValueError(f"faiss factory {factory!r}: {match.group(0)} asks for {number} {what} from vectors "
                                 f"of {dim}: at most {dim}")
    if not _PROBE_FREE.fullmatch(factory):
        _probe_factory(factory, dim, metric)


def _probe_factory(factory: str, dim: int, metric: str) -> None:
    """Build ``factory`` over random vectors in a child process (``_probe``) and refuse it, in one line, when
    the child dies of a signal, does not finish in ``_PROBE_SECONDS``, or fails to run at all."""
    # -P: a seedr or faiss module in the working folder is not imported; this process's path: its own seedr is
    command = [sys.executable, "-P", "-c", "import sys; from seedr.retrieval.faiss_index import _probe; "
               "_probe(sys.argv[1], int(sys.argv[2]), sys.argv[3])", factory, str(dim), metric]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)}
    try:
        probe = subprocess.run(command, capture_output=True, text=True, timeout=_PROBE_SECONDS, check=False,
                               env=environment)
    except subprocess.TimeoutExpired:
        raise ValueError(f"faiss factory {factory!r}: an index of {_PROBE_VECTORS} random vectors of {dim} "
                         f"dimensions did not finish building in {_PROBE_SECONDS} s") from None
    if probe.returncode < 0:
        crash = signal.Signals(-probe.returncode).name
        raise ValueError(f"faiss factory {factory!r} crashes faiss ({crash}) in an index of {dim} dimensions: one "
                         f"of its numbers is out of the range faiss can build (a code of 0 bits, 0 codebooks ...)")
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or [f"exit status {probe.returncode}"])[-1]
        raise ValueError(f"faiss factory {factory!r} could not be tried in a child process: {last}")


def _probe(factory: str, dim: int, metric: str) -> None:
    """What ``_probe_factory``'s child runs: make, train, add and search (a crash has been found in each).
    faiss's own refusals end the probe quietly: the real build meets them over the real vectors and says
    so in its own words (a probe's 1024 vectors cannot train 4096 lists, which real vectors may)."""
    vectors = np.random.default_rng(0).standard_normal((_PROBE_VECTORS, dim)).astype(np.float32)
    try:
        index = faiss.index_factory(dim, factory, METRICS[metric])
        if not index.is_trained:
            index.train(vectors)
        index.add(vectors)
        index.search(vectors[:4], 8)
    except (RuntimeError, MemoryError):
        return


def _read_index(path: Path, factory: object, mmap: bool) -> faiss.Index:
    """``faiss.read_index`` of an index made by ``factory``, memory-mapped with ``mmap``; faiss's
    ``RuntimeError`` when it cannot read it."""
    flags = 0
    if mmap:  # the two flags use different readers: one per kind of index
        ivf = "IVF" in (factory if isinstance(factory, str) else "")
        flags = (faiss.IO_FLAG_MMAP if ivf else faiss.IO_FLAG_MMAP_IFC) | faiss.IO_FLAG_READ_ONLY
    return faiss.read_index(str(path), flags)


def _faiss_reason(error: RuntimeError | MemoryError) -> str:
    """What a faiss C++ error (``Error in <function> at <file>:<line>: <reason>``, often many lines) says, in
    one line: its reason."""
    if isinstance(error, MemoryError):
        return f"out of memory ({error})"
    lines = str(error).strip().splitlines()
    if not lines:
        return type(error).__name__
    reason = re.sub(r"^Error in .*? at \S+:\d+: ", "", lines[-1])
    return re.sub(r"^Error: '.*?' failed: (?=.)", "", reason)  # the assertion, when a sentence explains it


def _order_by_score_then_id(scores: np.ndarray, id_rank: np.ndarray) -> np.ndarray:
    """Positions of ``scores`` sorted by score descending, then by ``id_rank`` ascending."""
    return np.lexsort((id_rank, -scores))


def brute_force_topk(queries: np.ndarray, documents: np.ndarray, k: int, metric: str = "ip",
                     ids: list[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k in numpy: ``(scores (Q, k), document positions (Q, k))``, the reference for tests.

    Same conventions as ``DenseIndex.search``: higher score first (negated squared L2 distance for
    ``l2``), ties by document id when ``ids`` are given, else by position.
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; valid: {', '.join(METRICS)}")
    queries = np.asarray(queries, dtype=np.float64)
    documents = np.asarray(documents, dtype=np.float64)
    if metric == "cosine":
        queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
        documents = documents / np.linalg.norm(documents, axis=1, keepdims=True)
    if metric == "l2":
        scores = (2 * queries @ documents.T - (queries ** 2).sum(1, keepdims=True)
                  - (documents ** 2).sum(1)[None, :])  # (Q, N) = -||q - d||²
    else:
        scores = queries @ documents.T  # (Q, N)
    id_rank = id_ranks(ids) if ids is not None else np.arange(len(documents))
    k = min(k, len(documents))
    positions = np.stack([_order_by_score_then_id(row, id_rank)[:k] for row in scores])  # (Q, k)
    return np.take_along_axis(scores, positions, axis=1), positions


def use_gpu_clustering(index: faiss.Index) -> bool:
    """Train an IVF index's coarse quantizer with k-means on every GPU, if faiss sees any.

    The faiss wiki's recipe for large IVF indexes: set ``clustering_index`` to a GPU flat index of
    the same metric; training (the expensive part) runs there, adding and the saved index stay on the
    CPU, so an index larger than GPU memory is built the same way. Returns whether GPUs are used.
    """
    ivf = faiss.try_extract_index_ivf(index)
    if ivf is None or faiss.get_num_gpus() == 0:
        return False
    ivf.clustering_index = faiss.index_cpu_to_all_gpus(faiss.IndexFlat(ivf.d, ivf.metric_type))
    return True


#: Query vectors per faiss search call (bounds the score matrix a call holds).
SEARCH_BATCH_SIZE = 4096


@dataclass
class DenseIndex:
    """A faiss index with the document id of every vector and the config that built it."""

    index: faiss.Index
    ids: list[str]
    config: dict[str, Any]
    _id_rank: np.ndarray = field(init=False, repr=False)
    _positions: dict[str, int] | None = field(default=None, init=False, repr=False)  # by ``vectors``, once

    def __post_init__(self) -> None:
        if self.index.ntotal != len(self.ids):
            raise ValueError(f"the faiss index holds {self.index.ntotal} vectors but {len(self.ids)} ids")
        self._id_rank = id_ranks(self.ids)  # the tie-breaker, an integer per vector

    @property
    def metric(self) -> str:
        return self.config["metric"]

    @classmethod
    def build(cls, embeddings: np.ndarray, ids: list[str], factory: str = "Flat", metric: str = "ip",
              train_sample: int | None = None, seed: int = 0, encoder: dict[str, Any] | None = None,
              show_progress: bool = False, gpu: bool = True) -> DenseIndex:
        """Index ``embeddings`` (N, H) under ``ids`` with ``faiss.index_factory(H, factory, metric)``.

        Indexes that need training (IVF, PQ) are trained on ``train_sample`` vectors drawn with
        ``seed`` (all vectors when ``None``). Vectors are added in chunks, so memory-mapped float16
        shards (or ``ShardedEmbeddings`` over many shards) are read and converted a chunk at a time.
        ``encoder`` (the encoder's settings) is recorded. With ``gpu`` and a faiss built with GPUs,
        the k-means of IVF training runs on all GPUs (``use_gpu_clustering``); the index itself stays
        in CPU memory, the same index either way up to k-means' floating-point rounding.

        A factory that faiss would crash on, or that does not fit the vectors, is a ``ValueError`` before
        faiss sees it (``check_factory``); faiss's own refusals while building (its ``RuntimeError``, many
        lines of C++) are a one-line ``ValueError``.
        """
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; valid: {', '.join(METRICS)}")
        if len(embeddings) != len(ids):
            raise ValueError(f"{len(embeddings)} embeddings but {len(ids)} ids")
        if len(set(ids)) != len(ids):
            duplicate = next(doc_id for doc_id, seen in Counter(ids).items() if seen > 1)
            raise ValueError(f"document ids are not unique: {duplicate!r} is there {Counter(ids)[duplicate]} times")
        count, dim = embeddings.shape
        check_factory(factory, dim, metric)
        try:
            return cls._build(embeddings, ids, factory, metric, train_sample, seed, encoder, show_progress, gpu)
        except (RuntimeError, MemoryError) as error:  # faiss's refusal; std::bad_alloc: RQ1x30's 2^30 codes
            raise ValueError(f"faiss cannot build {factory!r} over {count} vectors of {dim} dimensions: "
                             f"{_faiss_reason(error)}") from None

    @classmethod
    def _build(cls, embeddings: np.ndarray, ids: list[str], factory: str, metric: str, train_sample: int | None,
               seed: int, encoder: dict[str, Any] | None, show_progress: bool, gpu: bool) -> DenseIndex:
        count, dim = embeddings.shape
        normalize = metric == "cosine"
        index = faiss.index_factory(dim, factory, METRICS[metric])
        if gpu:
            use_gpu_clustering(index)
        if not index.is_trained:
            sample = np.arange(count)
            if train_sample is not None and train_sample < count:
                sample = np.sort(np.random.default_rng(seed).choice(count, size=train_sample, replace=False))
            needed = _training_points_needed(index)
            if len(sample) < needed:
                raise ValueError(f"{factory!r} needs at least {needed} training vectors, got {len(sample)}: "
                                 f"use fewer lists/centroids, more vectors (--train-sample), or Flat/HNSW")
            index.train(_finite(_as_float32(embeddings[sample], normalize), ids, sample))
        _drop_mapped_pages(embeddings)  # the training sample's pages
        _reserve_codes(index, count)
        chunk = _add_chunk(count)
        for start in tqdm(range(0, count, chunk), desc="index", unit="chunk", disable=not show_progress):
            positions = np.arange(start, min(start + chunk, count))
            index.add(_finite(_as_float32(embeddings[start:start + chunk], normalize), ids, positions))
            _drop_mapped_pages(embeddings)
        config = {"factory": factory, "metric": metric, "dim": int(dim), "count": int(count),
                  "train_sample": train_sample, "seed": seed, "encoder": encoder,
                  "created": datetime.now(UTC).isoformat(timespec="seconds"),
                  "faiss": faiss.__version__}
        return cls(index, list(ids), config)

    def vectors(self, ids: list[str]) -> np.ndarray:
        """The indexed vectors of documents ``ids`` (as the index stores them: a PQ index's are its codes'
        reconstructions), for pseudo-relevance feedback (``seedr.retrieval.feedback``)."""
        if self._positions is None:
            self._positions = {doc: position for position, doc in enumerate(self.ids)}
            ivf = faiss.try_extract_index_ivf(self.index)
            if ivf is not None:  # an inverted file finds a vector by its id only through a direct map
                ivf.make_direct_map()
        positions = np.array([self._positions[doc] for doc in ids], dtype=np.int64)
        return self.index.reconstruct_batch(positions)

    def set_search_parameters(self, **parameters: float) -> None:
        """Set faiss search-time parameters, e.g. ``nprobe=64`` (IVF) or ``efSearch=128`` (HNSW)."""
        space = faiss.ParameterSpace()
        for name, value in parameters.items():
            try:
                space.set_index_parameter(self.index, name, value)
            except RuntimeError:
                factory = self.config["factory"]
                raise ValueError(f"parameter {name!r} does not apply to a {factory!r} index") from None

    def search(self, query_embeddings: np.ndarray, k: int, batch_size: int = SEARCH_BATCH_SIZE,
               show_progress: bool = False) -> tuple[np.ndarray, list[list[str]]]:
        """Top ``k`` documents of each query: ``(scores (Q, k'), ids Q×k')``, k' = min(k, count).

        Sorted by (−score, document id); ``TIE_MARGIN`` extra candidates are fetched so that ties
        at the cut are resolved by id too (for approximate indexes, among the candidates found).
        """
        queries = _as_float32(query_embeddings, self.metric == "cosine")
        if queries.ndim != 2 or queries.shape[1] != self.config["dim"]:
            raise ValueError(f"query embeddings of shape {queries.shape} do not match the index dimension "
                             f"{self.config['dim']}")
        k = min(k, len(self.ids))
        fetch = min(k + TIE_MARGIN, len(self.ids))
        all_scores = np.empty((len(queries), k), dtype=np.float32)
        all_ids: list[list[str]] = []
        starts = range(0, len(queries), batch_size)
        for start in tqdm(starts, desc="search", unit="batch", disable=not show_progress):
            scores, positions = self.index.search(queries[start:start + batch_size], fetch)  # (B, fetch) each
            if self.metric == "l2":
                scores = -scores
            for row, (row_scores, row_positions) in enumerate(zip(scores, positions), start=start):
                found = row_positions >= 0  # faiss pads with -1 when it finds fewer than asked
                row_scores, row_positions = row_scores[found], row_positions[found]
                order = _order_by_score_then_id(row_scores, self._id_rank[row_positions])[:k]
                kept = len(order)
                all_scores[row, :kept] = row_scores[order]
                all_scores[row, kept:] = -np.inf
                all_ids.append([self.ids[p] for p in row_positions[order]] + [""] * (k - kept))
        return all_scores, all_ids

    def save(self, directory: str | os.PathLike) -> Path:
        """Write the index folder atomically (``index.faiss``, ``ids.txt``, ``index.json``).

        The faiss file is read back before the folder is moved into place: faiss writes some indexes it
        cannot read (``PRQ0x2x4``: ``'aq.M > 0' failed``), which would leave a folder no search can open
        and that the next ``seedr index`` refuses to replace without ``--overwrite``. Such a factory is
        a one-line ``ValueError`` and ``directory`` is left as it was."""
        directory = Path(directory)
        factory = self.config.get("factory")
        with atomic_directory(directory) as temporary:
            try:
                faiss.write_index(self.index, str(temporary / "index.faiss"))
            except RuntimeError as error:  # faiss's C++ error, many lines long
                if disk_full(error):
                    raise no_space_left(directory / "index.faiss") from None
                raise
            try:  # memory-mapped, as `search --mmap` reads it: no second copy of a large index in memory
                _read_index(temporary / "index.faiss", factory, mmap=True)
            except RuntimeError as error:
                raise ValueError(f"faiss factory {factory!r} builds an index that faiss cannot read back "
                                 f"({_faiss_reason(error)}): choose another factory") from None
            (temporary / "ids.txt").write_text("".join(f"{i}\n" for i in self.ids), encoding="utf-8")
            (temporary / "index.json").write_text(json.dumps(self.config, indent=2), encoding="utf-8")
        return directory

    @classmethod
    def load(cls, directory: str | os.PathLike, mmap: bool = False) -> DenseIndex:
        """Read an index folder; ``mmap=True`` memory-maps the faiss file instead of reading it.

        Memory-mapped, an index larger than memory is searched from disk through the page cache:
        ``IO_FLAG_MMAP`` maps IVF inverted lists, ``IO_FLAG_MMAP_IFC`` the codes of flat-code
        indexes (Flat, PQ, HNSW's storage), both without a copy. Results are identical.
        """
        directory = Path(directory)
        for name in ("index.faiss", "ids.txt", "index.json"):
            if not (directory / name).exists():
                raise DataError(directory, f"not an index folder: {name} is missing")
        config = read_json(directory / "index.json")
        if not isinstance(config, dict) or not isinstance(config.get("metric"), str) or "dim" not in config:
            raise DataError(directory / "index.json", "expected a JSON object with 'metric' and 'dim'")
        try:
            index = _read_index(directory / "index.faiss", config.get("factory"), mmap)
        except RuntimeError as error:
            raise DataError(directory / "index.faiss", f"not a readable faiss index "
                                                       f"({str(error).strip().splitlines()[-1]})") from None
        ids = [doc_id for _, doc_id in iter_lines(directory / "ids.txt")]
        if index.ntotal != len(ids):
            raise DataError(directory / "ids.txt", f"{len(ids)} ids for {index.ntotal} vectors (index.faiss)")
        return cls(index, ids, config)

