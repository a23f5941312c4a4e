"""Encode queries and documents into dense vectors, and whole corpora into resumable embedding shards.

Documents are encoded as the text pair ``[CLS] title [SEP] text [SEP]`` — DPR's passage input
(Karpukhin et al. 2020, sec. 4.1: the title and the passage separated by [SEP]; ``token_type_ids`` 1
on the text), also ANCE's for MS MARCO documents (Xiong et al. 2021), whose fine-tuning SEED-Encoder
reuses; documents without a title, or ``use_title=False``, are encoded as the text alone. The
sequence embedding is the [CLS] vector (``pooling="cls"``, SEED-Encoder/CPDAE and the two-tower
models of Chang et al. 2020) or the masked mean of token states (``"mean"``, sentence-transformers
models such as MiniLM).

Inference is batched by token length: texts are tokenised once, sorted longest first, padded per
batch and put back in their original order, so little compute is spent on padding (and an
out-of-memory error, if any, happens on the first batch).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from seedr.data.io import DataError, atomic_write
from seedr.data.records import Document
from seedr.modeling.encoder import Pooling, load_encoder, load_tokenizer, pool, resolve_model_path
from seedr.modeling.projection import Projection, load_projection, read_modules

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def native_bf16(device: str | torch.device) -> bool:
    """Does ``device`` compute bfloat16 natively: a CUDA GPU that supports it, or a CPU with AVX512-BF16
    or AMX instructions (where oneDNN runs bf16 matrix products in hardware; without them it emulates
    bf16, more slowly than float32)?"""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if device.type != "cpu":
        return False
    # torch.cpu exposes these checks only as private functions; absent from a torch build = unsupported
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in checks)


def default_compute_dtype(device: str | torch.device) -> str:
    """What ``seedr encode --compute-dtype auto`` runs under: ``bfloat16`` autocast where ``native_bf16``,
    else ``float32``. Vectors are stored in float32 either way, and bf16 ones stay close to the float32
    ones (``tests/test_retrieval_dense.py`` checks their cosine)."""
    return "bfloat16" if native_bf16(device) else "float32"


def _autocast_dtype(dtype: str | torch.dtype | None) -> torch.dtype | None:
    """``None``/``float32`` mean full precision; ``bfloat16``/``float16`` mean autocast to that type."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        if dtype not in _DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}; valid: {', '.join(_DTYPES)}")
        dtype = _DTYPES[dtype]
    return None if dtype == torch.float32 else dtype


def tokenize_pairs(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str],
                   text_pairs: Sequence[str | None] | None = None, max_length: int = 512) -> list[dict[str, list[int]]]:
    """Per-text token ids, unpadded (``tokenizer.pad`` them): ``[CLS] text [SEP] pair [SEP]`` where
    ``text_pairs`` gives a pair, ``[CLS] text [SEP]`` where it is ``None``/empty (or not given).

    The one tokenisation of seedr's text pairs — documents as ``title [SEP] text`` at search time
    (``encode_texts``), in fine-tuning batches (``FinetuneCollator``) and in two-tower pre-training —
    so a model is trained on the inputs it is searched with. A tokenizer call takes pairs for all
    of its texts or for none, hence one call for the single texts and one for the pairs.
    """
    encoded: list[dict[str, list[int]]] = [{} for _ in texts]
    has_pair = [bool(text_pairs and text_pairs[i]) for i in range(len(texts))]
    single = [i for i, paired in enumerate(has_pair) if not paired]
    paired = [i for i, paired in enumerate(has_pair) if paired]
    for indices, pairs in ((single, None), (paired, [text_pairs[i] for i in paired] if paired else None)):
        if not indices:
            continue
        # truncation=True is "longest_first": with a pair, the longer segment (the text) is cut first.
        batch = tokenizer([texts[i] for i in indices], pairs, truncation=True, max_length=max_length)
        for position, index in enumerate(indices):
            encoded[index] = {key: values[position] for key, values in batch.items()}
    return encoded


