"""``pretrain`` and ``finetune`` (and ``resolve_settings``): the training stages from Python."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from seedr.api.arguments import checks_arguments
from seedr.pipeline.common import CONFIG_STAGES, Settings, Source, is_paths, locked, model_name, path_strings
from seedr.api.setting_options import SETTING_OPTIONS, documents_settings
from seedr.config.loading import from_dict, merge_settings, read_recipe
from seedr.config.settings import FinetuneConfig, PretrainConfig
from seedr.io import check_output
from seedr.io.run_folders import TRAINER_STATE, check_run_folder
from seedr.modeling.folders import pretrained_seed, resolve_model_path, seed_pooling, tokenizer_folder
from seedr.objectives import OBJECTIVES
from seedr.provenance import record_run
from seedr.recipes import recipe_path


def resolve_settings(stage: str, config: str | os.PathLike | None = None, settings: Settings | None = None, *,
                     processes: int | None = None, **options: Any) -> Any:
    """The resolved config of ``stage`` (``pretrain`` or ``finetune``): its defaults, then the recipe
    ``config`` (a name shipped with seedr, e.g. ``seed``, or a YAML file), then ``options`` (the stage's
    keyword arguments that are settings: ``model``, ``corpus``, ``objective`` ...), then ``settings``.
    Nothing runs; unknown keys raise ``ValueError`` listing the valid ones. With ``processes``, the gradient
    accumulation is the one a run on that many processes takes, as its ``config.yaml`` records it (``seedr
    config`` shows one process's); without, it is left to the run, which knows its launcher.

    Fine-tuning a seed that a seedr pre-training made (``seedr.modeling.folders.pretrained_seed``: SEED-Encoder,
    CPDAE, the two-tower objectives) pools as its objective trained, whatever the recipe says, unless
    ``settings`` (``--set``) set ``pooling``; the run's first line says which. The similarity stays the
    recipe's: SEED-Encoder's and CPDAE's decoders read one vector alone and train no score between two, and a
    recipe's similarity goes with its scale and learning rate (cosine × 20 in ``sentence_encoder``), which a
    dot product of unnormalised vectors would not suit; the recipes written for the two-tower seeds, whose
    softmax does train an inner product, leave it null, that is to the seed (``reqa_squad``).

    Example:
        >>> seedr.resolve_settings("pretrain", config="seed", settings={"train.batch_size": 8}).train.global_batch_size
        256
    """

    if stage not in CONFIG_STAGES:
        raise ValueError(f"no settings for stage {stage!r}; stages with settings: {', '.join(CONFIG_STAGES)}")
    given = _stage_options(stage, options)
    recipe = read_recipe(recipe_path(os.fspath(config), stage)) if config is not None else {}
    if stage == "finetune":
        from seedr.evaluation.metrics import check_dev_metrics

        asked = merge_settings(given, dict(settings or {}))  # what the user set, apart from the recipe's defaults
        resolved_finetune = from_dict(FinetuneConfig, merge_settings(recipe, asked))
        seed = pretrained_seed(resolved_finetune.model) if "pooling" not in asked else None
        resolved_finetune.pooling = seed_pooling(resolved_finetune.pooling, seed.pooling if seed else None,
                                                 "pooling" in asked)
        check_dev_metrics(resolved_finetune)
        resolved: Any = resolved_finetune
    else:
        resolved = from_dict(PretrainConfig, merge_settings(recipe, given, dict(settings or {})))
        # every option of the objective, its defaults included, as the run records them
        options_class = OBJECTIVES.options(resolved.objective_name)
        resolved.objective = dataclasses.asdict(from_dict(options_class, resolved.objective, "objective"))
    if resolved.train.report_to:  # Accelerate, and torch with it, only when trackers are asked for
        from seedr.engine.run_metrics import check_trackers

        check_trackers(resolved.train.report_to)
    if processes is not None:
        resolved.train.resolve_accumulation(processes)
    return resolved


def _check_pretraining_inputs(config: PretrainConfig) -> None:
    """Refuse a pre-training whose inputs are missing — its corpus's files, the encoder it continues from, its
    tokenizer, or, from scratch, none — before torch is imported (seconds), by the rules the run reads them with
    (``input_files``, ``resolve_model_path``, ``tokenizer_folder``), so that the refusal is the one the run
    would make, at once."""
    from seedr.data.inputs import input_files

    if config.data.corpus:
        input_files(config.data.corpus, "corpus")
    config.model.check_source()
    if config.model.init is not None:
        resolve_model_path(config.model.init)
    if config.model.tokenizer is not None:
        tokenizer_folder(config.model.tokenizer)


def _check_finetuning_inputs(config: FinetuneConfig) -> None:
    """Refuse a fine-tuning whose inputs are missing — the encoder, the training data, the dev qrels, queries
    or corpus — before torch is imported, as ``_check_pretraining_inputs`` does."""
    from seedr.data.inputs import input_files
    from seedr.data.training_sets import training_format

    resolve_model_path(config.model)
    training_format(config.train_data)
    for paths, kind in ((config.dev_qrels, "qrels"), (config.dev_queries, "queries"), (config.dev_corpus, "corpus")):
        if paths:
            input_files(paths, kind)


def _stage_options(stage: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The stage's keyword arguments as settings (``model`` → ``model.init`` when pre-training), those
    given only; paths and runs as the strings a config holds."""
    keys = SETTING_OPTIONS[stage]
    unknown = sorted(set(options) - set(keys))
    if unknown:
        raise TypeError(f"{stage}: unknown option(s) {unknown}; options: {', '.join(keys)} (others go in settings)")
    given: dict[str, Any] = {}
    for name, value in options.items():
        if value is None:
            continue
        if name == "corpus":
            value = path_strings(value)
        elif name in ("model", "tokenizer", "train", "dev_qrels", "dev_queries", "dev_corpus"):
            value = model_name(value)
        given[keys[name]] = value
    return given


@dataclasses.dataclass(frozen=True)
class TrainingRun:
    """A finished (or resumed) ``pretrain`` / ``finetune`` run folder.

    Give it as ``model=`` to the next stage: a run folder stands for its encoder.

    Attributes:
        path: the run folder (``config.yaml``, ``metrics.jsonl``, ``checkpoints/``, ``encoder/``).
        summary: what the run returned: the last logged metrics (pre-training) or the fine-tuning summary
            (steps, last loss, dev metrics).
    """

    path: Path
    summary: dict[str, Any]

    @property
    def encoder(self) -> Path:
        """The product: a Hugging Face + sentence-transformers folder."""
        return self.path / "encoder"

    def __fspath__(self) -> str:
        return os.fspath(self.path)


@documents_settings("pretrain")
def pretrain(out: str | os.PathLike, *, config: str | os.PathLike | None = None, objective: str | None = None,
             model: str | os.PathLike | None = None, size: str | None = None,
             tokenizer: str | os.PathLike | None = None, corpus: Source | None = None,
             settings: Settings | None = None, resume: bool = False) -> TrainingRun:
    """Pre-train an encoder with one objective (``seedr pretrain``); the encoder lands in ``out/encoder``.

    Args:
        out: the run folder.
        config: a recipe shipped with seedr (``seed``, ``cpdae``, ``mlm``, ``ict_bfs_wlp`` ...) or a YAML file.
        objective: <setting>
        model: <setting>
        size: <setting>
        tokenizer: <setting>
        corpus: the text: paths, a ``datasets.Dataset`` or a list of dicts (rows held in memory are written
            to ``out/inputs/corpus.jsonl`` first: the token shards are keyed on files).
        settings: any recipe key, e.g. ``{"train.max_steps": 20, "data.max_seq_length": 128}``.
        resume: continue from the newest checkpoint in ``out``.

    Example:
        >>> run = seedr.pretrain("runs/seed", config="seed", model="seedr-base", corpus="my-docs.jsonl",
        ...                      settings={"train.max_steps": 20, "train.global_batch_size": 8})
        >>> run.encoder
        PosixPath('runs/seed/encoder')
    """
    if model is not None and size is not None:
        raise ValueError("model (continue from a checkpoint) and size (from scratch) exclude each other")
    out = Path(out)
    in_memory = corpus is not None and not is_paths(corpus)
    resolved = resolve_settings("pretrain", config, settings, objective=objective, model=model, size=size,
                                tokenizer=tokenizer, corpus=None if in_memory else corpus)
    with locked(out):
        check_run_folder(out, resume)  # before anything is loaded or tokenised
        _check_pretraining_inputs(resolved)  # then what it reads: both before torch loads, in a second

        from seedr.data.corpus import materialize_corpus
        from seedr.training.pretrain import pretrain as run_pretraining

        if in_memory:
            record_run(out, resolved, resolved.train.seed)  # marks the folder as a run before its inputs go in
            written = out / "inputs" / "corpus.jsonl"  # kept with the run: what it trained on
            if not written.exists():  # a resumed run trains on the rows it was started with
                written.parent.mkdir(parents=True, exist_ok=True)
                materialize_corpus(corpus, written)
            resolved.data.corpus = [str(written)]
        # checked above: with rows in memory the folder now holds the run's record and inputs, which the
        # training's own check would take for a run stopped before its first checkpoint
        return TrainingRun(out, run_pretraining(resolved, out, resume=resume or in_memory))


@checks_arguments
@documents_settings("finetune")
def finetune(out: str | os.PathLike, *, model: str | os.PathLike | None = None,
             train: str | os.PathLike | None = None, negatives: str | None = None, loss: str | None = None,
             config: str | os.PathLike | None = None, settings: Settings | None = None,
             dev_qrels: str | os.PathLike | None = None, dev_queries: str | os.PathLike | None = None,
             dev_corpus: str | os.PathLike | None = None, dev_every: int | None = None, rounds: int | None = None,
             few_shot: float | None = None, seeds: Sequence[int] | None = None, resume: bool = False) -> TrainingRun:
    """Fine-tune an encoder into a dense retriever (``seedr finetune``); the encoder lands in ``out/encoder``.

    Args:
        out: the run folder.
        model: <setting>
        train: <setting>
        negatives: <setting>
        loss: <setting>
        config: a recipe shipped with seedr (``dpr``, ``ance``, ``seed_siamese_bm25`` ...) or a YAML file.
        settings: any recipe key, e.g. ``{"train.max_steps": 200, "query_max_length": 32}``.
        dev_qrels: <setting>
        dev_queries: <setting>
        dev_corpus: <setting>
        dev_every: <setting>
        rounds: static negatives: mine → fine-tune rounds.
        few_shot: <setting>
        seeds: <setting>
        resume: continue the run in ``out`` from its newest checkpoint.

    Example:
        >>> retriever = seedr.finetune("runs/ft", model=run, train="scifact", loss="nll",
        ...                            settings={"train.max_steps": 50})
    """
    out = Path(out)
    resolved = resolve_settings("finetune", config, settings, model=model, train=train, negatives=negatives,
                                loss=loss, dev_qrels=dev_qrels, dev_queries=dev_queries, dev_corpus=dev_corpus,
                                dev_every=dev_every, rounds=rounds, few_shot=few_shot,
                                seeds=list(seeds) if seeds is not None else None)
    if not resolved.train_data:
        raise ValueError("no training data: give train= (--train), or train_data in the recipe")
    with locked(out):
        check_run_folder(out, resume)  # before anything is loaded or mined
        _check_finetuning_inputs(resolved)  # then what it reads: both before torch loads, in a second

        from seedr.training.finetune import finetune as run_finetuning

        return TrainingRun(out, run_finetuning(resolved, out, resume=resume))


@dataclasses.dataclass(frozen=True)
class MinedNegatives:
    """A folder of ANCE negatives (``ance_refresh``): ``negatives.jsonl`` and ``provenance.json``.

    Attributes:
        path: the folder; give it as a fine-tuning's ``negative_options`` table, or leave it where a run
            training with ``negative_options.inline: false`` picks it up.
        model: the encoder that mined them, as the settings resolved it.
    """

    path: Path
    model: str

    def __fspath__(self) -> str:
        return os.fspath(self.path)


def ance_refresh(out: str | os.PathLike | None = None, *, model: str | os.PathLike,
                 train: str | os.PathLike | None = None, config: str | os.PathLike | None = None,
                 settings: Settings | None = None) -> MinedNegatives:
    """Mine ANCE negatives once, apart from a training run (``seedr finetune --ance-refresh-only``): encode the
    training corpus with ``model``, search the training queries in it, and keep each query's top
    ``negative_options.depth`` (default 200) documents other than its positives (Xiong et al. 2021, ANCE:
    the asynchronous refresh, here in a process of its own). A run training elsewhere with
    ``negative_options.inline: false`` picks the table up.

    Args:
        out: the folder of ``negatives.jsonl`` and ``provenance.json`` (default, for a trainer checkpoint
            ``RUN/checkpoints/step-N``: ``RUN/ance/refresh-N``); only a negatives folder is replaced.
        model: the encoder: a checkpoint folder (``RUN/checkpoints/step-N``: its step is recorded) or a model.
        train: the training data whose queries are mined for (``finetune``'s ``train``).
        config, settings: the fine-tuning recipe and settings (``negative_options.depth``, the lengths and
            ``encode_batch_size``).

    Example:
        >>> seedr.ance_refresh(model="runs/ft/checkpoints/step-200", train="scifact",
        ...                    settings={"negative_options.depth": 50}).path
        PosixPath('runs/ft/ance/refresh-200')
    """
    resolved = resolve_settings("finetune", config, settings, model=model, train=train)
    if not resolved.train_data:
        raise ValueError("no training data: give --train (or train_data in the recipe)")
    checkpoint = Path(resolved.model)
    if out is None and (checkpoint / TRAINER_STATE).exists():
        from seedr.engine.checkpoint import read_position
        from seedr.negatives.ance import refresh_folder

        out = refresh_folder(checkpoint.parent.parent, read_position(checkpoint)["step"])
    if out is None:
        raise ValueError(f"{checkpoint} is not a trainer checkpoint (no {TRAINER_STATE}): give the output folder")
    out = Path(out)
    with locked(out):
        # a refresh replaces its folder whole: never another kind of folder (a run given as out by mistake)
        check_output(out, "negatives", replaces=True, overwrite=True)
        from seedr.data.training_sets import load_training_set
        from seedr.negatives import ance_refresh as mine

        training = load_training_set(resolved.train_data, resolved.train_split)
        folder = mine(resolved.model, training.corpus, training.queries, training.qrels, out,
                      top=int(resolved.negative_options.get("depth", 200)), batch_size=resolved.encode_batch_size,
                      query_max_length=resolved.query_max_length, document_max_length=resolved.document_max_length)
    return MinedNegatives(folder, resolved.model)
