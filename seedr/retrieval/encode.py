"""Encode queries and documents into dense vectors, and whole corpora into resumable embedding shards (the
folder's format, and its readers, are ``seedr.retrieval.embeddings``).

Documents are encoded as their ``title`` mode says (``document_input``): by default the text pair
``[CLS] title [SEP] text [SEP]`` — DPR's passage input (Karpukhin et al. 2020, sec. 4.1: the title and
the passage separated by [SEP]; ``token_type_ids`` 1 on the text), also ANCE's for MS MARCO documents
(Xiong et al. 2021), whose fine-tuning SEED-Encoder reuses; ``join``: one segment ``title text`` (BEIR's
sentence-transformers training and evaluation, ``title + " " + text``); ``none``: the text alone, as is
every document without a title. A fine-tuned model records its mode in its folder, and encoding uses
it unless told otherwise, so a model is searched with the input it was trained on. The
sequence embedding is the [CLS] vector (``pooling="cls"``, SEED-Encoder/CPDAE and the two-tower
models of Chang et al. 2020) or the masked mean of token states (``"mean"``, sentence-transformers
models such as MiniLM).

Inference is batched by token length: texts are tokenised once, sorted longest first, padded per
batch and put back in their original order, so little compute is spent on padding (and an
out-of-memory error, if any, happens on the first batch).
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from seedr.config.settings import ENCODE_BATCH_SIZE, MAX_LENGTH
from seedr.data.records import Document
from seedr.hardware import default_device, encoding_dtype
from seedr.io import DataError
from seedr.modeling.encoder import (
    SETTINGS_FILE,
    Pooling,
    load_encoder,
    load_tokenizer,
    model_fingerprint,
    model_positions,
    pool,
    read_settings,
    resolve_model_path,
)
from seedr.modeling.folders import declared_pooling
from seedr.modeling.projection import Projection, load_projection, read_modules
from seedr.retrieval.embeddings import (  # the folder's format; read_manifest, load_embeddings: its readers
    MANIFEST,
    ShardedEmbeddings,
    ShardSettings,
    documents_fingerprint,
    finished_shard,
    load_embeddings,
    read_manifest,
    record_settings,
    shard_paths,
    write_manifest_when_complete,
    write_shard,
)

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
#: How a document's title and text become the encoder's input (see the module docstring).
TITLE_MODES = ("pair", "join", "none")
#: The folder, inside a model folder, of its separate document tower (DPR's E_P: ``DualEncoder.save``).
DOCUMENT_TOWER = "doc_encoder"


def document_input(document: Document, title: str = "pair", prefix: str = "") -> tuple[str, str | None]:
    """The text, and the second segment of a text pair or ``None``, that ``document`` is encoded as under
    the ``title`` mode (``pair``: ``(title, text)``; ``join``: ``("title text", None)``; ``none``:
    ``(text, None)``; a document without a title is its text alone), ``prefix`` before the first segment."""
    if title not in TITLE_MODES:
        raise ValueError(f"unknown title mode {title!r}; valid: {', '.join(TITLE_MODES)}")
    if not document.title or title == "none":
        return prefix + document.text, None
    if title == "join":
        return f"{prefix}{document.title} {document.text}", None
    return prefix + document.title, document.text


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
                   text_pairs: Sequence[str | None] | None = None, max_length: int = MAX_LENGTH) -> list[dict[str, list[int]]]:
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
                 pooling: Pooling = "cls", max_length: int = MAX_LENGTH, batch_size: int = ENCODE_BATCH_SIZE, *,
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
    Without these files: [CLS] pooling, no normalisation, 512 tokens (BERT's, the papers' setting). The
    ``title`` mode is the one seedr's settings file records (fine-tuning writes it), else ``pair``.
    A folder with code of its own is refused first (``seedr.modeling.encoder.check_model_folder``).
    """
    path = resolve_model_path(model_path)
    positions = model_positions(path)
    defaults: dict[str, Any] = {"pooling": declared_pooling(path), "normalize": False, "max_length": MAX_LENGTH,
                                "title": _json_field(path / SETTINGS_FILE, "title") or "pair"}
    defaults["normalize"] = any(module.get("type", "").endswith(".Normalize") for module in read_modules(path))
    declared_length = (_json_field(path / "sentence_bert_config.json", "max_seq_length")
                       or _json_field(path / "tokenizer_config.json", "model_max_length"))
    defaults["max_length"] = int(min(declared_length or MAX_LENGTH, positions or float("inf")))
    return defaults


