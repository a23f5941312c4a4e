"""An adapt run (``seedr adapt``): pairs mined from a corpus alone, an optional continued pre-training
watched by the same label-free validation, then contrastive fine-tuning on the pairs — the one path that
``seedr.adapt`` (the API and command) and the experiments' ``adapt`` step both call, over resolved configs.

The run folder holds ``pairs/`` (``seedr.training.mined_pairs``: the fine-tuning set and its held-out
validation slice), ``pretrain/`` when a pre-training stage runs, and the fine-tuning run itself
(``config.yaml``, ``metrics.jsonl``, ``best/``, ``encoder/``: the best validation's model,
``seedr.training.early_stopping``). The held-out pairs score the model as retrieval (MRR@10, R@1, R@10)
every ``dev_every`` steps of either stage; training stops after ``patience`` evaluations without a better
MRR@10. No query or relevance file is read: a BEIR folder stands for its ``corpus.jsonl``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seedr.config.settings import FinetuneConfig, PretrainConfig
from seedr.data.inputs import Inputs
from seedr.io.run_folders import PAIRS, PRETRAINING, check_run_folder
from seedr.modeling.folders import pretrained_seed
from seedr.provenance import record_run
from seedr.training.finetune import check_finetuning, finetune, load_watch_set
from seedr.training.mined_pairs import OWN_POSITIVE, RECORD, MinedPairs, mine_pairs
from seedr.training.seed_validation import pretrain_validated


def _read_as_seed(config: FinetuneConfig, model: str, pooling_given: bool) -> FinetuneConfig:
    """``config`` starting from ``model``; a seed a seedr pre-training made pools as its objective trained
    unless the settings named a pooling (the rule of ``seedr.api.resolve_settings``)."""
    seed = None if pooling_given else pretrained_seed(model)
    return dataclasses.replace(config, model=model, **({"pooling": seed.pooling} if seed is not None else {}))


def run_adapt(out: str | os.PathLike, corpus: Inputs, finetuning: FinetuneConfig, *,
              sources: Sequence[str] | None = None, validation: float | None = None,
              max_documents: int | None = None, pretraining: PretrainConfig | None = None,
              pooling_given: bool = False, resume: bool = False) -> dict[str, Any]:
    """Mine pairs from ``corpus`` into ``out/pairs`` (seeded by ``finetuning.train.seed``), continue
    pre-training on the training documents with ``pretraining`` when given (in ``out/pretrain``, its
    ``model.init`` the model to adapt), then fine-tune ``finetuning`` on the pairs in ``out``; returns the
    fine-tuning's summary with ``pairs`` (what was mined) and ``pretraining`` (that stage's summary).

    Args:
        out: the run folder (checked first: a run already there needs ``resume``).
        corpus: paths (files, folders, globs; a BEIR folder) or rows.
        finetuning: the resolved fine-tuning config (recipe, settings, model); its training and dev files
            are set here to the mined ones.
        sources: pair tasks (``seedr.training.mined_pairs.PAIR_SOURCES``); default every one the corpus gives.
        validation: documents held out (≥ 1) or their share (< 1); default 10%, at most 1,000.
        max_documents: read only the corpus's first documents.
        pretraining: the resolved continued pre-training config, or None; its corpus is set here to the
            training documents.
        pooling_given: whether the settings named a pooling (else a seed pools as it was pre-trained).
        resume: continue the run in ``out`` (its pairs are kept).
    """
    out = Path(out)
    check_run_folder(out, resume)  # before anything is read or mined
    # and what fine-tuning would refuse once the pairs are mined: its settings, model and watched labels
    check_finetuning(finetuning)
    load_watch_set(finetuning)
    folder = out / PAIRS
    if resume and (folder / RECORD).is_file():
        mined = MinedPairs.load(folder)
    else:  # a corpus that gives no pairs leaves nothing behind
        mined = mine_pairs(corpus, folder, sources=sources, validation=validation, max_documents=max_documents,
                           seed=finetuning.train.seed)
    if not (out / "config.yaml").exists():  # marks the folder as a run, its pairs in it
        record_run(out, finetuning, finetuning.train.seed)
    validated = dataclasses.replace(finetuning, train_data=str(mined.train),
                                    dev_qrels=str(mined.validation_qrels),
                                    dev_queries=str(mined.validation / "queries.jsonl"),
                                    dev_corpus=str(mined.validation / "corpus.jsonl"))
    start, seeding = finetuning.model, None
    if pretraining is not None:  # on the training documents, watched by the same validation
        stage = out / PRETRAINING
        continuing = resume and (stage / "config.yaml").exists()
        check_run_folder(stage, continuing)
        pretraining = dataclasses.replace(pretraining, model=dataclasses.replace(pretraining.model, init=start),
                                          data=dataclasses.replace(pretraining.data, corpus=[str(mined.documents)]))
        seeding = pretrain_validated(pretraining, stage, _read_as_seed(validated, start, pooling_given),
                                     resume=continuing)
        start = os.fspath(stage)
    resolved = _read_as_seed(validated, start, pooling_given)
    resolved.positive_grade = OWN_POSITIVE  # a pseudo-query trains towards its own positive alone
    # checked above: the folder now holds the run's record and pairs, which fine-tuning's own check
    # would take for a run stopped before its first checkpoint
    summary = finetune(resolved, out, resume=True)
    summary["pairs"] = mined.summary
    if seeding is not None:
        summary["pretraining"] = seeding
    return summary


__all__ = ["run_adapt"]
