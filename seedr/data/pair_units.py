"""What each pair task of ``seedr.objectives`` draws one pair from — its units — found without torch: a
passage with a sentence that can be its query (ICT), an article with a lead and a body (BFS), an article with
a lead that others link to (WLP; Chang et al., ICLR 2020, sec. 3), a titled text (``title``), a text long
enough for two crops (``crop``; Izacard et al., TMLR 2022, §3.2). The tasks (``PAIR_TASKS``) take their units
by these rules, and ``seedr adapt`` asks them (``check_pair_sources``) to refuse a pair source its corpus
cannot give before the libraries of training load."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from seedr.data.links import inbound_links
from seedr.data.records import Article
from seedr.data.sentences import sentence_spans
from seedr.io import DataError

#: The pair tasks ``seedr adapt`` mines, in the order it mines them (``seedr.training.mined_pairs``).
PAIR_SOURCES = ("ict", "title", "bfs", "wlp", "crop")
#: The fewest words a text needs to give two crops that say something.
MIN_CROP_WORDS = 20


def corpus_names(corpus: Any) -> list[str]:
    """The corpus as a refusal names it and ``pairs.json`` records it: its paths, or that it was rows held in
    memory."""
    if isinstance(corpus, str | Path):
        return [str(corpus)]
    if isinstance(corpus, list | tuple) and corpus and all(isinstance(item, str | Path) for item in corpus):
        return [str(item) for item in corpus]
    return ["rows in memory"]


def lead_sentences(article: Article) -> list[tuple[int, str]]:
    """``(lead paragraph index, sentence)`` of every sentence of the article's first section (its lead):
    the query side of BFS and WLP, "often the description or summary of the whole page" (sec. 3)."""
    return [(index, paragraph[start:end]) for index, paragraph in enumerate(article.lead)
            for start, end in sentence_spans(paragraph)]


def body_paragraphs(article: Article) -> list[tuple[int, str]]:
    """``(index in Article.paragraphs, heading)`` of every non-empty paragraph after the lead."""
    indices, index = [], len(article.lead)
    for section in article.sections:
        for paragraph in section.paragraphs:
            if paragraph.strip():
                indices.append((index, section.heading))
            index += 1
    return indices


def without_span(text: str, start: int, end: int) -> str:
    """``text`` with the characters ``[start, end)`` removed and the gap closed by one space."""
    return f"{text[:start].rstrip()} {text[end:].lstrip()}".strip()


def query_candidates(passage: str) -> list[tuple[int, int]]:
    """Spans of the sentences of ``passage`` that can be an ICT query: a passage needs two sentences
    (else the document is empty), and a sentence that also occurs in the rest (a repeated sentence,
    or one inside a longer one) is left out, so the query is never found verbatim in its document."""
    spans = sentence_spans(passage)
    if len(spans) < 2:
        return []
    return [(start, end) for start, end in spans
            if passage[start:end] not in without_span(passage, start, end)]


def ict_passages(article: Article) -> list[int]:
    """ICT's units in ``article``: the indices of its paragraphs that have a ``query_candidates`` sentence."""
    return [index for index, paragraph in enumerate(article.paragraphs) if query_candidates(paragraph)]


def article_text(article: Article) -> str:
    """An article's paragraphs, lead first, as one text (``seedr.data.corpus.article_document``)."""
    return "\n".join(paragraph for paragraph in article.paragraphs if paragraph.strip())


def has_lead_and_body(article: Article) -> bool:
    """BFS's unit: an article with a lead sentence to ask and a body paragraph to find."""
    return bool(body_paragraphs(article) and lead_sentences(article))


def has_title_and_text(article: Article) -> bool:
    """The ``title`` task's unit: an article with a title and a text."""
    return bool(article.title.strip() and article_text(article).strip())


def can_be_cropped(article: Article) -> bool:
    """The ``crop`` task's unit: an article of at least ``MIN_CROP_WORDS`` words."""
    return len(article_text(article).split()) >= MIN_CROP_WORDS


def linked_targets(articles: Sequence[Article]) -> list[tuple[int, list[int]]]:
    """WLP's units: ``(target, linking articles)`` for every article A with a lead that others of
    ``articles`` link to, each linking article B (its index) with a passage to be the document."""
    by_title: dict[str, list[int]] = {}
    for index, article in enumerate(articles):
        by_title.setdefault(article.title, []).append(index)
    inbound = inbound_links(articles)
    targets = []
    for index, article in enumerate(articles):
        # entries sharing a title (FOLDOC's senses) each link on their own: keep those that do
        sources = [source for title in inbound.get(article.title, ()) for source in by_title[title]
                   if article.title in articles[source].links
                   and any(p.strip() for p in articles[source].paragraphs)]
        if sources and lead_sentences(article):
            targets.append((index, sources))
    return targets


#: Whether one article gives a unit, for the tasks whose units lie within an article (WLP's are links).
ARTICLE_UNITS: dict[str, Callable[[Article], bool]] = {
    "ict": lambda article: bool(ict_passages(article)), "title": has_title_and_text, "bfs": has_lead_and_body,
    "crop": can_be_cropped}


def check_source_names(sources: Sequence[str]) -> None:
    """A ``ValueError`` listing the valid names when ``sources`` names a task that is not a pair source."""
    unknown = sorted(set(sources) - set(PAIR_SOURCES))
    if unknown:
        raise ValueError(f"unknown pair source(s) {', '.join(unknown)}; sources: {', '.join(PAIR_SOURCES)}")


def check_pair_sources(articles: Iterable[Article], sources: Sequence[str], where: str) -> None:
    """Refuse, in one line naming ``where``, pair ``sources`` that no article of ``articles`` gives a unit
    (so no pair) to, saying which sources they do give. ``articles`` are read only until every source named
    has a unit, except for WLP, whose units are links between all of them."""
    check_source_names(sources)
    named, read, found = set(sources), [], set()
    for article in articles:
        read.append(article)
        found.update(name for name, gives in ARTICLE_UNITS.items() if name not in found and gives(article))
        if "wlp" not in named and named <= found:
            return
    if linked_targets(read):
        found.add("wlp")
    missing = [name for name in sources if name not in found]
    if missing:
        supported = ", ".join(name for name in PAIR_SOURCES if name in found) or "none"
        raise DataError(where, f"no {', '.join(missing)} pair can be mined from these documents; pair "
                               f"sources they support: {supported}")


__all__ = ["ARTICLE_UNITS", "MIN_CROP_WORDS", "PAIR_SOURCES", "article_text", "body_paragraphs",
           "can_be_cropped", "check_pair_sources", "check_source_names", "corpus_names", "has_lead_and_body",
           "has_title_and_text", "ict_passages", "lead_sentences", "linked_targets", "query_candidates",
           "without_span"]
