"""Readers of dictionary glossaries with real hyperlinks: FOLDOC and the Jargon File.

Both come as JSON lines ``{"headword", "text"}`` (the ``foldoc/`` bundle) or as the raw dictd files
Debian's ``dict-foldoc`` / ``dict-jargon`` install (``foldoc.index`` + ``foldoc.dict.dz``). An entry's
text starts with its names (the display headword, then FOLDOC's aliases, e.g. ``Compatible
Timesharing System`` / ``CTSS``; the Jargon File indents a pronunciation/part-of-speech line there),
then a blank line and the definition. Cross-references are written ``{like this}`` and are the
glossary's hyperlinks: ``Article.links`` lists the entries they point to.
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from seedr.data.records import Article
from seedr.io import DataError, iter_jsonl, iter_lines, require

_CROSS_REFERENCE = re.compile(r"\{([^{}]*)\}")
_DATE_STAMP = re.compile(r"\(\d{4}-\d{2}-\d{2}\)")  # FOLDOC's "last edited" mark ending most entries
_WHITESPACE = re.compile(r"\s+")
#: dictd's base-64 digits for offsets and lengths in ``.index`` files (dictfmt(1)).
_DICTD_DIGITS = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}


@dataclass(frozen=True)
class _Entry:
    line: int
    headword: str
    text: str


def _collapse(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def _key(name: str) -> str:
    """How headwords and cross-references are compared: case and spacing ignored, as dict(1) does."""
    return _collapse(name).lower()


def _names(text: str) -> tuple[str, list[str]]:
    """The display title and the aliases an entry text starts with (its first block, unindented lines)."""
    block = text.lstrip("\n").split("\n\n", 1)[0].split("\n")
    title = block[0].strip()
    return title, [line.strip() for line in block[1:] if line.strip() and not line[:1].isspace()]


def _definition(text: str) -> str:
    return text.lstrip("\n").split("\n\n", 1)[1] if "\n\n" in text.lstrip("\n") else ""


def _entry_id(headword: str, taken: dict[str, int]) -> str:
    """A run-file-safe id: spaces as underscores; later senses of a headword get ``#2``, ``#3`` …"""
    base = headword.replace(" ", "_").replace("\t", "_")
    taken[base] = taken.get(base, 0) + 1
    return base if taken[base] == 1 else f"{base}#{taken[base]}"


class _Resolver:
    """Maps a cross-reference to the title of the entry it names.

    Tries the exact name (headword, title or alias, case-insensitively), then the singular of a
    plural ("{operating systems}" → "operating system"), because FOLDOC writes links in running text.
    """

    def __init__(self, entries: list[_Entry]) -> None:
        self.titles: dict[str, str] = {}
        for entry in entries:
            title, aliases = _names(entry.text)
            for name in (entry.headword, title, *aliases):
                self.titles.setdefault(_key(name), title or entry.headword)

    def __call__(self, reference: str) -> str | None:
        key = _key(reference)
        candidates = [key]
        if key.endswith("ies"):
            candidates.append(key[:-3] + "y")
        if key.endswith("s"):
            candidates.append(key[:-1])
        if key.endswith("es"):
            candidates.append(key[:-2])
        return next((self.titles[c] for c in candidates if c in self.titles), None)


def _paragraphs(definition: str) -> tuple[str, ...]:
    """Blank-line-separated blocks, re-flowed onto one line each; FOLDOC's date stamps dropped."""
    blocks = (_collapse(block) for block in re.split(r"\n\s*\n", definition))
    return tuple(block for block in blocks if block and not _DATE_STAMP.fullmatch(block))


def _article(entry: _Entry, entry_id: str, resolve: _Resolver, keep_unresolved: bool) -> Article:
    title, _ = _names(entry.text)
    title = title or entry.headword
    links: list[str] = []
    for reference in _CROSS_REFERENCE.findall(entry.text):
        target = resolve(reference)
        if target is None and keep_unresolved and _collapse(reference):
            target = _collapse(reference)
        if target is not None and target != title and target not in links:
            links.append(target)
    definition = _CROSS_REFERENCE.sub(r"\1", _definition(entry.text))
    return Article(id=entry_id, title=title, lead=_paragraphs(definition), links=tuple(links))


