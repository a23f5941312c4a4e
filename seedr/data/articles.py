"""Readers of structured encyclopedic articles: the ``wiki/`` bundle's JSONL and raw wikiextractor output.

Both stream: one article is parsed at a time, so a whole dump shard is never held in memory.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Iterator
from urllib.parse import unquote

from seedr.data.records import Article, Section
from seedr.io import DataError, iter_jsonl, iter_lines, require, unique_id


def _string_list(record: dict, field: str, path: str | os.PathLike, line: int, where: str = "") -> tuple[str, ...]:
    """``record[field]`` as a tuple of strings (absent → empty), or a ``DataError`` naming the field."""
    value = record.get(field)
    if value is None:
        return ()
    name = f"{where}{field}"
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise DataError(path, "expected a list of strings", line=line, field=name)
    return tuple(value)


def _parse_sections(record: dict, path: str | os.PathLike, line: int) -> tuple[Section, ...]:
    raw = record.get("sections")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise DataError(path, "expected a list of sections", line=line, field="sections")
    sections = []
    for index, section in enumerate(raw):
        where = f"sections[{index}]."
        if not isinstance(section, dict):
            raise DataError(path, "expected an object with heading and paragraphs", line=line,
                            field=f"sections[{index}]")
        heading = section.get("heading", "")
        if not isinstance(heading, str):
            raise DataError(path, "expected a string", line=line, field=f"{where}heading")
        sections.append(Section(heading, _string_list(section, "paragraphs", path, line, where)))
    return tuple(sections)


def read_articles(path: str | os.PathLike) -> Iterator[Article]:
    """Stream the articles of a structured article JSONL file (``.xz``/``.gz``/``.bz2`` transparent).

    One article a line: ``{"id", "title", "lead": [paragraph, ...], "sections": [{"heading",
    "paragraphs": [...]}, ...]}`` — the format of ``../shared/data/wiki/*.jsonl.xz``. Numeric ids
    become strings.

    Raises:
        DataError: malformed JSON, a missing id or title, a field of the wrong type, an article with
            no text at all (no lead and no section paragraph), or an id seen earlier in the file.
    """
    seen: dict[str, int] = {}
    for line, record in iter_jsonl(path):
        article_id = require(record, "id", path, line)
        title = require(record, "title", path, line)
        lead = _string_list(record, "lead", path, line)
        sections = _parse_sections(record, path, line)
        if not any(p.strip() for p in lead) and not any(p.strip() for s in sections for p in s.paragraphs):
            raise DataError(path, "empty: the article has no lead and no section paragraph", line=line,
                            field="lead")
        unique_id(seen, article_id, path, line)
        yield Article(id=article_id, title=title, lead=lead, sections=sections)


# --- wikiextractor -------------------------------------------------------------------------------------
# attardi/wikiextractor writes each page as
#     <doc id="12" url="https://en.wikipedia.org/wiki?curid=12" title="Anarchism">
#     Anarchism
#
#     paragraph (one per line)
#     Section heading.
#     paragraph
#     </doc>
# (extract.py: ``Extractor.extract`` writes the title line then a blank line; ``compact`` turns every
# non-empty section heading into its own line with a "." appended unless it ends in "!" or "?", and
# emits all pending headings of nested levels before the section's first paragraph). Text is
# HTML-escaped (``html_safe``) and, with ``--links``, internal links are kept as ``<a href="Title">``.
# With ``--json`` each page is instead one JSON object ``{"id", "revid", "url", "title", "text"}``
# whose ``text`` holds the same lines (without the title line).

_DOC_OPEN = re.compile(r"^<doc\b(?P<attributes>.*)>\s*$")
# a value ends only where another attribute or the closing ">" follows, so titles with quotes survive
_ATTRIBUTE = re.compile(r'(\w+)="(.*?)"(?=\s+\w+="|\s*$)')
_ANCHOR = re.compile(r'<a href="([^"]*)">(.*?)</a>', re.DOTALL)
#: Wikipedia section headings have at most 10 words (measured on the wiki/ bundle's 34k headings).
_MAX_HEADING_WORDS = 10


def _link_target(href: str) -> str:
    """The article title an href points to: URL-decoded, underscores as spaces, no #fragment,
    first letter upper-cased (Wikipedia titles are case-insensitive in their first letter only)."""
    target = unquote(href).replace("_", " ").split("#", 1)[0].strip()
    return target[:1].upper() + target[1:]


def _clean_line(line: str, links: list[str]) -> str:
    """Unescape wikiextractor's HTML-safe text; ``<a href>`` links (``--links``) give their target to
    ``links`` and leave their anchor text."""
    text = html.unescape(line)

    def anchor(match: re.Match) -> str:
        target = _link_target(match.group(1))
        if target and target not in links:
            links.append(target)
        return match.group(2)

    return _ANCHOR.sub(anchor, text).strip()


def _is_heading(line: str, next_line: str | None) -> bool:
    """Whether a wikiextractor line is a section heading rather than a paragraph.

    Nothing marks headings but their shape: a short line (at most 10 words) without an inner sentence
    break, ending in the "." wikiextractor appends, and followed by more text (``compact`` only writes
    headings of non-empty sections). Over shard 00 of the wiki bundle laid out as wikiextractor writes
    it, this recovers 99.5% of the 33,163 headings and takes 1 of 115k paragraphs for one; headings
    that end in "!" or "?" (no "." appended) stay paragraphs.
    """
    if next_line is None or not line.endswith(".") or line.endswith(".."):
        return False
    body = line[:-1]
    return (0 < len(body.split()) <= _MAX_HEADING_WORDS and ". " not in body
            and not body.endswith((" ", ",", ";", ":")))


def _structure(lines: list[str]) -> tuple[tuple[str, ...], tuple[Section, ...]]:
    """Split a page's text lines into its lead and its sections (headings without paragraphs of their
    own — the parents of nested sections — are dropped, as in the ``wiki/`` bundle)."""
    lead: list[str] = []
    sections: list[Section] = []
    heading: str | None = None
    paragraphs: list[str] = []
    for index, line in enumerate(lines):
        following = lines[index + 1] if index + 1 < len(lines) else None
        if _is_heading(line, following):
            if heading is not None and paragraphs:
                sections.append(Section(heading, tuple(paragraphs)))
            heading, paragraphs = line[:-1], []
        elif heading is None:
            lead.append(line)
        else:
            paragraphs.append(line)
    if heading is not None and paragraphs:
        sections.append(Section(heading, tuple(paragraphs)))
    return tuple(lead), tuple(sections)


def _page(page_id: str, title: str, raw_lines: list[str]) -> Article:
    links: list[str] = []
    lines = [text for text in (_clean_line(line, links) for line in raw_lines) if text]
    if lines and lines[0] == title:
        lines = lines[1:]  # the title line wikiextractor writes after <doc>
    lead, sections = _structure(lines)
    return Article(id=page_id, title=title, lead=lead, sections=sections,
                   links=tuple(link for link in links if link != title))


def _doc_pages(path: str | os.PathLike) -> Iterator[tuple[int, str, str, list[str]]]:
    """``(line, id, title, text lines)`` of each ``<doc>`` element of a wikiextractor text file."""
    opened: tuple[int, str, str] | None = None
    lines: list[str] = []
    for number, line in iter_lines(path):
        if opened is None:
            if not line.strip():
                continue
            match = _DOC_OPEN.match(line)
            if not match:
                raise DataError(path, f"text outside a <doc> element: {line[:60]!r}", line=number)
            attributes = dict(_ATTRIBUTE.findall(match.group("attributes")))
            if not attributes.get("id", "").strip():
                raise DataError(path, "missing", line=number, field="id")
            opened = (number, attributes["id"].strip(), html.unescape(attributes.get("title", "")).strip())
            lines = []
        elif line.strip() == "</doc>":
            start, page_id, title = opened
            if not title:
                title = next((html.unescape(text).strip() for text in lines if text.strip()), "")
            if not title:
                raise DataError(path, "missing", line=start, field="title")
            yield start, page_id, title, lines
            opened = None
        elif _DOC_OPEN.match(line):
            raise DataError(path, f"<doc> opened on line {opened[0]} is not closed before this one", line=number)
        else:
            lines.append(line)
    if opened is not None:
        raise DataError(path, "the file ends inside a <doc> element (no </doc>)", line=opened[0])


def _json_pages(path: str | os.PathLike) -> Iterator[tuple[int, str, str, list[str]]]:
    for line, record in iter_jsonl(path):
        page_id = require(record, "id", path, line)
        title = require(record, "title", path, line)
        text = require(record, "text", path, line, allow_empty=True)
        yield line, page_id, title, text.split("\n")


def read_wikiextractor(path: str | os.PathLike, skip_empty: bool = True) -> Iterator[Article]:
    """Stream the pages of raw `wikiextractor <https://github.com/attardi/wikiextractor>`_ output as articles.

    Reads both the ``<doc id=… url=… title=…>`` text files and the ``--json`` output. The first line of
    a page (the title) is dropped; every other non-empty line is a paragraph, except section headings
    (short lines ending in the "." wikiextractor appends), which open a new section. HTML escapes are
    undone; ``<a href>`` links (``--links``) become ``Article.links`` and their anchor text stays.

    Args:
        skip_empty: wikiextractor writes an empty page for every stub it could not render; skip them
            (default) instead of raising.

    Raises:
        DataError: a page without id or title, an unclosed ``<doc>``, text outside ``<doc>``, a
            repeated id, or (with ``skip_empty=False``) a page without text.
    """
    first_text = next((text for _, text in iter_lines(path) if text.strip()), "")
    pages = _json_pages(path) if first_text.lstrip().startswith("{") else _doc_pages(path)
    seen: dict[str, int] = {}
    for line, page_id, title, lines in pages:
        article = _page(page_id, title, lines)
        if not article.paragraphs:
            if skip_empty:
                continue
            raise DataError(path, "empty: the page has no text", line=line, field="text")
        unique_id(seen, page_id, path, line)
        yield article


__all__ = ["read_articles", "read_wikiextractor"]
