"""Pre-training an encoder with one objective: the library behind ``seedr pretrain``.

``PretrainConfig`` is the whole recipe (``seedr/recipes/pretrain/*.yaml``): which objective and its options,
the encoder (from scratch, or continued from a checkpoint), the training data and the optimisation; it is
defined, with ``ModelConfig`` and ``DataConfig``, in the torch-free ``seedr.config.settings`` (imported from there,
not from here). ``pretrain(config, out_dir)`` builds everything and runs the shared ``Trainer``.

Two ways to get an encoder, as the papers did:

- **from scratch** (SEED-Encoder, Lu et al., 2021, §4.1: "All our models are pre-trained from
  scratch, following the setup of BERT-base"): ``model.size`` picks a BERT shape from
  ``MODEL_SIZES`` (overridable field by field) and ``model.tokenizer`` a tokenizer folder, e.g. the
  32,768-token WordPiece vocabulary ``seedr prepare`` trains;
- **continued** (CPDAE, Ma et al., 2022, §4.1.3: "We use BERT to initialize our encoder"):
  ``model.init`` is a local Hugging Face folder, a seedr run folder, or ``minilm``.

Single-text objectives (``input_kind == "tokens"``: mlm, seed, cpdae) train on token shards, made on
first use and cached under ``<out>/../shards/<key>`` (the key covers the corpus files' sizes and
modification times, the tokenizer, the length and the packing), so runs beside each other share them;
``data.shards`` names a folder instead. Under several processes the main one tokenises while the
others wait at a barrier; a corpus that takes longer than the process group's timeout (30 minutes by
default) is best tokenised by one process first (the same command without a launcher, stopped once
training starts: the shards stay cached). Two-tower objectives (``"pairs"``: ict, bfs, wlp, ict_bfs_wlp)
draw (query, document) pairs from the corpus files every epoch (``seedr.objectives.two_tower``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from accelerate.utils import set_seed
from rich.console import Console
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from seedr.config.loading import from_dict, to_dict
from seedr.config.settings import MAX_LENGTH, ModelConfig, PretrainConfig
from seedr.data.corpus import read_corpus
from seedr.data.default import default_corpus_path, default_documents
from seedr.data.inputs import input_files
from seedr.data.records import Document
from seedr.data.shards import (
    TokenShardData,
    ensure_token_shards,
    shard_key,
    source_fingerprint,
)
from seedr.engine.batches import TrainData
from seedr.engine.checkpoint import latest_checkpoint
from seedr.engine.run_state import process_state
from seedr.engine.trainer import Callback, Trainer
from seedr.io.run_folders import check_run_folder
from seedr.modeling.bow_mlp import build_bow_mlp
from seedr.modeling.encoder import build_encoder, check_lengths, load_encoder, load_tokenizer
from seedr.modeling.folders import EncoderShape, encoder_shape
from seedr.objectives import OBJECTIVES
from seedr.objectives.base import Objective, PretrainingCorpus
from seedr.registry import Registry
from seedr.training.compute_budget import apply_flops_budget
from seedr.training.run_card import describe_run

console = Console(stderr=True)

#: BERT shapes for from-scratch pre-training: (layers, hidden, heads). ``base`` is BERT-base
#: (Devlin et al., 2019); the smaller ones are the compact BERTs of Turc et al. (2019).
MODEL_SIZES: Registry[dict[str, int]] = Registry("model size")
for _name, (_layers, _hidden, _heads) in {"tiny": (2, 128, 2), "mini": (4, 256, 4), "small": (4, 512, 8),
                                          "medium": (8, 512, 8), "base": (12, 768, 12)}.items():
    MODEL_SIZES.register(_name)({"num_hidden_layers": _layers, "hidden_size": _hidden,
                                 "num_attention_heads": _heads})


def build_model(config: ModelConfig, max_seq_length: int) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """``(encoder, tokenizer)``: loaded from ``config.init``, or a new BERT of ``config.size``.

    A new BERT gets positions for ``max_seq_length`` tokens; a loaded one has its own, and a longer
    ``max_seq_length`` is refused before anything is loaded.
    """
    if config.init is not None:
        check_lengths(config.init, {"data.max_seq_length": max_seq_length})
        encoder = load_encoder(config.init)
        tokenizer = load_tokenizer(config.tokenizer or config.init)
        if len(tokenizer) > encoder.config.vocab_size:
            raise ValueError(f"tokenizer {config.tokenizer!r} has {len(tokenizer)} tokens but {config.init!r} "
                             f"embeds only {encoder.config.vocab_size}")
        return encoder, tokenizer
    config.check_source()
    tokenizer = load_tokenizer(config.tokenizer)
    if config.architecture == "bow_mlp":
        return build_bow_mlp(len(tokenizer), pad_token_id=tokenizer.pad_token_id or 0,
                             ignored_token_ids=tokenizer.all_special_ids, **config.bow_mlp), tokenizer
    if config.architecture != "bert":
        raise ValueError(f"unknown model.architecture {config.architecture!r}; valid: bert, bow_mlp")
    encoder = build_encoder(vocab_size=len(tokenizer), intermediate_size=config.intermediate_size,
                            max_position_embeddings=max(MAX_LENGTH, max_seq_length), dropout=config.dropout,
                            pad_token_id=tokenizer.pad_token_id or 0, **_new_bert_shape(config))
    return encoder, tokenizer


def _new_bert_shape(config: ModelConfig) -> dict[str, int]:
    """Layers, hidden size and heads of a new BERT: ``config.size``'s, overridden field by field."""
    shape = dict(MODEL_SIZES.get(config.size))
    for name in ("hidden_size", "num_hidden_layers", "num_attention_heads"):
        if getattr(config, name) is not None:
            shape[name] = getattr(config, name)
    if shape["hidden_size"] % shape["num_attention_heads"]:
        raise ValueError(f"model.hidden_size {shape['hidden_size']} is not a multiple of "
                         f"model.num_attention_heads {shape['num_attention_heads']}")
    return shape


