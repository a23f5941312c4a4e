"""``prepare`` from Python: a corpus made ready for the stages, a ReQA split, or open-domain QA data
(``seedr prepare``)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seedr.api.arguments import checks_arguments
from seedr.pipeline.common import Paths, input_paths, locked, path_strings
from seedr.io import check_output

#: What ``prepare`` writes: a prepared corpus, a ReQA split, or open-domain QA data.
PREPARED_KINDS = ("corpus", "reqa_split", "open_qa")


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


@checks_arguments
def prepare(out: str | os.PathLike, *, corpus: Paths | None = None, format: str = "auto", passage_words: int = 0,
            max_articles: int | None = None, links: bool = False, min_title_words: int = 2,
            tokenizer_vocab: int = 0, cased: bool = False, reqa_split: str | os.PathLike | None = None,
            test_fraction: float = 0.2, seed: int = 0, open_qa: str | os.PathLike | None = None,
            split: str | os.PathLike | None = None, test_questions: int = 1000,
            bm25_run: str | os.PathLike | None = None, distractor_run: Sequence[str | os.PathLike] | None = None,
            run_depth: int = 20, answer_passages: int = 5, pool_random: int = 20000, overwrite: bool = False,
            show_progress: bool = True) -> PreparedData:
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

    Args:
        out: the folder to write (built aside, then moved into place).
        corpus: corpus paths (files, folders of shards, quoted globs).
        format: ``auto``, ``articles``, ``beir``, ``dpr``, ``glossary``, ``msmarco-doc``, ``msmarco-passage``,
            ``seedr``, ``wikiextractor``.
        passage_words, max_articles, links, min_title_words, tokenizer_vocab, cased: the corpus's passages,
            size, links and tokenizer.
        reqa_split, test_fraction, seed: the ReQA split (``seed``: its article shuffle).
        open_qa, split, test_questions, bm25_run, distractor_run, run_depth, answer_passages, pool_random: the
            open-QA data (``seed``: a new split's and the pool's draws).
        overwrite: replace ``out`` when it holds what this call writes (nothing else is replaced).
        show_progress: progress bars.

    Example:
        >>> prepared = seedr.prepare("runs/wiki00", corpus="wiki/enwiki-2015-00.jsonl.xz", passage_words=100,
        ...                          links=True)
        >>> prepared.summary.documents
        >>> seedr.pretrain("runs/seed", config="seed", model="seedr-base", corpus=prepared)
    """
    out = Path(out)
    corpus_paths = path_strings(corpus) if corpus is not None else None
    if open_qa is not None:
        if not corpus_paths or split is None or bm25_run is None:
            raise ValueError("--open-qa needs the passages (--corpus), the question split (--split) and BM25's "
                             "run (--bm25-run)")
        return _open_qa(out, open_qa, corpus_paths, split, bm25_run, distractor_run or [], test_questions, seed,
                        run_depth, answer_passages, pool_random, overwrite, show_progress)
    if reqa_split is not None:
        if corpus is not None:
            raise ValueError("give --corpus or --reqa-split, not both")
        with locked(out):
            check_output(out, "ReQA split", overwrite=overwrite, inputs=[Path(reqa_split)])
            from seedr.data.qa import read_squad
            from seedr.data.reqa_split import write_reqa_split

            summary = write_reqa_split(read_squad(reqa_split), out, test_fraction, seed)
        return PreparedData(out, "reqa_split", summary)

    from seedr.data.prepare import PrepareOptions, prepare_corpus

    options = PrepareOptions(corpus=corpus_paths or [], format=format, passage_words=passage_words,
                             max_articles=max_articles, links=links, min_title_words=min_title_words,
                             tokenizer_vocab=tokenizer_vocab, lowercase=not cased)
    with locked(out):  # prepare_corpus asks check_output before it reads
        summary = prepare_corpus(out, options, progress=show_progress, overwrite=overwrite)
    return PreparedData(out, "corpus", summary)


def _open_qa(out: Path, questions: str | os.PathLike, corpus: list[str], split: str | os.PathLike,
             bm25_run: str | os.PathLike, distractor_run: Sequence[str | os.PathLike], test_questions: int, seed: int,
             run_depth: int, answer_passages: int, pool_random: int, overwrite: bool,
             show_progress: bool) -> PreparedData:
    from seedr.data.open_qa import build_open_qa_from_files

    with locked(out):
        check_output(out, "open-QA data", overwrite=overwrite,
                     inputs=input_paths(questions, corpus, split, bm25_run, list(distractor_run)))
        summary = build_open_qa_from_files(out, questions, corpus, split, bm25_run, distractor_run,
                                           test_questions=test_questions, seed=seed, show_progress=show_progress,
                                           run_depth=run_depth, answer_passages=answer_passages,
                                           random_passages=pool_random)
    return PreparedData(out, "open_qa", summary)


__all__ = ["PREPARED_KINDS", "PreparedData", "prepare"]
