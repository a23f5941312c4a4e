"""Hyperlinks between articles: recovered from title mentions when a dump lost them, and the link graph.

Wiki Link Prediction (WLP, Chang et al., ICLR 2020, sec. 3) pairs "a random sentence in the first
section of a Wikipedia page" A with "a passage from another page where there is a hyperlink to the
page" A, so it needs the link graph (``inbound_links``: the pages linking to A). The ``wiki/`` bundle's
hyperlinks were stripped by wikiextractor; ``recover_title_links`` puts back the links a reader can
still see — mentions of other articles' titles — with one Aho–Corasick pass over each article.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Mapping, Sequence

import ahocorasick

from seedr.data.records import Article
from seedr.io import DataError, iter_jsonl, require, write_jsonl

_DISAMBIGUATION = re.compile(r"\s+\([^()]*\)$")  # "Mercury (planet)" is mentioned as "Mercury"


def _surface_forms(title: str, lowercase_first_letter: bool, match_disambiguated: bool) -> list[str]:
    """How ``title`` appears in running text: itself, and — for a common-noun title whose other letters
    are all lower case ("Political philosophy") — with its first letter lower-cased (Wikipedia titles
    are case-insensitive in their first letter only). A title with a trailing "(qualifier)"
    ("Liberal Party (UK)") never appears as such; with ``match_disambiguated`` its bare form
    ("Liberal Party") stands for it."""
    surface = _DISAMBIGUATION.sub("", title).strip()
    if surface != title and not match_disambiguated:
        return []
    forms = [surface]
    if lowercase_first_letter and surface[:1].isupper() and surface[1:] == surface[1:].lower():
        forms.append(surface[0].lower() + surface[1:])
    return forms


class TitleLinker:
    """Finds mentions of a fixed set of titles in text: whole words, case-sensitive, longest match first.

    Built once from all titles (e.g. of every shard), then applied to one article at a time, so a corpus
    can be streamed.

    Args:
        titles: the titles of the articles that may be linked to.
        min_title_words: shortest title (in words) to look for. Single-word titles ("British",
            "Paris", "Rock") are mostly common words or adjectives in running text, so the default
            is 2.
        lowercase_first_letter: also match common-noun titles with a lower-case first letter.
        match_disambiguated: also match titles with a "(qualifier)" by their bare form. Off by default:
            in a partial dump the bare form's main article is often missing, so "Cold War" would link
            to "Cold War (1947–53)". A bare form shared by several titles ("Mercury (planet)",
            "Mercury (element)") links to none of them, and a title that is exactly the bare form wins.

    Example:
        >>> linker = TitleLinker(["New York City", "New York", "Anarchism"])
        >>> linker.mentions("He moved to New York City, not New York State.", own_title="Anarchism")
        ['New York City', 'New York']
    """

    def __init__(self, titles: Iterable[str], min_title_words: int = 2, lowercase_first_letter: bool = True,
                 match_disambiguated: bool = False) -> None:
        exact: dict[str, str] = {}
        derived: dict[str, set[str]] = {}
        for title in titles:
            forms = _surface_forms(title, lowercase_first_letter, match_disambiguated)
            if not forms or len(forms[0].split()) < min_title_words:
                continue
            for form in forms:
                if form == title:
                    exact[form] = title
                else:
                    derived.setdefault(form, set()).add(title)
        self._automaton = ahocorasick.Automaton()
        for form, owners in derived.items():
            if form not in exact and len(owners) == 1:
                self._automaton.add_word(form, (len(form), next(iter(owners))))
        for form, title in exact.items():
            self._automaton.add_word(form, (len(form), title))
        self.size = len(self._automaton)
        if self.size:
            self._automaton.make_automaton()

    def mentions(self, text: str, own_title: str | None = None) -> list[str]:
        """Titles mentioned in ``text``, in order of first mention, without repeats or ``own_title``.

        Overlapping mentions are resolved leftmost-longest ("New York City" beats "New York" and
        "York City"); a mention of the article's own title still takes its span, so "United States
        Army" in the article of that name does not become a link to "United States".
        """
        if not self.size:
            return []
        candidates = []
        for end, (length, title) in self._automaton.iter(text):
            start = end - length + 1
            # whole words only: the characters around the mention must not continue a word
            if (start > 0 and text[start - 1].isalnum()) or (end + 1 < len(text) and text[end + 1].isalnum()):
                continue
            candidates.append((start, -length, title))
        candidates.sort()
        linked: list[str] = []
        covered_until = 0
        for start, negative_length, title in candidates:
            if start < covered_until:
                continue
            covered_until = start - negative_length
            if title != own_title and title not in linked:
                linked.append(title)
        return linked


def recover_title_links(articles: Iterable[Article], min_title_words: int = 2,
                        max_links_per_article: int | None = None, lowercase_first_letter: bool = True,
                        match_disambiguated: bool = False, titles: Iterable[str] | None = None) -> list[Article]:
    """The articles with ``links`` set to the other articles' titles they mention.

    A mention is a whole-word, case-sensitive occurrence of a title (see ``TitleLinker``) in the
    article's paragraphs; links keep the order of first mention. Links already present (read from
    the source) come first and are kept.

    Args:
        min_title_words: titles shorter than this are not looked for (single words are noisy; pass 1
            to allow them).
        max_links_per_article: keep only the first N links of each article.
        lowercase_first_letter, match_disambiguated: see ``TitleLinker``.
        titles: the titles that may be linked to; by default those of ``articles``. Pass the titles
            of a whole dump to link across shards.

    Example:
        >>> from seedr.data.articles import read_articles
        >>> articles = recover_title_links(read_articles("../shared/data/wiki/enwiki-2015-00.jsonl.xz"))
    """
    articles = list(articles)
    linker = TitleLinker(titles if titles is not None else (a.title for a in articles), min_title_words,
                         lowercase_first_letter, match_disambiguated)
    linked = []
    for article in articles:
        links = list(article.links)
        for title in linker.mentions("\n".join(article.paragraphs), own_title=article.title):
            if title not in links:
                links.append(title)
        linked.append(dataclasses.replace(article, links=tuple(links[:max_links_per_article])))
    return linked


def link_graph(articles: Iterable[Article], within: bool = True) -> dict[str, list[str]]:
    """Title → linked titles (in order, without repeats or self-links); entries sharing a title merge.

    Args:
        within: keep only links to titles of ``articles`` (the pairs WLP can build from this corpus).
    """
    graph: dict[str, dict[str, None]] = {}  # dicts as ordered sets
    for article in articles:
        graph.setdefault(article.title, {}).update(
            dict.fromkeys(link for link in article.links if link != article.title))
    return {title: [link for link in links if not within or link in graph] for title, links in graph.items()}


def inbound_links(articles_or_graph: Iterable[Article] | Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Title → titles of the articles that link to it (WLP's "articles that link to A").

    Takes articles or a graph from ``link_graph``; titles nothing links to are absent.
    """
    graph = articles_or_graph if isinstance(articles_or_graph, Mapping) else link_graph(articles_or_graph)
    inbound: dict[str, list[str]] = {}
    for source, targets in graph.items():
        for target in targets:
            inbound.setdefault(target, []).append(source)
    return inbound


def write_links(path: str | os.PathLike, articles: Iterable[Article]) -> int:
    """Write ``links.jsonl``: one ``{"id", "title", "links"}`` line per article, atomically."""
    return write_jsonl(path, ({"id": a.id, "title": a.title, "links": list(a.links)} for a in articles))


def read_links(path: str | os.PathLike) -> dict[str, list[str]]:
    """Read a ``links.jsonl`` written by ``write_links`` (or ``seedr prepare --links``) as a link graph:
    title → linked titles, entries sharing a title merged."""
    graph: dict[str, dict[str, None]] = {}  # dicts as ordered sets
    for line, record in iter_jsonl(path):
        title = require(record, "title", path, line)
        links = require(record, "links", path, line, kind=list, allow_empty=True)
        if not all(isinstance(link, str) for link in links):
            raise DataError(path, "expected a list of titles", line=line, field="links")
        graph.setdefault(title, {}).update(dict.fromkeys(links))
    return {title: list(links) for title, links in graph.items()}


__all__ = ["TitleLinker", "inbound_links", "link_graph", "read_links", "recover_title_links", "write_links"]
