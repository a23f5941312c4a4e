"""Adapt an encoder to a corpus without labelled queries: ``seedr adapt``, ``seedr.adapt`` and every
experiment's ``adapt`` step run this (``seedr.training.adapt.run_adapt``: pairs mined from the documents, an
optional continued pre-training, fine-tuning validated on held-out pairs with patience)."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seedr.config.loading import merge_settings
from seedr.config.settings import ADAPT_RECIPE, FinetuneConfig, PretrainConfig
from seedr.io.run_folders import PRETRAINING, check_run_folder
from seedr.pipeline.common import Settings, Source, is_paths, locked, path_strings
from seedr.pipeline.options import AT_LEAST_ONE, NOT_NEGATIVE, Bound, check_options, option
from seedr.pipeline.pretrain import TrainingRun, overrides_of
from seedr.pipeline.resolution import given_of, resolve, setting


def _pair_sources(text: str) -> list[str]:
    """``--pairs ict,title``."""
    return [name.strip() for name in text.split(",") if name.strip()]


@dataclasses.dataclass(kw_only=True)
class AdaptStageConfig:
    """What ``adapt`` runs with: the run folder, the corpus and how pairs are mined from it, the fine-tuning
    recipe and overrides (and the optional pre-training's), and its setting keywords."""

    out: Path = option(
        help="Run folder: encoder/, pairs/, metrics.jsonl, validation.png, best/, config.yaml.",
        positional=True)
    corpus: Source = option(
        help="The documents: a file (JSONL, TSV, parquet ...), a folder (of shards, a BEIR folder: its "
             "corpus.jsonl alone is read) or a quoted glob (repeatable). From Python also a "
             "datasets.Dataset or a list of dicts.",
        cli_type=list[Path])
    model: str | None = setting("adapt", "model")
    pairs: Sequence[str] | str | None = option(
        None, help="Pair sources, comma-separated: ict, title, bfs, wlp, crop (default: every one the corpus "
                   "supports).", cli_type=str, parser=_pair_sources)
    pretrain: str | None = option(
        None, help="Continue pre-training on the corpus first with this pre-training recipe (seed, cpdae, "
                   "mlm ...), in OUT/pretrain.")
    validation: float | None = option(
        None, help="Documents held out for validation (N ≥ 1) or their share (< 1); default 10%, at most "
                   "1000, at least 20 (fewer cannot rank: refused; the default widened).",
        bound=Bound(float, 0, open=True))
    max_documents: int | None = option(None, help="Read only the corpus's first N documents.",
                                       bound=AT_LEAST_ONE)
    dev_every: int | None = setting("adapt", "dev_every", bound=NOT_NEGATIVE)
    patience: int | None = setting("adapt", "patience", bound=NOT_NEGATIVE)
    config: str | None = option(
        None, help="Fine-tuning recipe: a name shipped with seedr or a YAML file (default: adapt).")
    settings: Settings | None = option(
        None, help="Fine-tuning key=value, e.g. train.max_steps=500 or train.batch_size=64 (repeatable); "
                   "from Python a mapping, e.g. {'train.max_steps': 100}.", flag="--set", cli_type=list[str])
    pretrain_settings: Settings | None = option(
        None, help="key=value for the pre-training, e.g. train.max_steps=50 (repeatable); from Python a "
                   "mapping.", flag="--pretrain-set", cli_type=list[str])
    resume: bool = option(False, help="Continue the run in --out (its mined pairs are kept).")

    def __post_init__(self) -> None:
        check_options(self)
        self.out = Path(self.out)
        self.settings = overrides_of(self.settings)
        self.pretrain_settings = overrides_of(self.pretrain_settings)
        if isinstance(self.corpus, list) and is_paths(self.corpus):  # the command's paths
            self.corpus = path_strings(self.corpus)
        if isinstance(self.pairs, str):
            self.pairs = [self.pairs]


def adapt(out: Path, corpus: Source, finetuning: FinetuneConfig, *, sources: Sequence[str] | None,
          validation: float | None, max_documents: int | None, pretraining: PretrainConfig | None,
          pooling_given: bool, resume: bool) -> dict[str, Any]:
    """Adapt with resolved configs (``seedr.training.adapt.run_adapt``, whose arguments these are), then draw
    the validation beside the loss (``out/validation.png``, and the pre-training's) and, where the settings
    watch labelled queries, say how well the validation tracked them: what ``run`` does once its inputs are
    checked, and what an experiment's step does with the configs it resolved."""
    from seedr.reporting.validation import plot_validation, track_validation
    from seedr.training.adapt import run_adapt

    summary = run_adapt(out, corpus, finetuning, sources=sources, validation=validation,
                        max_documents=max_documents, pretraining=pretraining, pooling_given=pooling_given,
                        resume=resume)
    summary["validation_plot"] = str(plot_validation(out))
    tracking = track_validation(out)  # with settings' watch: labelled queries read beside the validation
    if tracking is not None:
        summary["tracking"] = tracking
    if "pretraining" in summary:
        summary["pretraining"]["validation_plot"] = str(plot_validation(out / PRETRAINING))
    return summary


def run(stage: AdaptStageConfig) -> TrainingRun:
    """Adapt an encoder to ``stage.corpus``: mine training pairs from the documents alone, hold some
    documents' pairs out to validate on, optionally continue pre-training on the others (``stage.pretrain``),
    then fine-tune contrastively on the pairs (the ``adapt`` recipe unless ``stage.config`` names another);
    the encoder, the best validation's, lands in ``stage.out/encoder``."""
    given = given_of(stage)
    patience = given.pop("patience", None)  # the keyword, over the recipe and the overrides alike
    finetuning = resolve("finetune", stage.config or ADAPT_RECIPE, stage.settings, given)  # bad settings: now
    if patience is not None:
        finetuning.patience = patience
    pretraining = None
    if stage.pretrain is not None:  # its recipe and settings too, before anything is mined
        pretraining = resolve("pretrain", stage.pretrain, stage.pretrain_settings,
                              {"model.init": finetuning.model})
    from seedr.reporting.validation import check_tracking_file

    with locked(stage.out):
        if finetuning.watch:  # its tracking is written at the end: a file it would replace is refused now
            check_tracking_file(stage.out)
        # a refused output, then pair sources the corpus cannot give: at once (a resumed run keeps its pairs)
        check_run_folder(stage.out, stage.resume)
        if stage.pairs is not None and not stage.resume:
            from seedr.data.corpus import read_corpus_articles
            from seedr.data.pair_units import check_pair_sources, corpus_names

            articles = itertools.islice(read_corpus_articles(stage.corpus), stage.max_documents)
            check_pair_sources(articles, stage.pairs, ", ".join(corpus_names(stage.corpus)))
        summary = adapt(stage.out, stage.corpus, finetuning, sources=stage.pairs, validation=stage.validation,
                        max_documents=stage.max_documents, pretraining=pretraining,
                        pooling_given="pooling" in merge_settings(stage.settings), resume=stage.resume)
        return TrainingRun(stage.out, summary)


__all__ = ["AdaptStageConfig", "adapt", "run"]