def new_model_shape(config: ModelConfig) -> EncoderShape | None:
    """The shape of the new BERT ``build_model`` makes from scratch, without making it (to size a run
    before it starts); ``None`` for the BoW-MLP, or while the tokenizer (which sets the vocabulary) does
    not exist yet."""
    if config.architecture != "bert" or config.tokenizer is None:
        return None
    try:
        vocab = len(load_tokenizer(config.tokenizer))
    except (OSError, ValueError):
        return None
    shape = _new_bert_shape(config)
    return EncoderShape(layers=shape["num_hidden_layers"], hidden=shape["hidden_size"],
                        intermediate=config.intermediate_size or 4 * shape["hidden_size"], vocab=vocab)


def model_shape(config: ModelConfig) -> EncoderShape | None:
    """The shape of the encoder a run trains, without building it: that of ``init`` when it continues
    one, else of the new BERT (``new_model_shape``); what a FLOPs budget and an ETA size work by."""
    return encoder_shape(config.init) if config.init else new_model_shape(config)


def _documents(files: list[Path], format: str) -> Iterator[Document]:
    for path in files:
        yield from read_corpus(path, format, skip_empty=True)


def token_data(config: PretrainConfig, tokenizer: PreTrainedTokenizerBase, out_dir: Path) -> TrainData:
    """``TokenShardData`` for a single-text objective, tokenising the corpus once (main process first)."""
    data = config.data
    files = input_files(data.corpus, "corpus") if data.corpus else []
    if files:
        sources: list[Any] = [entry for path in files for entry in source_fingerprint(path)]
        documents: Any = functools.partial(_documents, files, data.format)  # read only if not tokenised yet
    else:

        sources, documents = source_fingerprint(default_corpus_path()), default_documents
    directory = Path(data.shards) if data.shards else out_dir.parent / "shards" / shard_key(
        sources, tokenizer, data.max_seq_length, data.packing, data.max_documents)
    with process_state().main_process_first():  # one process tokenises, the others then read
        ensure_token_shards(documents, tokenizer, directory, sources=sources, max_seq_length=data.max_seq_length,
                            packing=data.packing, max_documents=data.max_documents)
    data.shards = str(directory)
    return TokenShardData(directory, seed=config.train.seed)


