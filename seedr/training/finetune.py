"""Fine-tuning a pre-trained encoder into a dense retriever: the training data, its collation, dev
evaluation during training, static-negative rounds and few-shot runs. The loop itself is the shared
``seedr.engine.trainer.Trainer``; the settings, ``FinetuneConfig``, are defined in the torch-free
``seedr.config.settings`` (imported from there, not from here).

The set-ups of the papers, as recipes (``seedr/recipes/finetune/``):

- SEED-Encoder's Siamese (BM25 Neg): triplet loss, negatives sampled from the top 100 BM25 results
  (Lu et al., EMNLP 2021, §4.1–4.2); DPR: NLL over the positive, one BM25 negative and the batch's other
  documents (Karpukhin et al. 2020); ANCE: NLL with negatives from the current model's top 200,
  refreshed during training (Xiong et al. 2021); CPDAE: static hard negatives mined with the model,
  re-mined and fine-tuned for an epoch per round (Ma et al., CIKM 2022, §4.1); few-shot fine-tuning on
  0.1k/1k/10k queries averaged over three samples (CPDAE §4.4) or on 1%/5%/80% of them (Chang et al.,
  ICLR 2020, §4.1).

A run folder holds what ``Trainer`` writes (``encoder/``, ``checkpoints/``, ``metrics.jsonl``,
``config.yaml``, ``run.json``), plus the mined negatives (``negatives/`` or ``ance/refresh-<step>/``,
each with its ``provenance.json``); with rounds, one such folder per round (``round-<r>/``) and the last
round's encoder in ``encoder/``; few-shot, one per seed (``seed-<s>/``) and ``few-shot.json``/``.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import random
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from accelerate import PartialState
from rich.console import Console
from transformers import PreTrainedTokenizerBase

from seedr.config.loading import to_dict
from seedr.config.settings import ENCODE_BATCH_SIZE, EPOCH_UNITS, POSITIVE_GRADE, FinetuneConfig, TrainConfig
from seedr.data.corpus import load_corpus
from seedr.data.queries import read_qrels, read_queries
from seedr.data.records import Document, Qrels
from seedr.data.training_log import METRICS
from seedr.data.training_sets import TrainingSet, load_training_set
from seedr.engine.checkpoint import PRODUCT, latest_checkpoint
from seedr.engine.run_state import uses_cpu
from seedr.engine.trainer import Callback, Trainer
from seedr.evaluation.metrics import check_dev_metrics, evaluate_run
from seedr.hardware import resolve_mixed_precision
from seedr.io import DataError, atomic_directory, atomic_write
from seedr.io.run_folders import check_run_folder
from seedr.losses import build_loss
from seedr.losses.gather import NO_KEY, document_key
from seedr.modeling.encoder import check_lengths
from seedr.modeling.folders import PretrainedSeed, pretrained_seed
from seedr.negatives import NEGATIVES, NegativeStrategy, NegativeTable
from seedr.negatives.base import positives
from seedr.provenance import record_run
from seedr.retrieval.dual_encoder import DualEncoder
from seedr.retrieval.encode import document_input, tokenize_pairs
from seedr.training.early_stopping import BEST, BEST_RECORD, EarlyStopping, publish_best
from seedr.training.few_shot import run_few_shot
from seedr.training.run_card import describe_run

console = Console(stderr=True)


# --------------------------------------------------------------------------------------- training data


@dataclass(frozen=True)
class FinetuneExample:
    """One training example: a query, one of its positives, and its sampled hard negatives."""

    query_id: str
    query: str
    positive: Document
    negatives: tuple[Document, ...]


class FinetuneData:
    """The ``TrainData`` of fine-tuning: each epoch, every unit once — every labelled (query, positive)
    pair (``epoch_over="pairs"``), or every training query with one of its positives drawn
    (``"queries"``) — in an order shuffled by ``(seed, pass)``, each with ``negatives_per_query``
    negatives sampled from the current negative table.

    With ``examples_per_epoch`` set, "epochs" are episodes of that many examples cut from the endless
    sequence of shuffled passes — ANCE's set-up, where each episode trains on the negatives of the latest
    refresh (``use_negatives``). The current table's folder is the resumable state.

    Positives are the documents of grade ``positive_grade`` or more; every document of a positive grade
    is kept out of the query's negatives (``relevant``), those below ``positive_grade`` too.
    """

    def __init__(self, training: TrainingSet, table: NegativeTable, table_dir: Path, run_dir: Path,
                 negatives_per_query: int, seed: int, examples_per_epoch: int | None = None,
                 epoch_over: str = EPOCH_UNITS[0], positive_grade: int = POSITIVE_GRADE) -> None:
        self.training, self.run_dir, self.seed = training, run_dir, seed
        self.negatives_per_query = negatives_per_query
        self.examples_per_epoch = examples_per_epoch
        self.relevant = positives(training.qrels)
        self.trained = {qid: {doc for doc, grade in judged.items() if grade >= positive_grade}
                        for qid, judged in training.qrels.items()}
        self.use_negatives(table, table_dir)
        self.query_ids = sorted(qid for qid in training.queries if self.trained.get(qid)
                                and (negatives_per_query == 0 or table.negatives.get(qid)))
        dropped = len(training.queries) - len(self.query_ids)
        if dropped:
            console.print(f"[yellow]{dropped} training queries have no negative in {table_dir} and are left out[/]")
        if not self.query_ids:
            raise ValueError(f"no training query has both a positive and a negative (negatives: {table_dir})")
        # (query, positive), the positive None when it is drawn anew each epoch
        self.units: list[tuple[str, str | None]] = (
            [(qid, doc) for qid in self.query_ids for doc in sorted(self.trained[qid])] if epoch_over == "pairs"
            else [(qid, None) for qid in self.query_ids])

    def use_negatives(self, table: NegativeTable, directory: Path) -> None:
        """Sample from ``table`` (saved in ``directory``) from the next epoch on."""
        self.table, self.table_dir = table, Path(directory)

    def _pass_order(self, number: int) -> list[tuple[str, str | None]]:
        order = list(self.units)
        random.Random(f"{self.seed}:pass:{number}").shuffle(order)
        return order

    def dataset(self, epoch: int) -> list[FinetuneExample]:
        size = self.examples_per_epoch or len(self.units)
        rng = random.Random(f"{self.seed}:epoch:{epoch}")
        examples = []
        for position in range(epoch * size, (epoch + 1) * size):
            qid, positive = self._pass_order(position // len(self.units))[position % len(self.units)]
            positive = positive or rng.choice(sorted(self.trained[qid]))
            negatives = self.table.sample(qid, self.negatives_per_query, rng)
            if len(negatives) < self.negatives_per_query:
                raise ValueError(f"query {qid!r} has no negative left in {self.table_dir}")
            corpus = self.training.corpus
            examples.append(FinetuneExample(qid, self.training.queries[qid], corpus[positive],
                                            tuple(corpus[doc] for doc in negatives)))
        return examples

    def state_dict(self) -> dict[str, Any]:
        return {"negatives": str(self.table_dir.relative_to(self.run_dir))}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        directory = self.run_dir / state["negatives"]
        self.use_negatives(NegativeTable.load(directory), directory)


class FinetuneCollator:
    """Examples → the keyword tensors of ``DualEncoder.forward``.

    Documents are laid out positives first (B), then each query's N negatives in query order (B·N);
    ``document_keys`` (B + B·N,) identify them and ``relevant_keys`` (B, R) the documents relevant to
    each query (``seedr.losses.gather.document_key`` of the document id, ``NO_KEY`` padding), so that the
    loss can tell the documents of the batch — of every process's batch under ``global_in_batch`` — that
    are relevant to a row's query without being its target (in-batch training must not push them away).
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, query_max_length: int, document_max_length: int,
                 relevant: Mapping[str, set[str]], title: str = "pair") -> None:
        self.tokenizer, self.relevant, self.title = tokenizer, relevant, title
        self.query_max_length, self.document_max_length = query_max_length, document_max_length

    def __call__(self, examples: list[FinetuneExample]) -> dict[str, torch.Tensor]:
        queries = self.tokenizer([e.query for e in examples], padding=True, truncation=True,
                                 max_length=self.query_max_length, return_tensors="pt")
        documents = [e.positive for e in examples] + [d for e in examples for d in e.negatives]
        # the documents' input at search time (TextEncoder.encode_documents), e.g. title [SEP] text
        firsts, seconds = zip(*(document_input(document, self.title) for document in documents))
        encoded = self.tokenizer.pad(tokenize_pairs(self.tokenizer, firsts, seconds, self.document_max_length),
                                     return_tensors="pt")
        relevant = [sorted(self.relevant.get(example.query_id, ())) for example in examples]
        relevant_keys = torch.full((len(examples), max(map(len, relevant), default=0)), NO_KEY)  # (B, R)
        for row, document_ids in enumerate(relevant):
            relevant_keys[row, :len(document_ids)] = torch.tensor([document_key(i) for i in document_ids])
        batch = {f"query_{key}": value for key, value in queries.items()}
        batch.update({f"document_{key}": value for key, value in encoded.items()})
        batch["document_keys"] = torch.tensor([document_key(document.id) for document in documents])  # (B + B·N,)
        batch["relevant_keys"] = relevant_keys
        return batch


