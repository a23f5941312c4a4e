"""Loading for the papers' diagnostics (``seedr diagnose``, the ``diagnose`` experiment step): the
encoder under test from a model or run folder, a pre-training objective with its trained decoder from
a run folder's checkpoint (CPDAE's word decoder, SEED-Encoder's weak decoder) and the held-out masked-LM
curve of its checkpoints, texts from corpus files, positive pairs from BEIR folders or articles; what
they are run through and written to is ``seedr.diagnostics.diagnose``.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from safetensors import safe_open
from transformers import AutoModel, PreTrainedModel, PreTrainedTokenizerBase

from seedr.config.loading import from_dict, load_config, parse_yaml
from seedr.config.settings import DIAGNOSE_BATCH_SIZE, PretrainConfig
from seedr.data.corpus import read_corpus
from seedr.data.inputs import input_files
from seedr.data.queries import read_qrels, read_queries
from seedr.data.records import Document
from seedr.diagnostics.measures import require_weak_decoder, require_word_decoder
from seedr.evaluation.masked_lm import HELDOUT_BATCH_SIZE, heldout_masked_lm
from seedr.hardware import default_device
from seedr.io import DataError
from seedr.modeling.encoder import check_model_folder, load_encoder, load_tokenizer, resolve_model_path
from seedr.objectives import OBJECTIVES
from seedr.objectives.two_tower import PairConfig, pair_data_for
from seedr.retrieval.dual_encoder import DualEncoder
from seedr.retrieval.encode import model_defaults
from seedr.engine.checkpoint import (
    PRODUCT,
    checkpoint_path,
    latest_checkpoint,
    list_checkpoints,
    load_model_weights,
    model_weights_path,
)
from seedr.evaluation.masked_lm import HELDOUT_BATCH_SIZE, heldout_masked_lm
from seedr.hardware import default_device
from seedr.io import DataError, atomic_write
from seedr.modeling.encoder import check_model_folder, load_encoder, load_tokenizer, resolve_model_path
from seedr.objectives import OBJECTIVES
from seedr.objectives.two_tower import pair_data_for
from seedr.objectives.two_tower_options import PairConfig
from seedr.retrieval.dual_encoder import DualEncoder
from seedr.retrieval.encode import model_defaults

#: "cls" and "mean" as ``seedr.modeling.encoder.pool``; "model": what the model folder declares.
DiagnosticPooling = Literal["cls", "mean", "model"]
#: A model folder, a seedr run folder, ``minilm``, or an in-memory model (given with its tokenizer).
EncoderSource = str | os.PathLike | PreTrainedModel
#: A positive (query, document) pair.
PositivePair = tuple[str, Document]


# ------------------------------------------------------------------------ the encoder under test



def load_encoder_parts(encoder: EncoderSource, tokenizer: PreTrainedTokenizerBase | None = None,
                       pooling: DiagnosticPooling = "cls") -> tuple[PreTrainedModel, PreTrainedTokenizerBase, str]:
    """``(model in eval mode, tokenizer, "cls" | "mean")`` from a model folder / run folder / ``minilm``,
    or from an in-memory model and its tokenizer."""
    if pooling not in ("cls", "mean", "model"):
        raise ValueError(f"unknown pooling {pooling!r}; valid: cls, mean, model")
    if isinstance(encoder, PreTrainedModel):
        if tokenizer is None:
            raise ValueError("an in-memory encoder needs its tokenizer (tokenizer=...)")
        if pooling == "model":
            raise ValueError("pooling='model' reads a model folder; an in-memory encoder needs cls or mean")
        return encoder.eval(), tokenizer, pooling

    path = resolve_model_path(encoder)
    if pooling == "model":
        pooling = model_defaults(path)["pooling"]
    return load_encoder(path).to(default_device()).eval(), tokenizer or load_tokenizer(path), pooling



def embed_pairs(encoder: EncoderSource, positive_pairs: Sequence[PositivePair], *,
                tokenizer: PreTrainedTokenizerBase | None = None, pooling: DiagnosticPooling = "cls",
                batch_size: int = DIAGNOSE_BATCH_SIZE, show_progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(query embeddings (N, H), document embeddings (N, H))`` of positive pairs, embedded as
    retrieval embeds them (``seedr.retrieval.dual_encoder``: documents as ``title [SEP] text``, by the
    document tower when the model has one)."""

    if isinstance(encoder, PreTrainedModel):
        model, tokenizer, pooling = load_encoder_parts(encoder, tokenizer, pooling)
        towers = DualEncoder(model, tokenizer, pooling=pooling)
    else:
        towers = DualEncoder.from_pretrained(encoder, pooling=None if pooling == "model" else pooling)
        towers.to(default_device())
    queries = towers.embed_queries([query for query, _ in positive_pairs], batch_size, show_progress)
    documents = towers.embed_documents([document for _, document in positive_pairs], batch_size,
                                       show_progress)
    return queries, documents