def encode_texts(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, texts: Sequence[str],
                 pooling: Pooling = "cls", max_length: int = 512, batch_size: int = 64, *,
                 text_pairs: Sequence[str | None] | None = None, projection: Projection | None = None,
                 normalize: bool = False, autocast_dtype: str | torch.dtype | None = None,
                 show_progress: bool = False, on_batch: Callable[[int], object] | None = None) -> np.ndarray:
    """Embed ``texts`` (optionally paired with ``text_pairs``) with an in-memory model; (N, D) float32.

    This is the function form used on a model being trained (e.g. to validate or mine negatives
    mid-training); ``TextEncoder`` wraps it for a saved model. The model's train/eval mode is
    restored afterwards. The pooled embedding goes through ``projection`` when given (the linear
    layer of the ICLR 2020 two-tower models: D = its output size, else D = H), then ``normalize``
    L2-normalises it (cosine similarity as a dot product) — sentence-transformers' module order.
    ``on_batch(n)`` is called after each batch of ``n`` texts (e.g. a caller's progress bar).
    """
    if text_pairs is not None and len(text_pairs) != len(texts):
        raise ValueError(f"{len(texts)} texts but {len(text_pairs)} text pairs")
    dim = projection.out_features if projection is not None else model.config.hidden_size
    if len(texts) == 0:
        return np.zeros((0, dim), dtype=np.float32)
    encoded = tokenize_pairs(tokenizer, texts, text_pairs, max_length)
    lengths = np.array([len(item["input_ids"]) for item in encoded])
    order = np.argsort(-lengths, kind="stable")  # longest first
    device = next(model.parameters()).device
    cast = _autocast_dtype(autocast_dtype)
    output = np.empty((len(texts), dim), dtype=np.float32)
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode(), torch.autocast(device.type, dtype=cast or torch.float32,
                                                    enabled=cast is not None):
            starts = range(0, len(texts), batch_size)
            for start in tqdm(starts, desc="encode", unit="batch", disable=not show_progress):
                indices = order[start:start + batch_size]
                batch = tokenizer.pad([encoded[i] for i in indices], return_tensors="pt")
                batch = {key: value.to(device) for key, value in batch.items()}
                states = model(**batch).last_hidden_state  # (B, T, H)
                vectors = pool(states, batch["attention_mask"], pooling)  # (B, H)
                if projection is not None:
                    vectors = projection(vectors)  # (B, D)
                vectors = vectors.float()
                if normalize:
                    vectors = torch.nn.functional.normalize(vectors, dim=-1)
                output[indices] = vectors.cpu().numpy()
                if on_batch is not None:
                    on_batch(len(indices))
    finally:
        model.train(was_training)
    return output


def model_defaults(model_path: str | os.PathLike) -> dict[str, Any]:
    """Pooling, normalisation and input length a model folder declares for itself, else seedr's defaults.

    Read from the sentence-transformers files beside the weights (``1_Pooling/config.json``: CLS or
    mean pooling; a ``Normalize`` module in ``modules.json``; ``sentence_bert_config.json``:
    ``max_seq_length``), which ``seedr.modeling.encoder.save_encoder`` also writes, in the format of
    sentence-transformers < 6 or ≥ 6 (``pooling_mode``; the length kept as the tokenizer's
    ``model_max_length``). As sentence-transformers does, the length is capped at the model's positions.
    Without these files: [CLS] pooling, no normalisation, 512 tokens (BERT's, the papers' setting).
    """
    path = resolve_model_path(model_path)
    defaults: dict[str, Any] = {"pooling": "cls", "normalize": False, "max_length": 512}
    pooling_config = path / "1_Pooling" / "config.json"
    if pooling_config.exists():
        pooling = json.loads(pooling_config.read_text(encoding="utf-8"))
        keys = {"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens"}
        declared = pooling.get("pooling_mode", [mode for mode, key in keys.items() if pooling.get(key)])
        modes = [declared] if isinstance(declared, str) else list(declared)
        if len(modes) != 1 or modes[0] not in keys:
            raise ValueError(f"{pooling_config}: seedr supports CLS or mean pooling; choose one explicitly")
        defaults["pooling"] = modes[0]
    defaults["normalize"] = any(module.get("type", "").endswith(".Normalize") for module in read_modules(path))
    declared_length = (_json_field(path / "sentence_bert_config.json", "max_seq_length")
                       or _json_field(path / "tokenizer_config.json", "model_max_length"))
    positions = _json_field(path / "config.json", "max_position_embeddings")
    defaults["max_length"] = int(min(declared_length or 512, positions or float("inf")))
    return defaults