def _json_field(path: Path, key: str) -> Any:
    """``key`` of the JSON object in ``path``; ``None`` when the file or the key is missing."""
    return read_settings(path).get(key) if path.exists() else None


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
        max_length: tokens per input, truncating longer ones; default: the folder's ``max_seq_length``, else 512;
            more than the model's positions is refused.
        device: ``"cpu"``, ``"cuda"``...; default CUDA when available.
        dtype: ``None``/``"float32"``, or ``"bfloat16"``/``"float16"`` to run under autocast, or ``"auto"``:
            ``default_compute_dtype`` of the device (bf16 where it is native).
        query_prefix, document_prefix: text put before every query / document (E5-style instructions).
        title: how documents' titles are encoded (``TITLE_MODES``); default: what the folder records, else
            ``pair``.

    Example:
        >>> encoder = TextEncoder("minilm")  # mean pooling + Normalize, as its folder declares
        >>> encoder.encode(["what causes tides?"]).shape
        (1, 384)
    """

    def __init__(self, model_path: str | os.PathLike, pooling: Pooling | None = None, normalize: bool | None = None,
                 max_length: int | None = None, device: str | torch.device | None = None,
                 dtype: str | torch.dtype | None = None, query_prefix: str = "",
                 document_prefix: str = "", title: str | None = None) -> None:
        if pooling not in (None, "cls", "mean"):
            raise ValueError(f"unknown pooling {pooling!r}; valid: cls, mean")
        if title not in (None, *TITLE_MODES):
            raise ValueError(f"unknown title mode {title!r}; valid: {', '.join(TITLE_MODES)}")
        self.model_path = resolve_model_path(model_path)
        defaults = model_defaults(self.model_path)
        positions = model_positions(self.model_path)
        if max_length is not None and positions is not None and max_length > positions:
            # refused here, before the model is loaded: the model would fail on the first long text
            raise ValueError(f"max_length (--max-length) {max_length} is more than the {positions} positions of the "
                             f"model {self.model_path} (its config.json's max_position_embeddings): use at most "
                             f"{positions}")
        self.tokenizer = load_tokenizer(self.model_path)
        self.device = torch.device(device) if device else default_device()
        self.model = load_encoder(self.model_path).to(self.device).eval()
        projection = load_projection(self.model_path)
        self.projection = projection.to(self.device).eval() if projection is not None else None
        # a model fine-tuned with separate towers (DPR) encodes documents with the tower trained on them
        tower = self.model_path / DOCUMENT_TOWER
        self.document_model, self.document_projection = self.model, self.projection
        if (tower / "config.json").is_file():
            self.document_model = load_encoder(tower).to(self.device).eval()
            document_projection = load_projection(tower)
            self.document_projection = document_projection.to(self.device).eval() if document_projection else None
        self.pooling: Pooling = pooling or defaults["pooling"]
        self.normalize: bool = defaults["normalize"] if normalize is None else normalize
        self.max_length: int = max_length or defaults["max_length"]
        self.autocast_dtype = _autocast_dtype(encoding_dtype(dtype, self.device))
        self.query_prefix, self.document_prefix = query_prefix, document_prefix
        self.title: str = title or defaults["title"]

    @classmethod
    def from_settings(cls, settings: dict[str, Any], model_path: str | os.PathLike | None = None,
                      **overrides: Any) -> TextEncoder:
        """The encoder described by ``settings()`` as recorded beside embeddings or in an index folder
        (so queries are encoded as the documents were); ``overrides`` replace single options."""
        options = {key: settings[key] for key in ("pooling", "normalize", "max_length", "query_prefix",
                                                  "document_prefix", "title") if key in settings}
        if "compute_dtype" in settings:  # queries are encoded in the precision the documents were
            options["dtype"] = settings["compute_dtype"]
        options.update({key: value for key, value in overrides.items() if value is not None})
        encoder = cls(model_path or settings["model"], **options)
        recorded = settings.get("fingerprint")
        if recorded and encoder.fingerprint != recorded:
            raise ValueError(f"the model in {encoder.model_path} is not the one the documents were encoded with "
                             f"(weights fingerprint {encoder.fingerprint[:12]}, recorded {recorded[:12]}): it was "
                             f"changed or re-trained since; encode and index the corpus again, or pass --model "
                             f"with the original model")
        return encoder

    @functools.cached_property
    def fingerprint(self) -> str:
        """``seedr.modeling.encoder.model_fingerprint`` of the model folder."""
        return model_fingerprint(self.model_path)

    @property
    def dim(self) -> int:
        """Size of the embeddings: the projection's output, else the encoder's hidden size."""
        return int(self.projection.out_features if self.projection is not None else self.model.config.hidden_size)

    def settings(self) -> dict[str, Any]:
        """What determines the vectors: recorded beside embeddings and indexes. The model by its absolute
        path (queries are encoded by the same model from any directory) and its weights fingerprint."""
        return {"model": str(self.model_path.resolve()), "fingerprint": self.fingerprint, "pooling": self.pooling,
                "normalize": self.normalize, "max_length": self.max_length, "query_prefix": self.query_prefix,
                "document_prefix": self.document_prefix, "title": self.title, "dim": self.dim,
                "compute_dtype": str(self.autocast_dtype or torch.float32).removeprefix("torch.")}

    def encode(self, texts: Sequence[str], batch_size: int = ENCODE_BATCH_SIZE, show_progress: bool = False,
               text_pairs: Sequence[str | None] | None = None,
               on_batch: Callable[[int], object] | None = None) -> np.ndarray:
        """Embed raw ``texts`` (no prefix added); (N, D) float32. ``on_batch``: as ``encode_texts``'."""
        return encode_texts(self.model, self.tokenizer, texts, self.pooling, self.max_length, batch_size,
                            text_pairs=text_pairs, projection=self.projection, normalize=self.normalize,
                            autocast_dtype=self.autocast_dtype, show_progress=show_progress, on_batch=on_batch)

    def encode_queries(self, queries: Sequence[str], batch_size: int = ENCODE_BATCH_SIZE,
                       show_progress: bool = False) -> np.ndarray:
        """Embed queries, each preceded by ``query_prefix``."""
        return self.encode([self.query_prefix + query for query in queries], batch_size, show_progress)

    def encode_documents(self, documents: Sequence[Document], batch_size: int = ENCODE_BATCH_SIZE,
                         show_progress: bool = False,
                         on_batch: Callable[[int], object] | None = None) -> np.ndarray:
        """Embed documents as ``document_input`` lays them out under ``title`` (by default the pair
        ``title [SEP] text``, DPR/ANCE), with the document tower where the folder has one (``DOCUMENT_TOWER``);
        ``document_prefix`` goes before the first segment. ``on_batch``: as ``encode_texts``'."""
        inputs = [document_input(document, self.title, self.document_prefix) for document in documents]
        firsts, seconds = zip(*inputs) if inputs else ((), ())
        return encode_texts(self.document_model, self.tokenizer, list(firsts), self.pooling, self.max_length,
                            batch_size, text_pairs=list(seconds), projection=self.document_projection,
                            normalize=self.normalize, autocast_dtype=self.autocast_dtype,
                            show_progress=show_progress, on_batch=on_batch)


