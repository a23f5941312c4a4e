"""An adapt run (``seedr adapt``): pairs mined from a corpus alone, an optional continued pre-training
watched by the same label-free validation, then contrastive fine-tuning on the pairs — the one path that
``seedr.adapt`` (the API and command) and the experiments' ``adapt`` step both call, over resolved configs.

The run folder holds ``pairs/`` (``seedr.training.mined_pairs``: the fine-tuning set and its held-out
validation slice), ``pretrain/`` when a pre-training stage runs, and the fine-tuning run itself
(``config.yaml``, ``metrics.jsonl``, ``best/``, ``encoder/``: the best validation's model,
``seedr.training.early_stopping``), and ``shards/``, the pre-training's tokens. The held-out pairs score
the model as retrieval (MRR@10, R@1, R@10) every ``dev_every`` steps of either stage; training stops after
``patience`` evaluations without a better MRR@10. No query or relevance file is read: a BEIR folder
stands for its ``corpus.jsonl``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seedr.config.settings import FinetuneConfig, PretrainConfig
from seedr.data.inputs import Inputs
from seedr.io.run_folders import PAIRS, PRETRAINING, PRODUCT, check_run_folder
from seedr.modeling.folders import pretrained_seed, seed_pooling
from seedr.provenance import record_run
from seedr.training.finetune import check_finetuning, finetune, load_watch_set
from seedr.training.mined_pairs import OWN_POSITIVE, RECORD, MinedPairs, mine_pairs, validation_minimum
from seedr.training.seed_validation import pretrain_validated

#: The token shards of an adaptation's continued pre-training (``data.shards``, unless its settings name one).
SHARDS = "shards"


def _read_as_seed(config: FinetuneConfig, model: str, pooling_given: bool) -> FinetuneConfig:
    """``config`` starting from ``model``; a seed a seedr pre-training made pools as its objective trained
    unless the settings named a pooling (``seed_pooling``)."""
    seed = None if pooling_given else pretrained_seed(model)
    pooling = seed_pooling(config.pooling, seed.pooling if seed else None, pooling_given)
    return dataclasses.replace(config, model=model, pooling=pooling)


def run_adapt(out: str | os.PathLike, corpus: Inputs, finetuning: FinetuneConfig, *,
              sources: Sequence[str] | None = None, validation: float | None = None,
              max_documents: int | None = None, pretraining: PretrainConfig | None = None,
              pooling_given: bool = False, resume: bool = False) -> dict[str, Any]:
    """Mine pairs from ``corpus`` into ``out/pairs`` (seeded by ``finetuning.train.seed``), continue
    pre-training on the training documents with ``pretraining`` when given (in ``out/pretrain``, its
    ``model.init`` the model to adapt), then fine-tune ``finetuning`` on the pairs in ``out``; returns the
    fine-tuning's summary with ``pairs`` (what was mined), ``pretraining`` (that stage's summary) and
    ``warnings``: a default validation widened to ``validation_minimum`` pairs, and an ``encoder/`` that is
    the starting model unchanged (no evaluation bettered the one before training).

    Args:
        out: the run folder (checked first: a run already there needs ``resume``).
        corpus: paths (files, folders, globs; a BEIR folder) or rows.
        finetuning: the resolved fine-tuning config (recipe, settings, model); its training and dev files
            are set here to the mined ones.
        sources: pair tasks (``seedr.training.mined_pairs.PAIR_SOURCES``); default every one the corpus gives.
        validation: documents held out (≥ 1) or their share (< 1); default 10%, at most 1,000, at least
            ``validation_minimum(finetuning.dev_metrics)`` (20 for MRR@10): fewer are refused before training.
        max_documents: read only the corpus's first documents.
        pretraining: the resolved continued pre-training config, or None; its corpus is set here to the
            training documents.
        pooling_given: whether the settings named a pooling (else a seed pools as it was pre-trained).
        resume: continue the run in ``out`` (its pairs are kept), given the same ``corpus``, ``sources``,
            ``validation``, ``max_documents`` and seed it started with (else refused, before anything is
            written: ``MinedPairs.check_inputs``).
    """
    out = Path(out)
    check_run_folder(out, resume)  # before anything is read or mined
    # and what fine-tuning would refuse once the pairs are mined: its settings, model and watched labels
    check_finetuning(finetuning)
    load_watch_set(finetuning)
    folder = out / PAIRS
    if resume and (folder / RECORD).is_file():
        mined = MinedPairs.load(folder)
        # before anything is written or trained: the run goes on with the inputs it was started with
        mined.check_inputs(corpus, sources, validation, max_documents, finetuning.train.seed)
    else:  # a corpus that gives no pairs leaves nothing behind
        mined = mine_pairs(corpus, folder, sources=sources, validation=validation, max_documents=max_documents,
                           seed=finetuning.train.seed, least=validation_minimum(finetuning.dev_metrics))
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
        # its token shards in the run too, named by it: their default name keys the corpus by its path and
        # mtime, which a copied or moved run would change (and so its recorded data.shards)
        data = dataclasses.replace(pretraining.data, corpus=[str(mined.documents)],
                                   shards=pretraining.data.shards or str(out / SHARDS))
        pretraining = dataclasses.replace(pretraining, model=dataclasses.replace(pretraining.model, init=start),
                                          data=data)
        seeding = pretrain_validated(pretraining, stage, _read_as_seed(validated, start, pooling_given),
                                     resume=continuing)
        start = os.fspath(stage)
    resolved = _read_as_seed(validated, start, pooling_given)
    resolved.positive_grade = OWN_POSITIVE  # a pseudo-query trains towards its own positive alone
    # checked above: the folder now holds the run's record and pairs, which fine-tuning's own check
    # would take for a run stopped before its first checkpoint
    summary = finetune(resolved, out, resume=True)
    summary["pairs"] = mined.summary
    summary["warnings"] = list(mined.summary.get("notes", []))
    if seeding is not None:
        summary["pretraining"] = seeding
    best = summary.get("best") or {}
    if best.get("step") == 0:  # a validation that no step bettered: the product is the model it started from
        unchanged = seeding is None or (seeding.get("best") or {}).get("step") == 0
        started = finetuning.model if unchanged else \
            f"the continued pre-training's encoder ({out / PRETRAINING})"
        summary["warnings"].append(f"no step bettered the starting model's {best['metric']} "
                                   f"({best['value']:.4f}): {out / PRODUCT} is {started}, unchanged")
    return summary


__all__ = ["run_adapt"]