def _json_field(path: Path, key: str) -> Any:
    """``key`` of the JSON object in ``path``; ``None`` when the file or the key is missing."""
    return json.loads(path.read_text(encoding="utf-8")).get(key) if path.exists() else None


class TextEncoder:
    """A saved encoder (a local Hugging Face folder, a seedr run folder, or ``minilm``) ready to embed text.

    The embedding is the one ``SentenceTransformer(model_path)`` computes: pooled token states, the
    folder's projection if it has one (a ``Dense`` module, e.g. the 512-dimensional layer of the ICLR
    2020 two-tower models: ``seedr.modeling.projection.load_projection``), then L2 normalisation if asked.

    Args:
        model_path: anything ``seedr.modeling.encoder.resolve_model_path`` accepts.
        pooling: ``"cls"`` ([CLS] vector, the papers' choice) or ``"mean"``; default: what the folder
            declares (``model_defaults``), else ``"cls"``.
        normalize: L2-normalise embeddings (cosine-trained models such as MiniLM); default: whether the
            folder lists a ``Normalize`` module.
        max_length: tokens per input, truncating longer ones; default: the folder's ``max_seq_length``, else 512.
        device: ``"cpu"``, ``"cuda"``...; default CUDA when available.
        dtype: ``None``/``"float32"``, or ``"bfloat16"``/``"float16"`` to run under autocast, or ``"auto"``:
            ``default_compute_dtype`` of the device (bf16 where it is native).
        query_prefix, document_prefix: text put before every query / document (E5-style instructions).

    Example:
        >>> encoder = TextEncoder("minilm")  # mean pooling + Normalize, as its folder declares
        >>> encoder.encode(["what causes tides?"]).shape
        (1, 384)
    """

    def __init__(self, model_path: str | os.PathLike, pooling: Pooling | None = None, normalize: bool | None = None,
                 max_length: int | None = None, device: str | torch.device | None = None,
                 dtype: str | torch.dtype | None = None, query_prefix: str = "",
                 document_prefix: str = "") -> None:
        if pooling not in (None, "cls", "mean"):
            raise ValueError(f"unknown pooling {pooling!r}; valid: cls, mean")
        self.model_path = resolve_model_path(model_path)
        defaults = model_defaults(self.model_path)
        self.tokenizer = load_tokenizer(self.model_path)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model = load_encoder(self.model_path).to(self.device).eval()
        projection = load_projection(self.model_path)
        self.projection = projection.to(self.device).eval() if projection is not None else None
        self.pooling: Pooling = pooling or defaults["pooling"]
        self.normalize: bool = defaults["normalize"] if normalize is None else normalize
        self.max_length: int = max_length or defaults["max_length"]
        self.autocast_dtype = _autocast_dtype(default_compute_dtype(self.device) if dtype == "auto" else dtype)
        self.query_prefix, self.document_prefix = query_prefix, document_prefix

    @classmethod
    def from_settings(cls, settings: dict[str, Any], model_path: str | os.PathLike | None = None,
                      **overrides: Any) -> TextEncoder:
        """The encoder described by ``settings()`` as recorded beside embeddings or in an index folder
        (so queries are encoded as the documents were); ``overrides`` replace single options."""
        options = {key: settings[key] for key in ("pooling", "normalize", "max_length", "query_prefix",
                                                  "document_prefix") if key in settings}
        if "compute_dtype" in settings:  # queries are encoded in the precision the documents were
            options["dtype"] = settings["compute_dtype"]
        options.update({key: value for key, value in overrides.items() if value is not None})
        return cls(model_path or settings["model"], **options)

    @property
    def dim(self) -> int:
        """Size of the embeddings: the projection's output, else the encoder's hidden size."""
        return int(self.projection.out_features if self.projection is not None else self.model.config.hidden_size)

    def settings(self) -> dict[str, Any]:
        """What determines the vectors: recorded beside embeddings and indexes."""
        return {"model": str(self.model_path), "pooling": self.pooling, "normalize": self.normalize,
                "max_length": self.max_length, "query_prefix": self.query_prefix,
                "document_prefix": self.document_prefix, "dim": self.dim,
                "compute_dtype": str(self.autocast_dtype or torch.float32).removeprefix("torch.")}

    def encode(self, texts: Sequence[str], batch_size: int = 64, show_progress: bool = False,
               text_pairs: Sequence[str | None] | None = None,
               on_batch: Callable[[int], object] | None = None) -> np.ndarray:
        """Embed raw ``texts`` (no prefix added); (N, D) float32. ``on_batch``: as ``encode_texts``'."""
        return encode_texts(self.model, self.tokenizer, texts, self.pooling, self.max_length, batch_size,
                            text_pairs=text_pairs, projection=self.projection, normalize=self.normalize,
                            autocast_dtype=self.autocast_dtype, show_progress=show_progress, on_batch=on_batch)

    def encode_queries(self, queries: Sequence[str], batch_size: int = 64,
                       show_progress: bool = False) -> np.ndarray:
        """Embed queries, each preceded by ``query_prefix``."""
        return self.encode([self.query_prefix + query for query in queries], batch_size, show_progress)

    def encode_documents(self, documents: Sequence[Document], batch_size: int = 64,
                         show_progress: bool = False, use_title: bool = True,
                         on_batch: Callable[[int], object] | None = None) -> np.ndarray:
        """Embed documents as the pair ``title [SEP] text`` (DPR/ANCE), or the text alone without a title.

        ``document_prefix`` goes before the first segment. ``use_title=False`` ignores titles.
        """
        firsts, seconds = [], []
        for document in documents:
            if use_title and document.title:
                firsts.append(self.document_prefix + document.title)
                seconds.append(document.text)
            else:
                firsts.append(self.document_prefix + document.text)
                seconds.append(None)
        return self.encode(firsts, batch_size, show_progress, text_pairs=seconds, on_batch=on_batch)


