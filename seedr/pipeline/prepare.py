"""Prepare data for the stages: a corpus (seedr corpus JSONL, optionally cut into DPR passages, with links and
a trained tokenizer), a ReQA split (Chang et al. 2020) or DPR-style open-domain QA data. ``seedr prepare`` and
``seedr.prepare`` run this."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seedr.io import check_output
from seedr.pipeline.common import Paths, input_paths, locked, path_strings
from seedr.pipeline.options import AT_LEAST_ONE, NOT_NEGATIVE, Bound, check_options, option

#: What ``prepare`` writes: a prepared corpus, a ReQA split, or open-domain QA data.
PREPARED_KINDS = ("corpus", "reqa_split", "open_qa")


@dataclasses.dataclass(kw_only=True)
class PrepareConfig:
    """What ``prepare`` runs with."""

    out: Path = option(help="Folder to write (built aside, then moved into place).", positional=True)
    corpus: Paths | None = option(
        None, help="Corpus to convert: a file, a folder of shards, or a quoted glob ('wiki/*.jsonl.xz'); "
                   "repeatable. Without it, the embedded 10,033 Wikipedia leads.", cli_type=list[Path])
    format: str = option("auto", help="Corpus format: auto, articles, beir, dpr, glossary, msmarco-doc, "
                                      "msmarco-passage, seedr, wikiextractor.")
    passage_words: int = option(0, help="Cut into DPR passages of this many words (0: whole documents).",
                                bound=NOT_NEGATIVE)
    max_articles: int | None = option(
        None, help="Read only the first N articles (of all the files, in order): a smaller corpus to try things "
                   "on.", bound=AT_LEAST_ONE)
    links: bool = option(False, help="Write links.jsonl: the source's hyperlinks, or links recovered from "
                                     "mentions of other articles' titles.")
    min_title_words: int = option(2, help="Shortest title recovered links look for (1 allows single words).",
                                  bound=AT_LEAST_ONE)
    tokenizer_vocab: int = option(0, help="Train a WordPiece tokenizer of this size into OUT/tokenizer/.",
                                  bound=NOT_NEGATIVE)
    cased: bool = option(False, help="Keep case and accents in the tokenizer.")
    reqa_split: str | os.PathLike | None = option(
        None, help="Instead of a corpus: split this SQuAD JSON into ReQA fine-tuning data (train + validation as "
                   "a BEIR folder, test.json), Chang et al. 2020.", cli_type=Path)
    test_fraction: float = option(
        0.2, help="--reqa-split: share of questions for test (0.99, 0.95, 0.2 = the paper's 1% / 5% / 80% "
                  "training splits).", bound=Bound(float, 0, 1))
    seed: int = option(0, help="--reqa-split: seed of the article shuffle; --open-qa: of a new question split "
                               "and the pool's draws.", bound=NOT_NEGATIVE)
    open_qa: str | os.PathLike | None = option(
        None, help="Instead of a corpus: DPR-style open-domain QA data from these NQ-open-format questions over "
                   "the --corpus passages: train.json (DPR's format), test.jsonl and a test pool, "
                   "pool/corpus.jsonl (seedr.data.open_qa).", cli_type=Path)
    split: str | os.PathLike | None = option(
        None, help="--open-qa: the question split file; made from --test-questions and --seed and written there "
                   "when it does not exist (commit it: every run then scores the same questions).", cli_type=Path)
    test_questions: int = option(1000, help="--open-qa: questions on the test side of a new split.",
                                 bound=AT_LEAST_ONE)
    bm25_run: str | os.PathLike | None = option(
        None, help="--open-qa: BM25's TREC run of every question over the passages, 100 deep (seedr search "
                   "--bm25 --k 100): training positives and hard negatives, and pool distractors.", cli_type=Path)
    distractor_run: Sequence[str | os.PathLike] | None = option(
        None, help="--open-qa: another run over the passages (e.g. a dense encoder's) whose top passages also join "
                   "the pool (repeatable).", cli_type=list[Path])
    run_depth: int = option(20, help="--open-qa: top passages of each run that join the pool, per test question.",
                            bound=NOT_NEGATIVE)
    answer_passages: int = option(5, help="--open-qa: answer passages drawn from all of them per test question.",
                                  bound=AT_LEAST_ONE)
    pool_random: int = option(20000, help="--open-qa: passages drawn uniformly from the whole corpus into the pool.",
                              bound=NOT_NEGATIVE)
    overwrite: bool = option(
        False, help="Replace OUT when it already holds what this command writes (a prepared corpus, a ReQA split, "
                    "open-QA data); nothing else is replaced.")
    show_progress: bool = option(True, help="Show progress bars.", command_line=False)

    def __post_init__(self) -> None:
        check_options(self)
        self.out = Path(self.out)
        if self.open_qa is not None and (not self.corpus or self.split is None or self.bm25_run is None):
            raise ValueError("--open-qa needs the passages (--corpus), the question split (--split) and BM25's "
                             "run (--bm25-run)")
        if self.reqa_split is not None and self.open_qa is None and self.corpus is not None:
            raise ValueError("give --corpus or --reqa-split, not both")

    @property
    def kind(self) -> str:
        """What the config prepares (``PREPARED_KINDS``): open-QA data, a ReQA split or a corpus."""
        return "open_qa" if self.open_qa is not None else "reqa_split" if self.reqa_split is not None else "corpus"


def run(config: PrepareConfig) -> Any:
    """Write what ``config`` prepares (``config.kind``) into ``config.out`` and return its counts:
    ``seedr.data.prepare.PrepareSummary``, ``seedr.data.reqa_split.ReqaSplitSummary`` or
    ``seedr.data.open_qa.OpenQASummary``."""
    out = config.out
    corpus_paths = path_strings(config.corpus) if config.corpus is not None else []
    if config.kind == "open_qa":
        from seedr.data.open_qa import build_open_qa_from_files

        distractors = list(config.distractor_run or [])
        with locked(out):
            check_output(out, "open-QA data", overwrite=config.overwrite,
                         inputs=input_paths(config.open_qa, corpus_paths, config.split, config.bm25_run, distractors))
            return build_open_qa_from_files(out, config.open_qa, corpus_paths, config.split, config.bm25_run,
                                            distractors, test_questions=config.test_questions, seed=config.seed,
                                            show_progress=config.show_progress, run_depth=config.run_depth,
                                            answer_passages=config.answer_passages,
                                            random_passages=config.pool_random)
    if config.kind == "reqa_split":
        with locked(out):
            check_output(out, "ReQA split", overwrite=config.overwrite, inputs=[Path(config.reqa_split)])
            from seedr.data.qa import read_squad
            from seedr.data.reqa_split import write_reqa_split

            return write_reqa_split(read_squad(config.reqa_split), out, config.test_fraction, config.seed)

    from seedr.data.prepare import PrepareOptions, prepare_corpus

    options = PrepareOptions(corpus=corpus_paths, format=config.format, passage_words=config.passage_words,
                             max_articles=config.max_articles, links=config.links,
                             min_title_words=config.min_title_words, tokenizer_vocab=config.tokenizer_vocab,
                             lowercase=not config.cased)
    with locked(out):  # prepare_corpus asks check_output before it reads
        return prepare_corpus(out, options, progress=config.show_progress, overwrite=config.overwrite)


__all__ = ["PREPARED_KINDS", "PrepareConfig", "run"]