# ----------------------------------------------------------------------------------- dev evaluation


#: The development evaluation's settings: when and how a run is scored on its dev set, not what it
#: trains, so a resumed run may change them (``Trainer(safe_to_change=...)``).
DEV_SETTINGS = frozenset({"dev_every", "dev_metrics", "dev_depth", "patience"})


@dataclass
class DevSet:
    corpus: Mapping[str, Document]
    queries: dict[str, str]
    qrels: Qrels


def load_dev_set(config: FinetuneConfig, training: TrainingSet | None) -> DevSet | None:
    """The dev set named by the config (queries and corpus default to the training folder's)."""
    if config.dev_qrels is None:
        return None
    corpus = load_corpus(config.dev_corpus) if config.dev_corpus else training.corpus
    queries_path = config.dev_queries or Path(config.train_data) / "queries.jsonl"
    if not config.dev_queries and not Path(queries_path).exists():
        raise DataError(queries_path, "no dev queries: give --dev-queries (needed unless the training data "
                                      "is a BEIR folder with queries.jsonl)")
    return _labelled_set(corpus, queries_path, config.dev_qrels)


def load_watch_set(config: FinetuneConfig) -> DevSet | None:
    """The labelled queries ``config.watch`` names (``qrels``, ``queries``, ``corpus``), scored beside the dev
    set and never trained, stopped or kept by (``watch/<metric>``): what a label-free validation is read
    against where labels exist."""
    if not config.watch:
        return None
    return _labelled_set(load_corpus(config.watch["corpus"]), config.watch["queries"], config.watch["qrels"])


