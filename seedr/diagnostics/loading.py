"""Loading for the papers' diagnostics (``seedr diagnose``, the ``diagnose`` experiment step): the
encoder under test from a model or run folder, a pre-training objective with its trained decoder from
a run folder's checkpoint (CPDAE's word decoder, SEED-Encoder's weak decoder), texts from corpus
files, positive pairs from BEIR folders or articles; then ``diagnose`` runs what its inputs allow
through ``seedr.diagnostics.measures`` and ``write_diagnostics`` writes ``diagnostics.json``
(``{"metrics": {...}, "details": {...}}``, read by ``seedr report``) and ``diagnostics.png``
(``seedr.diagnostics.plots``).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
from collections.abc import Callable, Iterable, Sequence
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
from seedr.diagnostics.measures import (
    PAPER_LENGTHS,
    cls_reliance,
    common_word_mass,
    decoded_words,
    embedding_statistics,
    most_frequent_tokens,
    random_pair_similarity,
    reliance_summary,
    require_weak_decoder,
    require_word_decoder,
    texts_of_length,
    word_probabilities,
)
from seedr.diagnostics.plots import plot_diagnostics
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


# ------------------------------------------------------------------ everything, written down


def diagnose(model: str | os.PathLike, texts: Sequence[str] = (),
             pairs_for_statistics: Sequence[PositivePair] = (), lengths: Iterable[int] = PAPER_LENGTHS,
             pairs: int = 256, seed: int = 13, pooling: DiagnosticPooling = "cls", word_texts: int = 8,
             top_k: int = 10, common_words: int = 100, batch_size: int = DIAGNOSE_BATCH_SIZE,
             show_progress: bool = False, reliance_texts: int = 64, masked_lm_texts: int = 256,
             masked_lm_curve_steps: bool = False) -> dict[str, Any]:
    """Run the diagnostics the inputs allow; returns ``{"metrics": {name: number}, "details": {...}}``.

    - ``texts`` → random-pair similarity at each length (``random_pair_cosine@L`` and its ``_std``);
      when ``model`` is a run folder whose objective declares ``decoded_words`` (CPDAE), also the decoded words of the first ``word_texts`` texts
      and the mass on the ``common_words`` most frequent tokens of ``texts`` (``decoded_common_mass``,
      ``decoded_own_rare_mass``, ``target_common_mass``); when it declares ``cls_reliance`` (SEED-Encoder), the
      decoder's reliance on [CLS] by position over the first ``reliance_texts`` texts that fill the
      run's training length (Figure 4: the curve in ``details["cls_reliance"]``, and
      ``cls_reliance@first``, ``cls_reliance@last_quarter``, ``cls_reliance_drop``; 0: skip); when it
      declares ``masked_lm`` (an MLM head: MLM, SEED-Encoder, CPDAE), the held-out masked-LM loss
      and masked-token accuracy over the first ``masked_lm_texts`` texts, with the unigram plateau of the
      same targets (``heldout_mlm_loss``, ``heldout_masked_accuracy``, ``unigram_loss``,
      ``unigram_accuracy``; 0: skip), for every kept checkpoint when ``masked_lm_curve_steps``
      (``details["masked_lm"]["curve"]``);
    - ``pairs_for_statistics`` → ``alignment``, ``uniformity``, ``anisotropy``.
    """
    if not texts and not pairs_for_statistics:
        raise ValueError("nothing to diagnose: give texts (random-pair similarity, CPDAE words) and/or "
                         "positive pairs (alignment, uniformity, anisotropy)")
    metrics: dict[str, float] = {}
    details: dict[str, Any] = {"model": str(model), "pooling": pooling, "seed": seed}
    if texts:
        encoder, tokenizer, resolved = load_encoder_parts(model, pooling=pooling)
        similarity = random_pair_similarity(encoder, tokenizer, texts, lengths, pairs, seed, pooling=resolved,
                                            batch_size=batch_size, show_progress=show_progress)
        for length, (mean, std) in similarity.items():
            metrics[f"random_pair_cosine@{length}"] = mean
            metrics[f"random_pair_cosine_std@{length}"] = std
        details["random_pair_similarity"] = {"texts": len(texts), "pairs_per_length": pairs,
                                             "by_length": {str(k): list(v) for k, v in similarity.items()}}
    supported = run_diagnostics(model) if isinstance(model, str | os.PathLike) else frozenset()
    if texts and word_texts > 0 and "decoded_words" in supported:
        objective, max_length = load_word_decoder(model)
        shown = list(texts[:word_texts])
        common = most_frequent_tokens(objective.tokenizer, texts, common_words)
        mass = common_word_mass(objective, shown, common, max_length)
        metrics.update({"decoded_common_mass": mass["common_mass"],
                        "decoded_own_rare_mass": mass["own_rare_mass"],
                        "target_common_mass": mass["target_common_mass"]})
        details["decoded_words"] = {
            "max_length": max_length, "common_words": objective.tokenizer.convert_ids_to_tokens(common),
            "top_words": [[[word, probability] for word, probability in words]
                          for words in decoded_words(objective, shown, top_k, max_length)],
            "word_probabilities": [[word, probability] for word, probability
                                   in word_probabilities(objective, shown[0], max_length)],
        }
    if texts and reliance_texts > 0 and "cls_reliance" in supported:
        objective, max_length = load_weak_decoder(model)
        chosen = texts_of_length(objective.tokenizer, texts, max_length, reliance_texts)
        if not chosen:
            raise ValueError(f"none of the {len(texts)} texts fills the run's {max_length} training tokens: "
                             "the reliance curve needs texts that long (give more or longer texts)")
        reliance = cls_reliance(objective, chosen, max_length, batch_size)
        metrics.update(reliance_summary(reliance))
        options = objective.config
        details["cls_reliance"] = {"max_length": max_length, "attention_span": options.attention_span,
                                   "decoder_layers": options.decoder_layers, "bottleneck": options.bottleneck,
                                   "cosine": reliance.cosine, "texts": reliance.texts}
    if texts and masked_lm_texts > 0 and "masked_lm" in supported:
        curve = masked_lm_curve(model, texts[:masked_lm_texts], batch_size=batch_size, seed=seed,
                                every_checkpoint=masked_lm_curve_steps)
        newest = curve[-1]
        metrics.update({"heldout_mlm_loss": newest["mlm_loss"], "heldout_masked_accuracy": newest["masked_accuracy"],
                        "unigram_loss": newest["unigram_loss"], "unigram_accuracy": newest["unigram_accuracy"]})
        details["masked_lm"] = {"max_length": newest["max_length"], "sequences": newest["sequences"],
                                "targets": newest["targets"], "curve": curve}
    if pairs_for_statistics:
        if len(pairs_for_statistics) < 2:
            raise ValueError(f"embedding statistics need at least two positive pairs, got {len(pairs_for_statistics)}")
        queries, documents = embed_pairs(model, pairs_for_statistics, pooling=pooling, batch_size=batch_size,
                                         show_progress=show_progress)  # (N, H) each
        metrics.update(embedding_statistics(queries, documents))
        details["embedding_statistics"] = {"positive_pairs": len(pairs_for_statistics)}
    return {"metrics": metrics, "details": details}


def write_diagnostics(result: dict[str, Any], out_dir: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``out_dir/diagnostics.json`` (``seedr report`` reads its ``metrics``) and
    ``out_dir/diagnostics.png``; returns both paths."""

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with atomic_write(out_dir / "diagnostics.json") as stream:
        json.dump(result, stream, indent=2)
    return out_dir / "diagnostics.json", plot_diagnostics(result, out_dir / "diagnostics.png")


__all__ = [
    "DiagnosticPooling",
    "EncoderSource",
    "PositivePair",
    "beir_positive_pairs",
    "corpus_texts",
    "diagnose",
    "embed_pairs",
    "ict_positive_pairs",
    "load_encoder_parts",
    "load_objective",
    "load_weak_decoder",
    "load_word_decoder",
    "masked_lm_curve",
    "positive_pairs",
    "run_diagnostics",
    "write_diagnostics",
]
