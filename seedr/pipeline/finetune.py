"""Fine-tune an encoder into a dense retriever, and mine ANCE negatives apart from a run: ``seedr finetune``
(``--ance-refresh-only``), ``seedr.finetune``, ``seedr.ance_refresh`` and every experiment's ``finetune`` step
run this."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seedr.config.settings import FinetuneConfig
from seedr.io import check_output
from seedr.io.run_folders import TRAINER_STATE, check_run_folder
from seedr.modeling.folders import resolve_model_path
from seedr.pipeline.common import Settings, locked
from seedr.pipeline.options import AT_LEAST_ONE, NOT_NEGATIVE, Bound, check_options, option
from seedr.pipeline.pretrain import TrainingRun, overrides_of
from seedr.pipeline.resolution import given_of, resolve, setting

#: Help shared by ``finetune`` and ``ance_refresh``.
RECIPE_HELP = ("Recipe: a name shipped with seedr (seedr/recipes/finetune/NAME.yaml, e.g. seed_siamese_bm25) "
               "or a YAML file.")
OVERRIDES_HELP = ("key=value override, e.g. train.max_steps=500 or negative_options.depth=50 (repeatable); "
                  "from Python a mapping, e.g. {'train.max_steps': 200}.")


def _seeds(text: str) -> list[int]:
    """``--seeds 1,2,3``."""
    return [int(seed) for seed in text.split(",") if seed.strip()]


@dataclasses.dataclass(kw_only=True)
class FinetuneStageConfig:
    """What ``finetune`` runs with: the run folder, the recipe and overrides, and its setting keywords."""

    out: Path | None = option(None, help="Run folder (required unless --ance-refresh-only).", positional=True)
    model: str | None = setting("finetune", "model")
    train: str | None = setting("finetune", "train_data")
    negatives: str | None = setting("finetune", "negatives")
    loss: str | None = setting("finetune", "loss")
    config: str | None = option(None, help=RECIPE_HELP)
    settings: Settings | None = option(None, help=OVERRIDES_HELP, flag="--set", cli_type=list[str])
    dev_qrels: str | None = setting("finetune", "dev_qrels")
    dev_queries: str | None = setting("finetune", "dev_queries")
    dev_corpus: str | None = setting("finetune", "dev_corpus")
    dev_every: int | None = setting("finetune", "dev_every", bound=NOT_NEGATIVE)
    rounds: int | None = setting(
        "finetune", "negative_options.rounds", bound=AT_LEAST_ONE,
        help="static negatives: mine → fine-tune rounds, each mining with the last model (CPDAE on "
             "documents: 2).")
    few_shot: float | None = setting("finetune", "few_shot", bound=Bound(float, 0, open=True))
    seeds: Sequence[int] | None = setting(
        "finetune", "seeds", bound=Bound(int, 0, many=True), cli_type=str, parser=_seeds,
        help="Few-shot: comma-separated seeds, one run each, averaged in few-shot.md.")
    resume: bool = option(False, help="Continue the run in --out from its newest checkpoint.")
    ance_refresh_only: bool = option(
        False, help="Only mine ANCE negatives with --model (a checkpoint folder such as "
                    "RUN/checkpoints/step-N) for the --train queries, into --out (default: "
                    "RUN/ance/refresh-N), for a run training elsewhere.", api=False)

    def __post_init__(self) -> None:
        check_options(self)
        self.out = Path(self.out) if self.out is not None else None
        self.settings = overrides_of(self.settings)
        if self.seeds is not None:
            self.seeds = list(self.seeds)
        if self.out is None and not self.ance_refresh_only:
            raise ValueError("give the run folder: out (--out DIR)")

    def refresh(self) -> AnceRefreshConfig:
        """The ANCE refresh ``--ance-refresh-only`` asks for."""
        return AnceRefreshConfig(out=self.out, model=self.model, train=self.train, config=self.config,
                                 settings=self.settings)


@dataclasses.dataclass(kw_only=True)
class AnceRefreshConfig:
    """What ``ance_refresh`` runs with."""

    out: Path | None = option(
        None, help="The folder of negatives.jsonl and provenance.json (default, for a trainer checkpoint "
                   "RUN/checkpoints/step-N: RUN/ance/refresh-N); only a negatives folder is replaced.",
        positional=True)
    model: str = setting("finetune", "model", required=True,
                         help="The encoder: a checkpoint folder (RUN/checkpoints/step-N: its step is "
                              "recorded) or a model.")
    train: str | None = setting("finetune", "train_data",
                                help="The training data whose queries are mined for (finetune's train).")
    config: str | None = option(None, help=RECIPE_HELP + " Its negative_options.depth, lengths and "
                                                         "encode_batch_size are the mining's.")
    settings: Settings | None = option(None, help=OVERRIDES_HELP, flag="--set", cli_type=list[str])

    def __post_init__(self) -> None:
        check_options(self)
        self.out = Path(self.out) if self.out is not None else None
        self.settings = overrides_of(self.settings)


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


def check_inputs(config: FinetuneConfig) -> None:
    """Refuse a fine-tuning whose inputs are missing — the encoder, the training data, the dev qrels, queries
    or corpus — before torch is imported, as ``seedr.pipeline.pretrain.check_inputs`` does."""
    from seedr.data.inputs import input_files
    from seedr.data.training_sets import training_format

    resolve_model_path(config.model)
    training_format(config.train_data)
    for paths, kind in ((config.dev_qrels, "qrels"), (config.dev_queries, "queries"), (config.dev_corpus, "corpus")):
        if paths:
            input_files(paths, kind)


def train(config: FinetuneConfig, out: Path, *, resume: bool) -> dict[str, Any]:
    """Fine-tune with a resolved ``config`` into ``out`` (``seedr.training.finetune.finetune``): what ``run``
    does once its inputs are checked, and what an experiment's step does with the config it resolved."""
    from seedr.training.finetune import finetune

    return finetune(config, out, resume=resume)