# ------------------------------------------------------------------ corpus shards

MANIFEST = "manifest.json"
SETTINGS = "settings.json"


def _shard_paths(out_dir: Path, shard: int) -> tuple[Path, Path]:
    return out_dir / f"embeddings-{shard:05d}.npy", out_dir / f"ids-{shard:05d}.txt"


@dataclass(frozen=True)
class ShardSettings:
    """How the shards of a folder were made; a resumed run must use the same."""

    encoder: dict[str, Any]
    shard_size: int
    dtype: str
    use_title: bool
    extra: dict[str, Any]


def _batched(items: Iterable[Document], size: int) -> Iterator[list[Document]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def long_document_passages(documents: Iterable[Document], tokenizer: PreTrainedTokenizerBase, mode: str,
                           passage_length: int, chunk_size: int = 1_000) -> Iterator[Document]:
    """Stream documents cut into passages, ``mode`` ``firstp`` or ``maxp`` of
    ``seedr.retrieval.long_documents`` (ANCE/SEED-Encoder's MS MARCO document settings), a chunk at a
    time so a large corpus is never tokenised at once. Passage ids are ``<document id>#<n>``."""
    from seedr.retrieval.long_documents import LONG_DOCUMENTS

    split = LONG_DOCUMENTS.get(mode)
    for chunk in _batched(documents, chunk_size):
        yield from split(chunk, tokenizer, passage_length).passages


def encode_corpus_to_shards(encoder: TextEncoder, documents: Iterable[Document], out_dir: str | os.PathLike,
                            shard_size: int = 50_000, dtype: str = "float32", batch_size: int = 64,
                            use_title: bool = True, show_progress: bool = True,
                            extra_settings: dict[str, Any] | None = None, total: int | None = None) -> Path:
    """Encode a corpus into ``out_dir``: ``embeddings-00000.npy`` + ``ids-00000.txt`` per shard of
    ``shard_size`` documents, then ``manifest.json`` (written last: its presence means complete).

    Each shard file is written atomically. Run again after an interruption and complete shards are
    skipped (their ids are checked against the corpus, so a changed corpus is an error rather than
    silently mixed vectors); ``settings.json`` guards against resuming with another encoder or
    options. ``dtype="float16"`` halves the disk size (vectors are rounded to half precision).
    ``extra_settings`` (e.g. how long documents were cut into passages) are recorded with the rest.
    The progress bar moves every batch, with passages/s and, given the ``total`` of documents (e.g.
    ``seedr.data.corpus.count_documents``), an ETA.
    """
    if dtype not in ("float32", "float16"):
        raise ValueError(f"unknown embedding dtype {dtype!r}; valid: float32, float16")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    settings = asdict(ShardSettings(encoder.settings(), shard_size, dtype, use_title, extra_settings or {}))
    settings_path = out_dir / SETTINGS
    if settings_path.exists():
        previous = json.loads(settings_path.read_text(encoding="utf-8"))
        if previous != settings:
            changed = sorted(key for key in settings if previous.get(key) != settings[key])
            raise DataError(settings_path, f"this folder holds embeddings made with other settings "
                                           f"({', '.join(changed)}); use a new folder or the same settings")
    else:
        with atomic_write(settings_path) as stream:
            json.dump(settings, stream, indent=2)

    shards, count = [], 0
    if total is None and isinstance(documents, Sequence):
        total = len(documents)
    progress = tqdm(total=total, desc="encode corpus", unit="passage", disable=not show_progress,
                    smoothing=0.1)
    for shard, chunk in enumerate(_batched(documents, shard_size)):
        embeddings_path, ids_path = _shard_paths(out_dir, shard)
        ids = [document.id for document in chunk]
        for doc_id in ids:
            if not doc_id or any(c.isspace() for c in doc_id):
                raise ValueError(f"document id {doc_id!r} is empty or contains whitespace")
        if embeddings_path.exists() and ids_path.exists():
            done = ids_path.read_text(encoding="utf-8").splitlines()
            if done != ids:
                raise DataError(ids_path, "the corpus differs from the one these shards were made from "
                                          "(document ids do not match); use a new output folder")
            progress.update(len(ids))  # done by an earlier run
        else:
            vectors = encoder.encode_documents(chunk, batch_size=batch_size, use_title=use_title,
                                               on_batch=progress.update)
            with atomic_write(embeddings_path, "wb") as stream:
                np.save(stream, vectors.astype(dtype))
            with atomic_write(ids_path) as stream:
                stream.write("".join(f"{doc_id}\n" for doc_id in ids))
        shards.append({"embeddings": embeddings_path.name, "ids": ids_path.name, "count": len(ids)})
        count += len(ids)
    progress.close()
    manifest = {**settings, "dim": encoder.dim, "count": count, "shards": shards}
    with atomic_write(out_dir / MANIFEST) as stream:
        json.dump(manifest, stream, indent=2)
    return out_dir


def read_manifest(directory: str | os.PathLike) -> dict[str, Any]:
    """The manifest of a complete embeddings folder (``DataError`` when the encoding did not finish)."""
    path = Path(directory) / MANIFEST
    if not path.exists():
        raise DataError(directory, f"no {MANIFEST}: not an embeddings folder, or its encoding did not finish "
                                   "(run `seedr encode` again to resume it)")
    return json.loads(path.read_text(encoding="utf-8"))


def load_embeddings(directory: str | os.PathLike) -> tuple[list[str], np.ndarray]:
    """``(ids, embeddings)`` of a complete embeddings folder, embeddings (N, H) in the stored dtype.

    A single shard is memory-mapped (nothing read until used); several are concatenated.
    """
    directory = Path(directory)
    manifest = read_manifest(directory)
    ids: list[str] = []
    arrays = []
    for shard in manifest["shards"]:
        shard_ids = (directory / shard["ids"]).read_text(encoding="utf-8").splitlines()
        array = np.load(directory / shard["embeddings"], mmap_mode="r")
        if len(shard_ids) != len(array) or len(shard_ids) != shard["count"]:
            raise DataError(directory / shard["ids"], f"{len(shard_ids)} ids but {len(array)} embeddings "
                                                      f"(manifest: {shard['count']})")
        ids.extend(shard_ids)
        arrays.append(array)
    if not arrays:
        return ids, np.zeros((0, manifest["dim"]), dtype=manifest["dtype"])
    return ids, arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