def _labelled_set(corpus: Mapping[str, Document], queries_path: Any, qrels_path: Any) -> DevSet:
    """The queries of ``queries_path`` judged in ``qrels_path`` (files, folders or quoted globs), over ``corpus``."""
    queries = read_queries(queries_path)  # a file, a folder or a quoted glob (seedr.data.inputs)
    qrels = read_qrels(qrels_path, queries=queries, documents=corpus)
    return DevSet(corpus, {qid: queries[qid] for qid in qrels}, qrels)


class DevEvaluation(Callback):
    """Retrieval metrics on a dev set with the in-memory model every ``every`` steps and at the last
    step, logged as ``dev/<metric>`` in ``metrics.jsonl`` — SEED-Encoder's fine-tuning curves (Lu et
    al. 2021, Figure 6(a–b): dev MRR@10 against fine-tuning steps). Exact search (faiss Flat)."""

    def __init__(self, dev: DevSet, metrics: Sequence[str], every: int, depth: int = 100,
                 batch_size: int = ENCODE_BATCH_SIZE, prefix: str = "dev") -> None:
        self.dev, self.metrics, self.every, self.depth, self.batch_size = dev, list(metrics), every, depth, batch_size
        self.prefix = prefix  # "watch": labelled queries read beside a label-free dev set
        self.latest: dict[str, float] = {}
        self.step: int | None = None  # the step ``latest`` was evaluated at

    def evaluated(self) -> tuple[int | None, dict[str, float]]:
        """``(step, metrics)`` of the latest evaluation (what ``EarlyStopping`` watches)."""
        return self.step, self.latest

    def evaluate(self, model: DualEncoder) -> dict[str, float]:
        run = model.rank(self.dev.corpus, self.dev.queries, self.depth, batch_size=self.batch_size,
                         show_progress=True)  # a whole-corpus encoding: minutes on a CPU
        self.latest = {f"{self.prefix}/{name}": value
                       for name, value in evaluate_run(run, self.dev.qrels, self.metrics).items()}
        return self.latest

    def on_step_end(self, trainer: Trainer, step: int) -> dict[str, float] | None:
        due = (self.every and step % self.every == 0) or step == trainer.config.max_steps
        if not due or not trainer.accelerator.is_main_process:
            return None
        self.step = step
        return self.evaluate(trainer.unwrapped_model())

    def log_initial(self, model: DualEncoder, run_dir: Path, beside: Sequence[DevEvaluation] = ()) -> dict[str, float]:
        """Evaluate before the first step, with the evaluations ``beside`` it, and start ``metrics.jsonl`` with
        them (step 0 of the curve)."""
        metrics: dict[str, float] = {}
        for evaluation in (self, *beside):
            evaluation.step = 0
            metrics.update(evaluation.evaluate(model))
        with atomic_write(run_dir / METRICS) as stream:
            stream.write(json.dumps({"step": 0, "epoch": 0, **metrics}) + "\n")
        return metrics


