"""``adapt``: from a corpus without labels to a retriever adapted to it, in one call (``seedr adapt``)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from pathlib import Path

from seedr.api.arguments import checks_arguments
from seedr.pipeline.common import Settings, Source, locked
from seedr.api.setting_options import documents_settings
from seedr.api.training import TrainingRun, resolve_settings
from seedr.config.loading import merge_settings
from seedr.config.settings import ADAPT_RECIPE
from seedr.io.run_folders import PRETRAINING, check_run_folder


@documents_settings("adapt")
@checks_arguments
def adapt(out: str | os.PathLike, *, corpus: Source, model: str | os.PathLike | None = None,
          pairs: Sequence[str] | str | None = None, pretrain: str | None = None,
          validation: float | None = None, max_documents: int | None = None, dev_every: int | None = None,
          patience: int | None = None, config: str | os.PathLike | None = None, settings: Settings | None = None,
          pretrain_settings: Settings | None = None, resume: bool = False) -> TrainingRun:
    """Adapt an encoder to a corpus that has no labelled queries (``seedr adapt``): mine training pairs
    from the documents alone, hold some documents' pairs out to validate on, optionally continue
    pre-training on the other documents, then fine-tune contrastively on the pairs; the encoder lands in
    ``out/encoder``, with its model card.

    The pairs (``seedr.training.mined_pairs``): a sentence against the rest of its passage (ICT; Lee et
    al. 2019), a title against its text, a lead sentence against the body or a linking article (BFS,
    WLP; Chang et al., ICLR 2020) where the corpus has sections or links, two crops of a text
    (Contriever; Izacard et al. 2022). They are written to ``out/pairs`` as a fine-tuning data set;
    fine-tuning (the ``adapt`` recipe: NLL over in-batch and BM25 negatives) never takes a pseudo-query's
    own document as its negative. The held-out pairs are scored as retrieval (MRR@10, R@1, R@10) every
    ``dev_every`` steps, logged in ``metrics.jsonl`` and drawn beside the loss (``out/validation.png``);
    training stops after ``patience`` evaluations without a better MRR@10, and ``out/encoder`` is the best
    evaluation's model; ``run.summary["warnings"]`` says when that is the starting model, unchanged (no
    evaluation bettered it), or when the default validation was widened. No query or relevance file is read:
    a BEIR folder stands for its ``corpus.jsonl``. Where you hold some labels apart,
    ``settings={"watch": {"qrels": ..., "queries": ..., "corpus": ...}}`` scores them at every validation
    without choosing by them, and ``out/diagnostics.json`` says how well the label-free validation tracked
    them (``seedr.reporting.validation.track_validation``).

    Args:
        out: the run folder.
        corpus: the documents: paths (files, folders, quoted globs; a BEIR folder), a ``datasets.Dataset`` or
            a list of dicts.
        model: <setting>
        pairs: the pair sources, ``ict``, ``title``, ``bfs``, ``wlp``, ``crop`` (default: every one the corpus
            supports).
        pretrain: continue pre-training on the training documents first with this pre-training recipe
            (``seed``, ``cpdae``, ``mlm`` ...; ``seedr pretrain --config``), in ``out/pretrain``.
        validation: documents held out for validation (≥ 1) or their share (< 1); default 10%, at most 1,000.
            A validation ranks the pairs of at least 20 documents (twice the deepest cut-off of the dev
            metrics, if more: ``seedr.training.mined_pairs.validation_minimum``): fewer are refused before
            training, and the default is widened to them where the corpus keeps as many to train on.
        max_documents: read only the corpus's first documents.
        dev_every: <setting>
        patience: <setting>
        config: the fine-tuning recipe (default ``adapt``).
        settings: fine-tuning settings over the recipe, e.g. ``{"train.max_steps": 100}``.
        pretrain_settings: pre-training settings over its recipe, e.g. ``{"train.max_steps": 50}``.
        resume: continue the run in ``out`` (its pairs are kept).

    Example:
        >>> run = seedr.adapt("runs/adapted", model="minilm", corpus="my-docs.jsonl",
        ...                   settings={"train.max_steps": 100})
        >>> run.encoder
        PosixPath('runs/adapted/encoder')
    """
    out = Path(out)
    recipe = config if config is not None else ADAPT_RECIPE
    sources = [pairs] if isinstance(pairs, str) else pairs
    checked = resolve_settings("finetune", recipe, settings, model=model, dev_every=dev_every)  # bad settings: now
    if patience is not None:
        checked.patience = patience
    pretraining = None
    if pretrain is not None:  # its recipe and settings too, before anything is mined
        pretraining = resolve_settings("pretrain", pretrain, pretrain_settings, model=checked.model)
    from seedr.reporting.validation import check_tracking_file, plot_validation, track_validation

    with locked(out):
        if checked.watch:  # its tracking is written at the end: a file it would replace is refused now
            check_tracking_file(out)
        check_run_folder(out, resume)  # a refused output, then pair sources the corpus cannot give: at once
        if sources is not None and not resume:  # (a resumed run keeps the pairs it mined)
            from seedr.data.corpus import read_corpus_articles
            from seedr.data.pair_units import check_pair_sources, corpus_names

            articles = itertools.islice(read_corpus_articles(corpus), max_documents)
            check_pair_sources(articles, sources, ", ".join(corpus_names(corpus)))
        from seedr.training.adapt import run_adapt

        summary = run_adapt(out, corpus, checked, sources=sources, validation=validation,
                            max_documents=max_documents, pretraining=pretraining,
                            pooling_given="pooling" in merge_settings(dict(settings or {})), resume=resume)
        summary["validation_plot"] = str(plot_validation(out))
        tracking = track_validation(out)  # with settings' watch: labelled queries read beside the validation
        if tracking is not None:
            summary["tracking"] = tracking
        if "pretraining" in summary:
            summary["pretraining"]["validation_plot"] = str(plot_validation(out / PRETRAINING))
        return TrainingRun(out, summary)


__all__ = ["adapt"]