# ------------------------------------------------------------------ positive pairs and texts


def beir_positive_pairs(directory: str | os.PathLike, split: str = "train", limit: int | None = None,
                        seed: int = 13) -> list[PositivePair]:
    """(query, relevant document) pairs of a BEIR folder (``corpus.jsonl``, ``queries.jsonl``,
    ``qrels/<split>.tsv``; e.g. SciFact): every judgement with relevance > 0, or ``limit`` of them
    drawn at random (seeded)."""

    directory = Path(directory)
    queries = read_queries(directory / "queries.jsonl")
    qrels = read_qrels(directory / "qrels" / f"{split}.tsv", queries=queries)
    wanted = {doc for judged in qrels.values() for doc, relevance in judged.items() if relevance > 0}
    documents = {document.id: document for document in read_corpus(directory / "corpus.jsonl")
                 if document.id in wanted}
    missing = wanted - documents.keys()
    if missing:
        raise DataError(directory / "qrels" / f"{split}.tsv", f"{len(missing)} judged documents are not in "
                        f"corpus.jsonl, e.g. {min(missing)!r}", field="corpus-id")
    pairs = [(queries[qid], documents[doc]) for qid in sorted(qrels)
             for doc, relevance in sorted(qrels[qid].items()) if relevance > 0]
    if limit is not None and limit < len(pairs):
        chosen = np.sort(np.random.default_rng(seed).choice(len(pairs), size=limit, replace=False))
        pairs = [pairs[i] for i in chosen]
    return pairs


def ict_positive_pairs(corpus_paths: Sequence[str | os.PathLike] | str | os.PathLike, limit: int = 256,
                       seed: int = 13, max_articles: int | None = None) -> list[PositivePair]:
    """``limit`` ICT pairs (a sentence vs the rest of its paragraph, with the article's title; Chang
    et al., ICLR 2020, §3) from structured articles, by the pre-training pair builder
    (``seedr.objectives.ict``), one per randomly chosen paragraph."""

    config = PairConfig(max_articles=max_articles, pairs_per_epoch=limit)
    data = pair_data_for("ict", corpus_paths, seed, config)
    pairs = []
    for pair in data.dataset(epoch=0):
        document_id = f"{pair.source['article_id']}#{pair.source['paragraph']}"
        pairs.append((pair.query, Document(id=document_id, text=pair.document, title=pair.title)))
    return pairs


def positive_pairs(path: str | os.PathLike, limit: int = 256, seed: int = 13, split: str = "train",
                   max_articles: int | None = None) -> list[PositivePair]:
    """Positive pairs from a BEIR folder (its judged pairs of ``split``) or from structured article
    files (ICT pairs)."""
    path = Path(path)
    if path.is_dir() and (path / "queries.jsonl").exists():
        return beir_positive_pairs(path, split, limit, seed)
    return ict_positive_pairs(path, limit, seed, max_articles)


def corpus_texts(paths: Sequence[str | os.PathLike], max_documents: int | None = None) -> list[str]:
    """The texts (bodies, without titles) of the first ``max_documents`` documents of corpus files in
    any format ``seedr.data.corpus.read_corpus`` reads (files, quoted globs, folders:
    ``seedr.data.inputs.input_files``)."""

    documents = (document for path in input_files(paths, "corpus")
                 for document in read_corpus(path, skip_empty=True))
    return [document.text for document in itertools.islice(documents, max_documents) if document.text.strip()]


# ------------------------------------------------------------------ objectives from run folders