# --------------------------------------------------------------------------------------- orchestration


def seed_pooling_line(config: FinetuneConfig) -> str | None:
    """The line a fine-tuning starts with when its model is a ``pretrained_seed``: the pooling it trains
    through, and whether it is the one the seed was pre-trained through — "pooling: cls, as the seed runs/seed
    was pre-trained (SEED-Encoder's [CLS] bottleneck)", or, where the settings chose another, "pooling: mean
    (set), though the seed runs/seed was pre-trained through cls (...)". ``None`` for any other model."""
    seed = pretrained_seed(config.model)
    if seed is None:
        return None
    pooling = config.pooling or seed.pooling  # null: the folder's own, the seed's
    if pooling == seed.pooling:
        return f"pooling: {pooling}, as the seed {seed.run} was pre-trained ({seed.representation})"
    return (f"pooling: {pooling} (set), though the seed {seed.run} was pre-trained through {seed.pooling} "
            f"({seed.representation})")


def build_model(config: FinetuneConfig, model_path: str) -> DualEncoder:
    loss = build_loss(config.loss, config.loss_options)
    model = DualEncoder.from_pretrained(model_path, loss, shared=config.shared_encoder,
                                        pooling=config.pooling,  # type: ignore[arg-type]
                                        similarity=config.similarity, scale=config.scale,
                                        query_max_length=config.query_max_length,
                                        document_max_length=config.document_max_length, title=config.title)
    if config.reinitialize:
        model.reinitialize(config.train.seed)
    if resolve_mixed_precision(config.train.mixed_precision, "cpu" if uses_cpu() else "cuda") == "bf16":
        model.inference_dtype = torch.bfloat16
    return model


def steps_for_epochs(epochs: float, examples: int, train: TrainConfig, processes: int, drop_last: bool) -> int:
    """Optimizer steps of ``epochs`` passes over ``examples``: each process takes batches of
    ``train.batch_size`` (the partial last one kept unless ``drop_last``), ``train.accumulation_steps``
    of them (a global batch's included) make an optimizer step, and an epoch's last accumulation window
    steps the optimizer even when short (Accelerate syncs at the loader's end)."""
    per_batch = train.batch_size * processes
    batches = examples // per_batch if drop_last else math.ceil(examples / per_batch)
    return max(1, math.ceil(epochs * math.ceil(batches / train.accumulation_steps(processes))))


def _mine_or_load(strategy: NegativeStrategy, training: TrainingSet, model: DualEncoder, model_source: str,
                  directory: Path, reuse: bool) -> NegativeTable:
    """Mine the negatives into ``directory``, or read them back when resuming a run that has them."""
    if reuse and (directory / "provenance.json").exists():
        console.print(f"negatives: reusing {directory}")
        return NegativeTable.load(directory)
    console.print(f"negatives: mining with [bold]{strategy.name}[/] for {len(training.queries)} queries")
    table = strategy.mine(training.corpus, training.queries, training.qrels, model, model_source,
                          given=training.given_negatives)
    table.provenance.setdefault("options", strategy.options())
    table.save(directory)
    return table


