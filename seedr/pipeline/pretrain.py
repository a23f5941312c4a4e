"""Pre-train an encoder with one objective: ``seedr pretrain``, ``seedr.pretrain`` and every experiment's
``pretrain`` step run this."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from seedr.config.loading import parse_overrides
from seedr.config.settings import PretrainConfig
from seedr.io.run_folders import check_run_folder
from seedr.modeling.folders import resolve_model_path, tokenizer_folder
from seedr.pipeline.common import Settings, Source, is_paths, locked
from seedr.pipeline.options import check_options, option
from seedr.pipeline.resolution import given_of, resolve, setting
from seedr.provenance import record_run

@dataclasses.dataclass(kw_only=True)
class PretrainStageConfig:
    """What ``pretrain`` runs with: the run folder, the recipe and overrides, and its setting keywords."""

    out: Path = option(help="Run folder: encoder/, checkpoints/, metrics.jsonl, config.yaml.",
                       positional=True)
    config: str | None = option(
        None, help="Recipe: a name shipped with seedr (seedr/recipes/pretrain/NAME.yaml, e.g. seed) or a "
                   "YAML file.")
    objective: str | None = setting("pretrain", "objective_name")
    model: str | None = setting("pretrain", "model.init")
    size: str | None = setting("pretrain", "model.size")
    tokenizer: str | None = setting("pretrain", "model.tokenizer")
    corpus: Source | None = setting(
        "pretrain", "data.corpus", paths=True, cli_type=list[Path],
        help="Corpus: a file (JSONL, TSV, parquet ...), a folder (of shards, made by `seedr prepare`, or a "
             "Hugging Face save_to_disk folder) or a quoted glob (repeatable); default: the recipe's, else "
             "the embedded Wikipedia leads (token objectives). From Python also a datasets.Dataset or a list "
             "of dicts, written to OUT/inputs/corpus.jsonl first (the token shards are keyed on files).")
    settings: Settings | None = option(
        None, help="Override a recipe option: key=value, e.g. train.max_steps=200 or "
                   "objective.attention_span=all (repeatable); from Python a mapping, e.g. "
                   "{'train.max_steps': 20}.",
        flag="--set", cli_type=list[str])
    resume: bool = option(False, help="Continue from the newest checkpoint in --out.")

    def __post_init__(self) -> None:
        check_options(self)
        self.out = Path(self.out)
        self.settings = overrides_of(self.settings)
        if self.model is not None and self.size is not None:
            raise ValueError("model (continue from a checkpoint) and size (from scratch) exclude each other")


def overrides_of(settings: Settings | list[str] | None) -> dict[str, Any]:
    """Overrides as a mapping: the command line's ``key=value`` words parsed (``parse_overrides``)."""
    return parse_overrides(settings) if isinstance(settings, list) else dict(settings or {})


@dataclasses.dataclass(frozen=True)
class TrainingRun:
    """A finished (or resumed) ``pretrain`` / ``finetune`` / ``adapt`` run folder.

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


def check_inputs(config: PretrainConfig) -> None:
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


def train(config: PretrainConfig, out: Path, *, resume: bool) -> dict[str, Any]:
    """Pre-train with a resolved ``config`` into ``out`` (``seedr.training.pretrain.pretrain``): what ``run``
    does once its inputs are checked, and what an experiment's step does with the config it resolved."""
    from seedr.training.pretrain import pretrain

    return pretrain(config, out, resume=resume)


def run(stage: PretrainStageConfig) -> TrainingRun:
    """Pre-train an encoder with the recipe, setting keywords and overrides of ``stage`` (in that order, over
    the defaults); the encoder lands in ``stage.out/encoder``. A corpus held in memory is written to
    ``out/inputs/corpus.jsonl`` first."""
    in_memory = stage.corpus is not None and not is_paths(stage.corpus)
    given = given_of(stage)
    if in_memory:  # written to a file once the output is checked
        del given["data.corpus"]
    config = resolve("pretrain", stage.config, stage.settings, given)
    out = stage.out
    with locked(out):
        check_run_folder(out, stage.resume)  # before anything is loaded or tokenised
        check_inputs(config)  # then what it reads: both before torch loads, in a second

        from seedr.data.corpus import materialize_corpus

        if in_memory:
            record_run(out, config, config.train.seed)  # marks the folder as a run before its inputs go in
            written = out / "inputs" / "corpus.jsonl"  # kept with the run: what it trained on
            if not written.exists():  # a resumed run trains on the rows it was started with
                written.parent.mkdir(parents=True, exist_ok=True)
                materialize_corpus(stage.corpus, written)
            config.data.corpus = [str(written)]
        # checked above: with rows in memory the folder now holds the run's record and inputs, which the
        # training's own check would take for a run stopped before its first checkpoint
        return TrainingRun(out, train(config, out, resume=stage.resume or in_memory))


__all__ = ["PretrainStageConfig", "TrainingRun", "check_inputs", "overrides_of", "run", "train"]