def load_objective(run_dir: str | os.PathLike, step: int | None = None) -> tuple[torch.nn.Module, Any]:
    """Rebuild a pre-training objective with its trained auxiliary modules (e.g. CPDAE's MLP decoder)
    from a run folder: ``(objective in eval mode, the run's PretrainConfig)``.

    The objective is built from the run's ``config.yaml`` around the encoder of the checkpoint
    (``checkpoints/step-N/encoder``, the newest unless ``step`` is given), then the checkpoint's full
    weights are loaded (``seedr.engine.checkpoint.load_model_weights``).
    """
    run_dir = Path(run_dir)
    if not (run_dir / "config.yaml").exists():
        raise DataError(run_dir, "not a pre-training run folder (no config.yaml)")
    checkpoint = latest_checkpoint(run_dir) if step is None else checkpoint_path(run_dir, step)
    if checkpoint is None or not (checkpoint / PRODUCT).is_dir():
        raise DataError(checkpoint or run_dir / "checkpoints",
                        "no complete checkpoint to rebuild the objective from")
    config = load_config(PretrainConfig, run_dir / "config.yaml")
    objective_class = OBJECTIVES.get(config.objective_name)
    options = from_dict(objective_class.config_class, config.objective,
                        f"{run_dir / 'config.yaml'}: objective")
    # Files needed only to start training: the MLM head's weights come from the checkpoint, and the
    # IDF table (IDF-REC) weights the training loss, not the decoder's output.
    unneeded = {"mlm_head_from": None, "idf_rec": False, "idf_path": None}
    names = {field.name for field in dataclasses.fields(options)}
    options = dataclasses.replace(options, **{key: value for key, value in unneeded.items() if key in names})
    # The encoder as training built it: BERT's pooler exists only when it was loaded from a folder
    # (``model.init``), not when it was built from scratch; no objective uses it, but weights must match.
    with safe_open(model_weights_path(checkpoint), "pt") as weights:
        tensor_names = weights.keys()  # a safetensors file handle, not a dict: keys() lists the tensors
    pooler = any(name.startswith("encoder.pooler.") for name in tensor_names)
    check_model_folder(checkpoint / PRODUCT)  # a checkpoint folder is read like any model: never its own code
    encoder = AutoModel.from_pretrained(str(checkpoint / PRODUCT), add_pooling_layer=pooler, trust_remote_code=False)
    objective = objective_class(encoder, load_tokenizer(checkpoint / PRODUCT), options)
    load_model_weights(checkpoint, objective)
    return objective.eval(), config


def _load_decoder(run_dir: str | os.PathLike, require: Callable[[Any], Any]) -> tuple[Any, int]:
    """``(objective on the device, its training input length)``, the objective checked by ``require``."""
    objective, config = load_objective(run_dir)
    require(objective)
    objective.to(default_device())
    return objective, min(config.data.max_seq_length, objective.encoder.config.max_position_embeddings)


def load_word_decoder(run_dir: str | os.PathLike) -> tuple[Any, int]:
    """``(CPDAE objective on the device, its training input length)`` rebuilt from a run folder."""
    return _load_decoder(run_dir, require_word_decoder)


def load_weak_decoder(run_dir: str | os.PathLike) -> tuple[Any, int]:
    """``(SEED-Encoder objective on the device, its training input length)`` rebuilt from a run folder."""
    return _load_decoder(run_dir, require_weak_decoder)


def _run_objective(path: str | os.PathLike) -> type | None:
    """The objective class of a run folder that has a checkpoint, else None."""

    path = Path(path)
    if not (path / "config.yaml").exists() or latest_checkpoint(path) is None:
        return None
    name = (parse_yaml((path / "config.yaml").read_text(encoding="utf-8")) or {}).get("objective_name")
    return OBJECTIVES.get(name) if name in OBJECTIVES else None


def run_diagnostics(path: str | os.PathLike) -> frozenset[str]:
    """The diagnostics the objective of the run folder ``path`` declares (``Objective.diagnostics``: e.g.
    "masked_lm", "cls_reliance", "decoded_words"); none for a folder that is not a run with a checkpoint."""
    objective = _run_objective(path)
    return frozenset() if objective is None else objective.diagnostics


def masked_lm_curve(run_dir: str | os.PathLike, texts: Sequence[str], max_length: int | None = None,
                    batch_size: int = HELDOUT_BATCH_SIZE, seed: int = 0, every_checkpoint: bool = True) -> list[dict[str, float]]:
    """Held-out masked-LM loss and accuracy (``seedr.evaluation.masked_lm.heldout_masked_lm``) of each kept
    checkpoint of an MLM-family run, oldest first (only the newest when ``every_checkpoint`` is False),
    each with its ``step``; every checkpoint is scored on the same texts and masks. ``max_length``
    defaults to the run's training length."""

    steps = [step for step, _ in list_checkpoints(run_dir)]
    if not steps:
        raise DataError(Path(run_dir) / "checkpoints", "no checkpoint to evaluate")
    curve = []
    for step in steps if every_checkpoint else steps[-1:]:
        objective, config = load_objective(run_dir, step)
        length = max_length or min(config.data.max_seq_length, objective.encoder.config.max_position_embeddings)
        scores = heldout_masked_lm(objective.to(default_device()), texts, length, batch_size, seed)
        curve.append({"step": step, "max_length": length, **scores})
    return curve


__all__ = [
    "DiagnosticPooling",
    "EncoderSource",
    "PositivePair",
    "beir_positive_pairs",
    "corpus_texts",
    "embed_pairs",
    "ict_positive_pairs",
    "load_encoder_parts",
    "load_objective",
    "load_weak_decoder",
    "load_word_decoder",
    "masked_lm_curve",
    "positive_pairs",
    "run_diagnostics",
]