def _jsonl_entries(path: str | os.PathLike) -> list[_Entry]:
    entries = []
    for line, record in iter_jsonl(path):
        headword = require(record, "headword", path, line)
        text = require(record, "text", path, line)
        entries.append(_Entry(line, headword, text))
    return entries


def _dictd_number(encoded: str, path: Path, line: int, field: str) -> int:
    value = 0
    for digit in encoded:
        if digit not in _DICTD_DIGITS:
            raise DataError(path, f"{encoded!r} is not a dictd base-64 number", line=line, field=field)
        value = value * 64 + _DICTD_DIGITS[digit]
    return value


def _dictd_entries(index_path: Path) -> list[_Entry]:
    """Entries of a dictd ``.index`` + ``.dict[.dz]`` pair; index lines naming the same definition
    (a headword and its aliases) give one entry, under the first headword."""
    stem = index_path.with_suffix("")
    dictionary = next((p for p in (stem.with_suffix(".dict.dz"), stem.with_suffix(".dict")) if p.exists()), None)
    if dictionary is None:
        raise DataError(index_path, f"no {stem.name}.dict.dz or {stem.name}.dict beside the index")
    # dictzip files are gzip files with random-access data in a header field: gzip reads them whole.
    data = gzip.decompress(dictionary.read_bytes()) if dictionary.suffix == ".dz" else dictionary.read_bytes()
    spans: dict[tuple[int, int], _Entry] = {}
    for line, text in iter_lines(index_path):
        if not text.strip():
            continue
        columns = text.split("\t")
        if len(columns) != 3:
            raise DataError(index_path, f"expected 3 tab-separated columns (headword, offset, length), "
                            f"found {len(columns)}", line=line, field="offset" if len(columns) < 3 else None)
        headword, offset, length = columns
        if headword.startswith(("00-database", "00database")):
            continue  # dictfmt's metadata entries (info, url, short name), not definitions
        span = (_dictd_number(offset, index_path, line, "offset"), _dictd_number(length, index_path, line, "length"))
        if span[0] + span[1] > len(data):
            raise DataError(index_path, f"points past the end of {dictionary.name}", line=line, field="length")
        if span not in spans:
            body = data[span[0]:span[0] + span[1]]
            try:
                spans[span] = _Entry(line, headword, body.decode("utf-8"))
            except UnicodeDecodeError:
                raise DataError(dictionary, f"bytes that are not UTF-8 in the definition of {headword!r}",
                                line=data[:span[0]].count(b"\n") + 1) from None
    return [spans[span] for span in sorted(spans)]


def read_glossary(path: str | os.PathLike, keep_unresolved: bool = False) -> Iterator[Article]:
    """The entries of a FOLDOC / Jargon File glossary as articles whose ``links`` are its cross-references.

    Reads the JSON lines of the ``foldoc/`` bundle (``{"headword", "text"}``, ``.gz`` transparent) or a
    raw dictd ``.index`` file (its ``.dict.dz`` / ``.dict`` beside it). For each entry:

    - ``title`` is its display headword (the first line of its text: ``!!!Batch``, not ``!!!batch``);
      ``id`` the headword with spaces as underscores (run files split on spaces), ``#2``, ``#3`` … for
      further senses of the same headword;
    - ``lead`` the definition's paragraphs, re-flowed onto one line each, with the braces of
      cross-references removed (their words kept) and FOLDOC's ``(yyyy-mm-dd)`` edit stamps dropped;
    - ``links`` the titles of the entries its ``{cross-references}`` name, in order of first mention,
      without repeats or the entry itself. References are matched to headwords and aliases ignoring
      case and spacing, then as the singular of a plural. A reference that names no entry (an
      external ``{label (URL)}``, a missing entry, a brace in quoted code) is not a link unless
      ``keep_unresolved``.

    The bundle's own ``links`` field (a sorted set of the raw brace contents, code fragments included) is
    not used. The file is read once to learn every headword, so whole glossaries (FOLDOC: 12k entries)
    are held in memory; they are small.
    """
    path = Path(path)
    entries = _dictd_entries(path) if path.suffix == ".index" else _jsonl_entries(path)
    resolve = _Resolver(entries)
    taken: dict[str, int] = {}
    for entry in entries:
        article = _article(entry, _entry_id(entry.headword, taken), resolve, keep_unresolved)
        if not article.lead:
            raise DataError(path, "empty: the entry has a headword but no definition", line=entry.line,
                            field="text")
        yield article


__all__ = ["read_glossary"]