# ------------------------------------------------------------------ a corpus into an embeddings folder


def _batched(items: Iterable[Document], size: int) -> Iterator[list[Document]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def encode_corpus_to_shards(encoder: TextEncoder, documents: Iterable[Document], out_dir: str | os.PathLike,
                            shard_size: int = 50_000, dtype: str = "float32", batch_size: int = ENCODE_BATCH_SIZE,
                            show_progress: bool = True,
                            extra_settings: dict[str, Any] | None = None, rank: int = 0,
                            world_size: int = 1, total: int | None = None) -> Path:
    """Encode a corpus into ``out_dir``: ``embeddings-00000.npy`` + ``ids-00000.txt`` per shard of
    ``shard_size`` documents, then ``manifest.json`` (written last: its presence means complete).

    Each shard file is written atomically. Run again after an interruption and complete shards are
    skipped (their ids, and the fingerprint of their documents' titles and texts, are checked against the
    corpus, so a changed corpus is an error rather than silently stale or mixed vectors); ``settings.json``
    guards against resuming with another encoder (its weights fingerprint included) or options; the batch
    size is not a setting (it may change, e.g. after an out-of-memory error). Non-finite vectors (a
    diverged model) are refused. ``dtype="float16"`` halves the disk size (vectors are rounded to half
    precision). ``extra_settings`` (e.g. how long documents were cut into passages) are recorded with the
    rest.

    Several processes (``torchrun``, ``accelerate launch``, or separate jobs on a shared file system)
    share the work by shard: process ``rank`` of ``world_size`` encodes shards ``rank``,
    ``rank + world_size`` ... Every process reads the whole corpus to cut the same shards, so a shard
    holds the same documents, encoded alike, whatever the number of processes. No process waits for
    another: each writes its shards, then writes the manifest if every shard is on disk — the last
    one to finish does. Returns ``out_dir``; it is complete when ``manifest.json`` exists.
    The progress bar moves every batch, with passages/s and, given the ``total`` of documents (e.g.
    ``seedr.data.corpus.count_documents``), an ETA.
    """
    if dtype not in ("float32", "float16"):
        raise ValueError(f"unknown embedding dtype {dtype!r}; valid: float32, float16")
    if shard_size < 1 or batch_size < 1:
        raise ValueError(f"the shard size and the batch size must be at least 1, got {shard_size} and {batch_size}")
    if not 0 <= rank < world_size:
        raise ValueError(f"process rank {rank} is not in 0 … {world_size - 1}")
    out_dir = Path(out_dir)
    fresh = not out_dir.exists() or not any(out_dir.iterdir())
    try:
        return _encode_shards(encoder, documents, out_dir, shard_size, dtype, batch_size, show_progress,
                              extra_settings or {}, rank, world_size, total)
    except (DataError, ValueError):
        # Bad input (a malformed corpus line, a broken model): a folder this run began is removed whole,
        # so the corrected command — with other settings, maybe — starts clean. An interruption (a kill,
        # Ctrl-C) keeps the complete shards for the same command to resume.
        if fresh:
            shutil.rmtree(out_dir, ignore_errors=True)
        raise


def _encode_shards(encoder: TextEncoder, documents: Iterable[Document], out_dir: Path, shard_size: int, dtype: str,
                   batch_size: int, show_progress: bool, extra_settings: dict[str, Any], rank: int,
                   world_size: int, total: int | None) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    settings = ShardSettings(encoder.settings(), shard_size, dtype, extra_settings)
    record_settings(out_dir, settings)

    shards = []
    if total is None and isinstance(documents, Sequence):
        total = len(documents)
    progress = tqdm(total=total, desc="encode corpus", unit="passage", disable=not show_progress,
                    smoothing=0.1)
    for shard, chunk in enumerate(_batched(documents, shard_size)):
        embeddings_path, ids_path = shard_paths(out_dir, shard)
        fingerprint = documents_fingerprint(chunk)  # of every shard: the manifest records them all
        shards.append({"embeddings": embeddings_path.name, "ids": ids_path.name, "count": len(chunk),
                       "sha256": fingerprint})
        if shard % world_size != rank:
            progress.update(len(chunk))  # another process's shard
            continue
        ids = [document.id for document in chunk]
        for doc_id in ids:
            if not doc_id or any(c.isspace() for c in doc_id):
                raise ValueError(f"document id {doc_id!r} is empty or contains whitespace")
        if finished_shard(out_dir, shard, ids, fingerprint):  # an edited corpus: a DataError
            progress.update(len(ids))  # done by an earlier run
        else:
            vectors = encoder.encode_documents(chunk, batch_size=batch_size, on_batch=progress.update)
            stored = vectors.astype(dtype)
            broken = ~np.isfinite(stored).all(axis=1)
            if broken.any():
                raise DataError(encoder.model_path, f"the model gives non-finite vectors (NaN or inf), e.g. for "
                                                    f"document {ids[int(np.argmax(broken))]!r}: its weights are "
                                                    f"broken (a diverged training run?)")
            write_shard(out_dir, shard, ids, stored, fingerprint)
    progress.close()
    write_manifest_when_complete(out_dir, asdict(settings), encoder.dim, shards)
    return out_dir



# MANIFEST, ShardedEmbeddings, load_embeddings, read_manifest: the embeddings folder's, whose home is
# seedr.retrieval.embeddings (named here too for the modules that still import them from here)
__all__ = ["DOCUMENT_TOWER", "MANIFEST", "TITLE_MODES", "ShardedEmbeddings", "TextEncoder", "document_input",
           "encode_corpus_to_shards", "encode_texts", "load_embeddings", "model_defaults",
           "read_manifest", "tokenize_pairs"]