def _train_one(config: FinetuneConfig, training: TrainingSet, dev: DevSet | None, watched: DevSet | None,
               strategy: NegativeStrategy, model_path: str, out_dir: Path, resume: bool) -> dict[str, Any]:
    """One fine-tuning run (one round, one seed) in ``out_dir``, watching ``watched`` beside its dev set;
    returns its summary."""
    model = build_model(config, model_path)
    resuming = resume and latest_checkpoint(out_dir) is not None
    table_dir = out_dir / strategy.negatives_folder
    table = _mine_or_load(strategy, training, model, model_path, table_dir, reuse=resuming)
    per_query = config.negatives_per_query if strategy.hard_negatives else 0
    train_config = config.train
    processes = PartialState().num_processes
    per_step = train_config.batch_size * train_config.accumulation_steps(processes) * processes
    episode = strategy.episode_steps * per_step if strategy.episode_steps else None
    data = FinetuneData(training, table, table_dir, out_dir, per_query, train_config.seed, episode,
                        config.epoch_over, config.positive_grade)
    if config.epochs is not None:  # passes over the units (pairs or queries) that can be trained on
        steps = steps_for_epochs(config.epochs, len(data.units), train_config, PartialState().num_processes,
                                 config.drop_last)
        train_config = dataclasses.replace(train_config, max_steps=steps)  # a warm-up ratio follows
    callbacks = strategy.callbacks(data, training.corpus, training.queries, training.qrels, out_dir)
    evaluation, stopping = None, None
    if dev is not None:
        evaluation = DevEvaluation(dev, config.dev_metrics, config.dev_every, config.dev_depth,
                                   config.encode_batch_size)
        callbacks.append(evaluation)
        if config.patience or config.keep_best:  # after the evaluation, which it reads
            stopping = EarlyStopping(evaluation.evaluated, config.dev_metrics[0], config.patience,
                                     out_dir / BEST if config.keep_best else None,
                                     lambda unwrapped, directory: unwrapped.save(directory))
            callbacks.append(stopping)
    watching = None if watched is None or evaluation is None else DevEvaluation(
        watched, config.dev_metrics, config.dev_every, config.dev_depth, config.encode_batch_size, prefix="watch")
    if watching is not None:  # scored after the dev set, before the early stopping that reads only the dev set
        callbacks.insert(callbacks.index(evaluation) + 1, watching)
    collate = FinetuneCollator(model.tokenizer, config.query_max_length, config.document_max_length, data.relevant,
                               model.title)
    # config.yaml records what the run used, the model folder's settings included, not the nulls that chose them
    resolved = dataclasses.replace(config, model=model_path, train=train_config, shared_encoder=model.shared,
                                   pooling=model.pooling, similarity=model.similarity.name,
                                   scale=model.similarity.scale, title=model.title)
    trainer = Trainer(model, data, collate, train_config, out_dir,
                      lambda unwrapped, directory: unwrapped.save(directory), callbacks,
                      run_config=resolved, drop_last=config.drop_last, described=describe_run(to_dict(resolved)),
                      safe_to_change=DEV_SETTINGS)
    if evaluation is not None and not resuming and trainer.accelerator.is_main_process:
        initial = evaluation.log_initial(model, out_dir, beside=[watching] if watching is not None else [])
        console.print("dev before fine-tuning: " + ", ".join(f"{k} {v:.4f}" for k, v in initial.items()))
        if stopping is not None:  # the starting model is the first candidate for the best
            stopping.observe(0, initial, model)
    last = trainer.train(resume=resume)
    summary = {"run": str(out_dir), "encoder": str(out_dir / PRODUCT), "steps": trainer.step,
               "queries": len(data.query_ids), "examples_per_epoch": len(data.units), "last": last,
               "dev": {k: v for k, v in last.items() if k.startswith("dev/")}}
    if stopping is not None:
        summary.update(best=stopping.record(), stopped=trainer.stopped)
        if config.keep_best and (out_dir / BEST / BEST_RECORD).is_file() and trainer.accelerator.is_main_process:
            publish_best(out_dir / BEST, out_dir, describe_run(to_dict(resolved)))
            console.print(f"encoder: the best {stopping.key} ({stopping.best:.4f}) was at step {stopping.best_step}")
    return summary


def check_finetuning(config: FinetuneConfig) -> None:
    """Refuse what a fine-tuning of ``config`` would refuse of its settings and its model before reading its
    data: dev metrics deeper than the dev ranking (``check_dev_metrics``), lengths beyond the model's
    positions (``check_lengths``) and a model folder it would not load (``DualEncoder.check_folder``).
    ``finetune`` asks it first, and ``seedr adapt`` before it mines its pairs, so that a refusal leaves
    no folder behind."""
    check_dev_metrics(config)
    check_lengths(config.model, {"query_max_length": config.query_max_length,
                                 "document_max_length": config.document_max_length})
    DualEncoder.check_folder(config.model, config.shared_encoder)