def run(stage: FinetuneStageConfig) -> TrainingRun:
    """Fine-tune an encoder with the recipe, setting keywords and overrides of ``stage`` (in that order, over
    the defaults); the encoder lands in ``stage.out/encoder``."""
    config = resolve("finetune", stage.config, stage.settings, given_of(stage))
    if not config.train_data:
        raise ValueError("no training data: give train= (--train), or train_data in the recipe")
    if stage.out is None:
        raise ValueError("give the run folder: out (--out DIR)")
    with locked(stage.out):
        check_run_folder(stage.out, stage.resume)  # before anything is loaded or mined
        check_inputs(config)  # then what it reads: both before torch loads, in a second
        return TrainingRun(stage.out, train(config, stage.out, resume=stage.resume))


def ance_refresh(stage: AnceRefreshConfig) -> MinedNegatives:
    """Mine ANCE negatives once, apart from a training run: encode the training corpus with ``stage.model``,
    search the training queries in it, and keep each query's top ``negative_options.depth`` (default 200)
    documents other than its positives (Xiong et al. 2021, ANCE: the asynchronous refresh, here in a process
    of its own). A run training elsewhere with ``negative_options.inline: false`` picks the table up."""
    config = resolve("finetune", stage.config, stage.settings, given_of(stage))
    if not config.train_data:
        raise ValueError("no training data: give --train (or train_data in the recipe)")
    checkpoint = Path(config.model)
    out = stage.out
    if out is None and (checkpoint / TRAINER_STATE).exists():
        from seedr.negatives.ance import refresh_folder
        from seedr.engine.checkpoint import read_position

        out = refresh_folder(checkpoint.parent.parent, read_position(checkpoint)["step"])
    if out is None:
        raise ValueError(f"{checkpoint} is not a trainer checkpoint (no {TRAINER_STATE}): give the output folder")
    out = Path(out)
    with locked(out):
        # a refresh replaces its folder whole: never another kind of folder (a run given as out by mistake)
        check_output(out, "negatives", replaces=True, overwrite=True)
        from seedr.data.training_sets import load_training_set
        from seedr.negatives import ance_refresh as mine

        training = load_training_set(config.train_data, config.train_split)
        folder = mine(config.model, training.corpus, training.queries, training.qrels, out,
                      top=int(config.negative_options.get("depth", 200)), batch_size=config.encode_batch_size,
                      query_max_length=config.query_max_length,
                      document_max_length=config.document_max_length)
    return MinedNegatives(folder, config.model)


__all__ = ["AnceRefreshConfig", "FinetuneStageConfig", "MinedNegatives", "ance_refresh", "check_inputs",
           "run", "train"]
