"""``seedr prepare``'s work: turn any supported corpus into a prepared corpus folder.

The folder holds

- ``corpus.jsonl`` — seedr corpus JSONL (``{"id", "title", "text"}``): whole documents, or DPR passages;
- ``links.jsonl`` — with ``links``: ``{"id", "title", "links"}`` per article, the glossary's
  cross-references or wikiextractor's ``<a href>`` links when the source has them, else links
  recovered from title mentions (``seedr.data.links.recover_title_links``);
- ``tokenizer/`` — with ``tokenizer_vocab``: a BERT WordPiece tokenizer trained on the corpus;
- ``queries.jsonl`` + ``qrels/test.tsv`` — for the embedded default corpus only: its description
  known-item task, in BEIR's format (so the folder reads as a BEIR data set);
- ``prepared.json`` — the counts below (``PrepareSummary``); ``config.yaml`` + ``run.json`` — the
  options, versions and command that made it.

It is built beside its final place and renamed into place only when complete.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tqdm import tqdm

from seedr.data.corpus import article_document, read_corpus, read_corpus_articles, write_corpus
from seedr.data.default import default_articles, default_description_queries
from seedr.data.inputs import PREPARED_MARKER
from seedr.data.links import recover_title_links, write_links
from seedr.data.passages import split_passages
from seedr.data.queries import write_qrels, write_queries
from seedr.data.records import Article, Qrels
from seedr.data.tokenizer import train_wordpiece
from seedr.io import atomic_directory, atomic_write, check_output
from seedr.provenance import record_run


@dataclass
class PrepareOptions:
    """What ``prepare_corpus`` does; recorded in the folder's ``config.yaml``."""

    corpus: list[str] = field(default_factory=list)  # files, globs, folders; empty: the embedded default corpus
    format: str = "auto"
    passage_words: int = 0  # words per DPR passage; 0 keeps documents whole
    max_articles: int | None = None  # read only the first N articles (of all files, in order)
    links: bool = False
    min_title_words: int = 2
    tokenizer_vocab: int = 0  # 0: no tokenizer
    lowercase: bool = True


@dataclass
class PrepareSummary:
    """Counts of what a prepared folder holds."""

    out_dir: Path
    articles: int = 0
    documents: int = 0
    link_source: str | None = None  # "read" from the source, or "recovered" from title mentions
    linked_articles: int = 0
    links: int = 0
    tokenizer_vocab: int | None = None
    queries: int | None = None
    qrels: int | None = None
    notes: list[str] = field(default_factory=list)


def _source_articles(options: PrepareOptions) -> Iterator[Article]:
    articles = default_articles() if not options.corpus else read_corpus_articles(options.corpus, options.format)
    return itertools.islice(articles, options.max_articles)


def _with_links(articles: list[Article], options: PrepareOptions, summary: PrepareSummary) -> list[Article]:
    if any(article.links for article in articles):
        summary.link_source = "read"
        return articles
    summary.link_source = "recovered"
    return recover_title_links(articles, min_title_words=options.min_title_words)


def _passage_qrels(qrels: Qrels, words: int) -> Qrels:
    """The default corpus's document-level judgements carried over to every passage of the judged article."""
    passages = {article.id: -(-len(" ".join(article.paragraphs).split()) // words) for article in default_articles()}
    return {qid: {f"{doc_id}-{k}": grade for doc_id, grade in judged.items() for k in range(passages[doc_id])}
            for qid, judged in qrels.items()}


def prepare_corpus(out_dir: str | os.PathLike, options: PrepareOptions | None = None,
                   progress: bool = True, overwrite: bool = False) -> PrepareSummary:
    """Write a prepared corpus folder (see the module docstring) for ``options``; returns its counts.

    Streams the corpus unless links are wanted: link recovery needs every title first, so the
    articles are then held in memory (about 85 MB a shard of the wiki bundle, 0.7 GB for all 8).
    An existing prepared folder is replaced only with ``overwrite``; any other folder is refused.
    """
    options = options or PrepareOptions()
    if options.max_articles is not None and not options.corpus:
        raise ValueError("max_articles cuts a given corpus; the embedded one comes whole, with its queries")
    out_dir = Path(out_dir)
    check_output(out_dir, "prepared corpus", overwrite=overwrite,
                 inputs=[Path(path) for path in options.corpus if Path(path).exists()])
    summary = PrepareSummary(out_dir=out_dir)
    with atomic_directory(out_dir) as folder:
        articles: Iterable[Article] = _source_articles(options)
        if options.links:
            articles = _with_links(list(articles), options, summary)
            summary.linked_articles = sum(bool(article.links) for article in articles)
            summary.links = sum(len(article.links) for article in articles)
            write_links(folder / "links.jsonl", articles)
        read = itertools.count()  # counted apart from the bar: a disabled tqdm counts nothing
        counted = tqdm((article for article, _ in zip(articles, read)), desc="articles", unit="",
                       disable=not progress)
        documents = (split_passages(counted, words=options.passage_words) if options.passage_words
                     else map(article_document, counted))
        summary.documents = write_corpus(folder / "corpus.jsonl", documents)
        summary.articles = next(read)
        if not options.corpus:
            queries, qrels = default_description_queries()
            if options.passage_words:
                qrels = _passage_qrels(qrels, options.passage_words)
            summary.queries = write_queries(folder / "queries.jsonl", queries)
            write_qrels(folder / "qrels" / "test.tsv", qrels, format="beir")
            summary.qrels = sum(map(len, qrels.values()))
        if options.tokenizer_vocab:
            texts = (text for document in read_corpus(folder / "corpus.jsonl", "seedr")
                     for text in (document.title, document.text) if text)
            tokenizer = train_wordpiece(texts, folder / "tokenizer", vocab_size=options.tokenizer_vocab,
                                        lowercase=options.lowercase, show_progress=progress)
            summary.tokenizer_vocab = len(tokenizer)
            if summary.tokenizer_vocab < options.tokenizer_vocab:
                summary.notes.append(f"the corpus only supports {summary.tokenizer_vocab} tokens "
                                     f"(asked for {options.tokenizer_vocab})")
        record_run(folder, asdict(options), seed=None)
        with atomic_write(folder / PREPARED_MARKER) as stream:
            json.dump({**asdict(summary), "out_dir": str(out_dir)}, stream, indent=2)
    return summary


__all__ = ["PREPARED_MARKER", "PrepareOptions", "PrepareSummary", "prepare_corpus"]
