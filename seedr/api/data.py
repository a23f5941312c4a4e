"""``prepare`` from Python: a corpus made ready for the stages, a ReQA split, or open-domain QA data
(``seedr prepare``)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from seedr.api.keywords import keywords_of
from seedr.pipeline import prepare as preparing
from seedr.pipeline.prepare import PrepareConfig


@dataclasses.dataclass(frozen=True)
class PreparedData:
    """A folder ``prepare`` wrote. Give it as ``corpus=`` (a prepared corpus), as ``train=`` (a ReQA split's
    BEIR folder, an open-QA folder's ``train.json``), or read its counts.

    Attributes:
        path: the folder.
        kind: ``corpus`` (``corpus.jsonl``, optionally ``links.jsonl``, ``tokenizer/``), ``reqa_split`` or
            ``open_qa``.
        summary: its counts (``seedr.data.prepare.PrepareSummary``, ``seedr.data.reqa_split.ReqaSplitSummary``
            or ``seedr.data.open_qa.OpenQASummary``).
    """

    path: Path
    kind: str
    summary: Any

    def __fspath__(self) -> str:
        return os.fspath(self.path)


@keywords_of(PrepareConfig)
def prepare(config: PrepareConfig) -> PreparedData:
    """Prepare data (``seedr prepare``), one of three things into the folder ``out``:

    - a corpus (BEIR, MS MARCO, wiki articles, wikiextractor, FOLDOC ...; without ``corpus`` the embedded
      10,033 Wikipedia leads) as seedr corpus JSONL, optionally cut into DPR passages of ``passage_words``,
      with ``links`` (read, or recovered from mentions of titles) and a WordPiece tokenizer of
      ``tokenizer_vocab`` words;
    - with ``reqa_split``, a SQuAD JSON split into ReQA fine-tuning data (Chang et al. 2020): train and
      validation as a BEIR folder, ``test.json`` holding ``test_fraction`` of the questions;
    - with ``open_qa``, DPR-style open-domain QA data from NQ-open questions over the ``corpus`` passages:
      ``train.json``, ``test.jsonl`` and a test pool (the ``split`` file, made from ``test_questions`` and
      ``seed`` when missing; positives and negatives from ``bm25_run``; pool distractors from it and each
      ``distractor_run``).

    Example:
        >>> prepared = seedr.prepare("runs/wiki00", corpus="wiki/enwiki-2015-00.jsonl.xz", passage_words=100,
        ...                          links=True)
        >>> prepared.summary.documents
        >>> seedr.pretrain("runs/seed", config="seed", model="seedr-base", corpus=prepared)
    """
    return PreparedData(config.out, config.kind, preparing.run(config))


__all__ = ["PreparedData", "prepare"]
