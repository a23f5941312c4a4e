"""What each unit of an experiment computes, sized before it runs, for its ETA (``seedr.experiments.eta``).

Training and dense retrieval are sized in floating-point operations: pre-training from what its objective
computes per example (``Objective.multiply_adds_per_example``), fine-tuning from its batches at the length
they are padded to, dense retrieval from the texts it encodes; set-up and analysis steps count one each.
A model a chain will make has the shape of the one it starts from.

This module is apart from the steps and tasks on purpose: a step's or a retrieval's folder is keyed on the
code that computes its result (``seedr.provenance.code_closure`` of the step class or task class), and an
estimate of how long that takes is not part of it. An edit here or in the progress line recomputes
nothing (``tests/test_experiments.py`` keeps it so).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seedr.config.loading import from_dict
from seedr.data.training_sets import load_training_set
from seedr.experiments.eta import SHARE_OF_MATMUL, UnitWork
from seedr.hardware import default_device, training_dtype
from seedr.negatives import NEGATIVES
from seedr.objectives import OBJECTIVES
from seedr.retrieval.encode import document_input
from seedr.training.compute_budget import (
    budget_steps,
    contrastive_multiply_adds,
    denoising_multiply_adds,
    flops_per_step,
)
from seedr.training.finetune import load_dev_set, load_watch_set
from seedr.training.mined_pairs import MAX_VALIDATION_DOCUMENTS, validation_count
from seedr.training.pretrain import new_model_shape

if TYPE_CHECKING:
    from seedr.experiments.steps.base import ExperimentStep
    from seedr.experiments.tasks import RetrievalTask
    from seedr.modeling.folders import EncoderShape

#: A model's shape (``seedr.modeling.folders.encoder_shape``), also of a model an earlier step will make.
ShapeOf = Callable[[str | None], "EncoderShape | None"]

#: Characters per WordPiece token of English text, about: to size an encoding before its texts are tokenised.
CHARACTERS_PER_TOKEN = 4.5


def tokens_of(characters: float, max_length: int) -> float:
    """About how many tokens a text of ``characters`` is encoded as, [CLS] and [SEP] included, cut at
    ``max_length``."""
    return min(float(max_length), 2 + characters / CHARACTERS_PER_TOKEN)


def padded_length(lengths: Sequence[float], batch: int) -> float:
    """The length a batch of ``batch`` texts drawn at random from ``lengths`` is padded to, expected: the
    expected maximum of ``batch`` draws, ``sum_i l_(i) [(i/n)^b - ((i-1)/n)^b]`` over the ``n`` lengths in
    ascending order (a padded batch's arithmetic grows with its longest text, not its average one)."""
    ordered, count = sorted(lengths), len(lengths)
    return sum(length * (((i + 1) / count) ** batch - (i / count) ** batch) for i, length in enumerate(ordered))


def made_shape(step: ExperimentStep, shape_of: ShapeOf) -> EncoderShape | None:
    """The shape of the encoder ``step`` makes: a pre-training from scratch that of the new model
    (``seedr.training.pretrain.new_model_shape``), every other step that of the one it starts from
    (training, averaging and fine-tuning keep it)."""
    if step.kind == "pretrain":
        model = step.config().model
        return shape_of(model.init) if model.init else new_model_shape(model)
    return shape_of(step.given_model())


def step_work(step: ExperimentStep, shape_of: ShapeOf) -> UnitWork:
    """What kind of work ``step`` is and how much of it; ``shape_of(model)`` gives a model's shape, also of
    one an earlier step of the chain will make. Steps other than training count one each of their kind."""
    sizer = _STEP_SIZERS.get(step.kind)
    return sizer(step, shape_of) if sizer else UnitWork(step.kind)


def _pretraining(step: ExperimentStep, shape_of: ShapeOf) -> UnitWork:
    """Every step's examples through the encoder and the objective's parts
    (``Objective.multiply_adds_per_example``), forward and backward (× 3), two operations per multiply-add;
    one kind per objective, whose parts cost differently."""
    config = step.config()
    kind = f"pre-training ({config.objective_name})"
    dtype = training_dtype(config.train.mixed_precision, default_device())
    shape = made_shape(step, shape_of)
    if shape is None:
        return UnitWork(kind, None, "pre-training", dtype)
    options = _objective_options(config)
    steps = budget_steps(config, options, shape) if config.flops_budget is not None else config.train.max_steps
    return UnitWork(kind, steps * flops_per_step(config, options, shape), "pre-training", dtype)


def _fine_tuning(step: ExperimentStep, shape_of: ShapeOf) -> UnitWork:
    """Every step's queries, positives and hard negatives through the encoder, forward and backward (× 3),
    two operations per multiply-add, each batch at the length it is padded to (``training_lengths``,
    ``padded_length``), and its dev evaluations (``_dev_evaluations``); a few-shot fine-tuning's epochs
    pass over its sample of the queries; sized once its training data exists (a set-up step may make it)."""
    config = step.config()
    train = config.train
    shape = made_shape(step, shape_of)
    dtype = training_dtype(train.mixed_precision, default_device())
    lengths = training_lengths(config)
    if shape is None or lengths is None:
        return UnitWork("fine-tuning", None, "fine-tuning", dtype)
    queries, documents = lengths
    batch = train.global_batch_size or train.batch_size
    steps = train.max_steps
    share = 1.0  # of the labelled queries that are trained on
    if config.few_shot is not None:  # a sample of them (seedr.training.few_shot; one seed per step)
        share = min(1.0, config.few_shot / max(1, len(queries)) if config.few_shot >= 1 else config.few_shot)
    if config.epochs is not None:  # passes over the (query, positive) pairs or the queries
        steps = config.epochs * share * (len(documents) if config.epoch_over == "pairs" else len(queries)) / batch
    per_query = config.negatives_per_query if NEGATIVES.get(config.negatives).hard_negatives else 0
    tokens = (padded_length(queries, train.batch_size)
              + (1 + per_query) * padded_length(documents, train.batch_size * (1 + per_query)))
    training = 6.0 * steps * batch * tokens * shape.token_multiply_adds
    return UnitWork("fine-tuning", training + _dev_evaluations(config, steps, shape, dtype), "fine-tuning", dtype)


def _dev_evaluations(config: Any, steps: float, shape: EncoderShape, dtype: str) -> float:
    """A fine-tuning's dev evaluations (``seedr.training.finetune.DevEvaluation``: before the first step,
    every ``dev_every`` steps and after the last), each encoding the dev corpus and queries forward (two
    operations per multiply-add), in fine-tuning's measure: scaled by the two sorts' shares of the
    matrix-product rate (``SHARE_OF_MATMUL``), since encoding reaches more of it than training does."""
    if config.dev_qrels is None:
        return 0.0
    texts = _dev_tokens(config)
    if texts is None:
        return 0.0
    evaluations = 2 + (math.ceil(steps / config.dev_every) - 1 if config.dev_every else 0)
    shares = SHARE_OF_MATMUL["fine-tuning"], SHARE_OF_MATMUL["inference"]
    relative = shares[0].get(dtype, shares[0]["bfloat16"]) / shares[1].get(dtype, shares[1]["bfloat16"])
    return evaluations * 2.0 * texts * shape.token_multiply_adds * relative


def _adapting(step: ExperimentStep, shape_of: ShapeOf) -> UnitWork:
    """An adapt step (``seedr.training.adapt``) before its pairs are mined: its fine-tuning's full budget of
    steps (patience may stop it sooner), each example a pseudo-query, its positive and its hard negatives at
    their length caps, forward and backward (× 3, two operations per multiply-add); its validations, each
    encoding the held-out documents' pairs at the caps; and its continued pre-training, as ``_pretraining``
    sizes one. The caps make it an upper bound, which the kind's measured rate corrects once one has run."""
    plan = step.config()
    config, options = plan.finetuning, plan.options
    dtype = training_dtype(config.train.mixed_precision, default_device())
    shape = shape_of(step.given_model())
    if shape is None:
        return UnitWork("adapt", None, "fine-tuning", dtype)
    negatives = config.negatives_per_query if NEGATIVES.get(config.negatives).hard_negatives else 0
    batch = config.train.global_batch_size or config.train.batch_size
    steps = config.train.max_steps
    work = 6.0 * steps * batch * contrastive_multiply_adds(shape, config.query_max_length,
                                                           config.document_max_length, negatives)
    if options.max_documents is not None:
        held_out = validation_count(options.max_documents, options.validation)
    else:
        held_out = int(options.validation) if options.validation and options.validation >= 1 else MAX_VALIDATION_DOCUMENTS
    evaluations = 2 + (math.ceil(steps / config.dev_every) - 1 if config.dev_every else 0)
    shares = SHARE_OF_MATMUL["fine-tuning"], SHARE_OF_MATMUL["inference"]
    relative = shares[0].get(dtype, shares[0]["bfloat16"]) / shares[1].get(dtype, shares[1]["bfloat16"])
    validating = held_out * (config.query_max_length + config.document_max_length) * shape.token_multiply_adds
    work += evaluations * 2.0 * (validating + (_watch_tokens(config) or 0.0) * shape.token_multiply_adds) * relative
    if plan.pretraining is not None:
        pretraining = plan.pretraining
        objective = _objective_options(pretraining)
        pretrain_steps = (budget_steps(pretraining, objective, shape) if pretraining.flops_budget is not None
                          else pretraining.train.max_steps)
        checks = 2 + (math.ceil(pretrain_steps / config.dev_every) - 1 if config.dev_every else 0)
        work += pretrain_steps * flops_per_step(pretraining, objective, shape) + checks * 2.0 * validating * relative
    return UnitWork("adapt", work, "fine-tuning", dtype)


def _objective_options(config: Any) -> Any:
    """A pre-training config's objective options, as its objective builds them."""
    return from_dict(OBJECTIVES.options(config.objective_name), config.objective, "objective")


def _denoising(step: ExperimentStep, shape_of: ShapeOf) -> UnitWork:
    """TSDAE through sentence-transformers (``seedr.experiments.steps.tsdae_st``): its steps' texts, the noisy
    one through the encoder and the original through the decoder and its prediction over the vocabulary,
    forward and backward (× 3, two operations per multiply-add), as ``matched_steps`` counts them."""
    config = step.config()
    dtype = training_dtype(config.mixed_precision, default_device())
    shape = shape_of(step.given_model())
    if shape is None:
        return UnitWork("TSDAE (sentence-transformers)", None, "fine-tuning", dtype)
    steps = step.steps(shape)
    example = denoising_multiply_adds(shape, config.max_length, config.deletion, config.batch_size)
    return UnitWork("TSDAE (sentence-transformers)", 6.0 * steps * config.batch_size * example, "fine-tuning", dtype)


_STEP_SIZERS: dict[str, Callable[[Any, ShapeOf], UnitWork]] = {"pretrain": _pretraining, "finetune": _fine_tuning,
                                                                "adapt": _adapting, "tsdae_st": _denoising}

#: ``training_lengths`` by training data (and when it last changed), split, title mode and lengths.
_TRAINING_LENGTHS: dict[tuple[Any, ...], tuple[list[float], list[float]]] = {}


def training_lengths(config: Any) -> tuple[list[float], list[float]] | None:
    """The token counts (``tokens_of``) of a fine-tuning config's labelled queries and of their relevant
    documents (one per labelled pair) as it feeds them (its title mode, cut at its lengths); ``None`` while its training data does
    not exist yet. Negatives are taken to be as long as positives."""
    path = Path(config.train_data)
    if not path.exists():
        return None
    key = (str(path), path.stat().st_mtime_ns, config.train_split, config.title, config.query_max_length,
           config.document_max_length)
    if key not in _TRAINING_LENGTHS:
        try:
            training = load_training_set(path, config.train_split)
        except (OSError, ValueError):  # not made yet, or not readable yet (a DataError is a ValueError)
            return None
        documents = [training.corpus[document] for judged in training.qrels.values()
                     for document, grade in judged.items() if grade > 0 and document in training.corpus]
        _TRAINING_LENGTHS[key] = (
            [tokens_of(len(training.queries[query]), config.query_max_length) for query in training.qrels],
            [tokens_of(_characters(document, config.title), config.document_max_length) for document in documents])
    return _TRAINING_LENGTHS[key]


def _characters(document: Any, title: str | None) -> int:
    """The characters of a document as a fine-tuning feeds it (``document_input`` in its title mode)."""
    return sum(len(part or "") for part in document_input(document, title or "pair"))


#: ``_dev_tokens`` by dev files, training data and lengths.
_DEV_TOKENS: dict[tuple[Any, ...], float] = {}


def _dev_tokens(config: Any) -> float | None:
    """The tokens one dev evaluation encodes (``seedr.training.finetune.load_dev_set``'s corpus and queries,
    each cut at its length); ``None`` while its files do not exist yet."""
    key = (config.dev_qrels, config.dev_queries, config.dev_corpus, config.train_data, config.train_split,
           config.title, config.query_max_length, config.document_max_length)
    if key not in _DEV_TOKENS:
        try:
            dev = load_dev_set(config, load_training_set(Path(config.train_data), config.train_split))
        except (OSError, ValueError):  # not made yet, or not readable yet (a DataError is a ValueError)
            return None
        _DEV_TOKENS[key] = _encoded_tokens(dev, config)
    return _DEV_TOKENS[key]


def _watch_tokens(config: Any) -> float | None:
    """The tokens one scoring of a fine-tuning's watched queries encodes (``FinetuneConfig.watch``:
    ``seedr.training.finetune.load_watch_set``'s corpus and queries, each cut at its length); ``None`` when
    it watches nothing or its files do not exist yet."""
    if not config.watch:
        return None
    key = ("watch", *sorted(config.watch.items()), config.title, config.query_max_length, config.document_max_length)
    if key not in _DEV_TOKENS:
        try:
            watched = load_watch_set(config)
        except (OSError, ValueError):  # not made yet, or not readable yet (a DataError is a ValueError)
            return None
        assert watched is not None
        _DEV_TOKENS[key] = _encoded_tokens(watched, config)
    return _DEV_TOKENS[key]


def _encoded_tokens(evaluated: Any, config: Any) -> float:
    """The tokens of a dev or watched set's corpus and queries, each cut at the fine-tuning's lengths."""
    return (sum(tokens_of(_characters(document, config.title), config.document_max_length)
                for document in evaluated.corpus.values())
            + sum(tokens_of(len(query), config.query_max_length) for query in evaluated.queries.values()))


class EncodedTokens:
    """About how many tokens a dense retrieval on a task encodes: every document and query, each cut at
    the length (``tokens_of``); each task's texts are read once, when its files exist (a set-up step may
    make them)."""

    def __init__(self) -> None:
        self._characters: dict[str, list[int]] = {}

    def __call__(self, task: RetrievalTask, max_length: int) -> float | None:
        if task.name not in self._characters:
            try:
                self._characters[task.name] = (
                    [len(document.title or "") + len(document.text) for document in task.documents()]
                    + [len(query) for query in task.queries().values()])
            except (OSError, ValueError):  # not made yet (a DataError is a ValueError)
                return None
        return sum(tokens_of(characters, max_length) for characters in self._characters[task.name])


__all__ = ["CHARACTERS_PER_TOKEN", "EncodedTokens", "ShapeOf", "made_shape", "padded_length", "step_work",
           "tokens_of", "training_lengths"]
