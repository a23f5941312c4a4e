"""``pretrain``, ``finetune`` and ``ance_refresh``: the training stages from Python
(``seedr.pipeline.pretrain``, ``seedr.pipeline.finetune``)."""

from __future__ import annotations

from seedr.api.keywords import keywords_of
from seedr.pipeline import finetune as finetuning
from seedr.pipeline import pretrain as pretraining
from seedr.pipeline.finetune import AnceRefreshConfig, FinetuneStageConfig, MinedNegatives
from seedr.pipeline.pretrain import PretrainStageConfig, TrainingRun


@keywords_of(PretrainStageConfig)
def pretrain(config: PretrainStageConfig) -> TrainingRun:
    """Pre-train an encoder with one objective (``seedr pretrain``); the encoder lands in ``out/encoder``.

    Settings come from the stage's defaults, then the recipe ``config``, then the setting keywords
    (``objective``, ``model`` ...), then the overrides ``settings`` (any recipe key, e.g.
    ``{"train.max_steps": 20, "data.max_seq_length": 128}``).

    Example:
        >>> run = seedr.pretrain("runs/seed", config="seed", model="seedr-base", corpus="my-docs.jsonl",
        ...                      settings={"train.max_steps": 20, "train.global_batch_size": 8})
        >>> run.encoder
        PosixPath('runs/seed/encoder')
    """
    return pretraining.run(config)


@keywords_of(FinetuneStageConfig)
def finetune(config: FinetuneStageConfig) -> TrainingRun:
    """Fine-tune an encoder into a dense retriever (``seedr finetune``); the encoder lands in ``out/encoder``.

    Settings come from the stage's defaults, then the recipe ``config``, then the setting keywords
    (``model``, ``train``, ``loss`` ...), then the overrides ``settings`` (any recipe key, e.g.
    ``{"train.max_steps": 200, "query_max_length": 32}``).

    Example:
        >>> retriever = seedr.finetune("runs/ft", model=run, train="scifact", loss="nll",
        ...                            settings={"train.max_steps": 50})
    """
    return finetuning.run(config)


@keywords_of(AnceRefreshConfig)
def ance_refresh(config: AnceRefreshConfig) -> MinedNegatives:
    """Mine ANCE negatives once, apart from a training run (``seedr finetune --ance-refresh-only``): encode the
    training corpus with ``model``, search the training queries in it, and keep each query's top
    ``negative_options.depth`` (default 200) documents other than its positives (Xiong et al. 2021, ANCE:
    the asynchronous refresh, here in a process of its own). A run training elsewhere with
    ``negative_options.inline: false`` picks the table up.

    Example:
        >>> seedr.ance_refresh(model="runs/ft/checkpoints/step-200", train="scifact",
        ...                    settings={"negative_options.depth": 50}).path
        PosixPath('runs/ft/ance/refresh-200')
    """
    return finetuning.ance_refresh(config)


__all__ = ["ance_refresh", "finetune", "pretrain"]