def pretraining_corpus(config: PretrainConfig, tokenizer: PreTrainedTokenizerBase, vocab_size: int,
                       out_dir: Path | None) -> PretrainingCorpus:
    """The corpus as objectives take it (``PretrainingCorpus``): its token shards are made on first use,
    beside the run folder ``out_dir`` (``token_data``), and only then."""
    files = input_files(config.data.corpus, "corpus") if config.data.corpus else []

    @functools.cache
    def token_shards() -> TokenShardData:
        if out_dir is None:
            raise ValueError(f"objective {config.objective_name!r} reads the corpus's token shards, which are "
                             "made beside the run: give the run folder")
        return token_data(config, tokenizer, out_dir)

    return PretrainingCorpus(files, config.train.seed, vocab_size, token_shards)


def build_objective(config: PretrainConfig, out_dir: str | Path | None = None
                    ) -> tuple[Objective, PretrainingCorpus]:
    """The objective module around a new or loaded encoder, and the corpus it trains on; fills
    ``config.objective`` with every option, those that come from the corpus included
    (``Objective.complete_options``, e.g. CPDAE's ``idf_path: auto``; they need ``out_dir``)."""
    objective_class = OBJECTIVES.get(config.objective_name)
    if config.model.architecture == "bow_mlp" and objective_class.input_kind != "pairs":
        raise ValueError(f"model.architecture bow_mlp has no token states for {config.objective_name!r}: "
                         f"use it with a two-tower objective (ict, bfs, wlp, ict_bfs_wlp)")
    objective_config = from_dict(objective_class.config_class, config.objective, "objective")
    towers = {f"objective.{name}": getattr(objective_config, name)
              for name in ("query_max_length", "document_max_length") if hasattr(objective_config, name)}
    if config.model.init is not None and towers:  # the two towers' lengths, checked as data.max_seq_length is
        check_lengths(config.model.init, towers)
    set_seed(config.train.seed)  # a from-scratch encoder and new heads start from the recipe's seed
    encoder, tokenizer = build_model(config.model, config.data.max_seq_length)
    corpus = pretraining_corpus(config, tokenizer, encoder.config.vocab_size,
                                None if out_dir is None else Path(out_dir))
    objective_class.complete_options(objective_config, corpus)
    config.objective = dataclasses.asdict(objective_config)
    config.model.tokenizer = config.model.tokenizer or config.model.init  # recorded as used
    return objective_class(encoder, tokenizer, objective_config), corpus


def pretrain(config: PretrainConfig, out_dir: str | Path, resume: bool = False,
             callbacks: Sequence[Callback] = ()) -> dict[str, float]:
    """Pre-train and write the run folder ``out_dir`` (see ``seedr.engine.trainer``).

    ``callbacks`` join the trainer's (a development evaluation: ``seedr.training.seed_validation``); one with
    a ``log_initial(objective, out_dir)`` method is called with the starting model before the first step of
    a run that is not resumed. Returns the metrics of the last logged step. An output the run would refuse (``check_run_folder``),
    and a global batch the processes cannot divide, are refused first, before the model is built or the
    corpus tokenised.

    Example:
        >>> config = load_config(PretrainConfig, recipe_path("seed", "pretrain"), ["train.max_steps=100"])
        >>> pretrain(config, "runs/seed", resume=True)
    """
    out_dir = Path(out_dir)
    check_run_folder(out_dir, resume)
    config.train.resolve_accumulation(process_state().num_processes)
    objective, corpus = build_objective(config, out_dir)
    budget = apply_flops_budget(config, objective.config, model_shape(config.model))
    changes = objective.changes(config.model.init) if config.model.init is not None else []
    if not (resume and latest_checkpoint(out_dir) is not None):  # a resumed run said them when it started
        for line in ([budget] if budget else []) + changes:
            console.print(line, soft_wrap=True, highlight=False, markup=False)
    data = objective.training_data(objective.config, corpus)
    max_seq_length = config.data.max_seq_length

    def save_product(model: torch.nn.Module, directory: Path) -> None:
        model.save_encoder(directory, max_seq_length=max_seq_length)

    trainer = Trainer(objective, data, objective.collate, config.train, out_dir, save_product, callbacks,
                      run_config=config, described=describe_run(to_dict(config), changes))
    if not (resume and latest_checkpoint(out_dir) is not None) and trainer.accelerator.is_main_process:
        for callback in callbacks:
            if callable(getattr(callback, "log_initial", None)):
                callback.log_initial(objective, out_dir)
    return trainer.train(resume=resume)


__all__ = ["MODEL_SIZES", "build_model", "build_objective",
           "model_shape", "new_model_shape", "pretrain", "pretraining_corpus", "token_data"]