def finetune(config: FinetuneConfig, out_dir: str | Path, resume: bool = False) -> dict[str, Any]:
    """Fine-tune ``config.model`` on ``config.train_data``; few-shot seeds and static rounds included.

    Returns a summary: the run folder, the encoder, the last logged metrics and the final dev metrics.
    Every refusal comes before the run folder is made: an output the run would refuse
    (``check_run_folder``), settings and a model it would refuse (``check_finetuning``), early stopping,
    keeping the best model or a watch without a dev set to watch, a global batch the processes cannot
    divide, and training, dev and watched files it cannot read.
    """
    out_dir = Path(out_dir)
    check_run_folder(out_dir, resume)
    if (config.patience or config.keep_best) and config.dev_qrels is None:
        raise ValueError("patience and keep_best watch the development evaluation: give dev_qrels (--dev-qrels)")
    if config.watch and config.dev_qrels is None:
        raise ValueError("watch is scored at the development evaluations: give dev_qrels (--dev-qrels)")
    check_finetuning(config)
    said = seed_pooling_line(config)
    if said is not None:
        console.print(said, soft_wrap=True, highlight=False, markup=False)
    # every config.yaml of the run (this folder's, its rounds' and seeds') records the accumulation used
    config.train.resolve_accumulation(PartialState().num_processes)
    training = load_training_set(config.train_data, config.train_split)
    dev = load_dev_set(config, training)
    watched = load_watch_set(config)  # read once, scored by every round and seed
    if not (out_dir / "config.yaml").exists():  # marks the folder as a run before negatives are mined into it
        record_run(out_dir, config, config.train.seed)
    rounds = functools.partial(_rounds, watched=watched)
    if config.few_shot is not None:
        return run_few_shot(config, training, dev, out_dir, resume, rounds)
    return rounds(config, training, dev, out_dir, resume)


def _rounds(config: FinetuneConfig, training: TrainingSet, dev: DevSet | None, out_dir: Path,
            resume: bool, watched: DevSet | None) -> dict[str, Any]:
    """Train once, or — static negatives with ``rounds`` > 1, CPDAE — mine → train → re-mine with the
    model just trained → train ..., each round in ``round-<r>/``, the last round's encoder in ``encoder/``."""
    strategy: NegativeStrategy = NEGATIVES.build(config.negatives, config.negative_options)
    rounds = getattr(strategy, "rounds", 1)
    if rounds == 1:
        return _train_one(config, training, dev, watched, strategy, config.model, out_dir, resume)
    record_run(out_dir, config, config.train.seed)
    model_path, summaries = config.model, []
    for number in range(1, rounds + 1):
        round_dir = out_dir / f"round-{number}"
        done = round_dir / "round.json"
        if resume and done.exists():
            summary = json.loads(done.read_text(encoding="utf-8"))
        else:
            console.rule(f"round {number} of {rounds}")
            if number > 1:  # re-mine with the model the previous round produced (CPDAE §4.1)
                options = {**config.negative_options, "run": None, "model": model_path}
                strategy = NEGATIVES.build(config.negatives, options)
            summary = _train_one(config, training, dev, watched, strategy, model_path, round_dir, resume)
            with atomic_write(done) as stream:
                json.dump(summary, stream, indent=2)
        summaries.append(summary)
        model_path = summary["encoder"]
    with atomic_directory(out_dir / PRODUCT) as temporary:
        shutil.copytree(model_path, temporary, dirs_exist_ok=True)
    return {**summaries[-1], "run": str(out_dir), "encoder": str(out_dir / PRODUCT), "rounds": summaries}


__all__ = [
    "DevEvaluation",
    "EPOCH_UNITS",
    "DevSet",
    "FinetuneCollator",
    "FinetuneConfig",
    "FinetuneData",
    "FinetuneExample",
    "PretrainedSeed",
    "build_model",
    "check_finetuning",
    "finetune",
    "load_dev_set",
    "pretrained_seed",
    "seed_pooling_line",
    "steps_for_epochs",
]
