"""FOLDOC and the Jargon File: entries, real {cross-link} hyperlinks, and Debian's raw dictd files."""

from __future__ import annotations

import gzip
import itertools
import json
import re
from pathlib import Path

import pytest

from seedr.data.glossary import read_glossary
from seedr.data.records import Article
from seedr.io import DataError

DICTD_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


@pytest.fixture(scope="module")
def foldoc_path(shared_data: Path) -> Path:
    return shared_data / "foldoc" / "foldoc.jsonl.gz"


@pytest.fixture(scope="module")
def foldoc(foldoc_path: Path) -> list[Article]:
    return list(read_glossary(foldoc_path))


def test_foldoc_entries_and_links(foldoc: list[Article], foldoc_path: Path) -> None:
    assert len(foldoc) == 12_014
    assert len({a.id for a in foldoc}) == 12_014  # repeated headwords (other senses) get #2, #3 ...
    with gzip.open(foldoc_path, "rt", encoding="utf-8") as stream:
        written = sum(len(re.findall(r"\{[^{}]*\}", json.loads(line)["text"])) for line in stream)
    assert written == 60_437  # {cross-links} as written in FOLDOC's text
    # those naming an entry, once per entry: the rest are external {label (URL)} links or missing entries
    assert sum(len(a.links) for a in foldoc) == 46_389
    titles = {a.title for a in foldoc}
    assert all(link in titles and link != a.title for a in foldoc for link in a.links)
    assert all(len(set(a.links)) == len(a.links) for a in foldoc)


def test_foldoc_entry_text(foldoc: list[Article]) -> None:
    batch = next(a for a in foldoc if a.id == "!!!batch")
    assert batch.title == "!!!Batch"  # the display headword, not the lower-cased dictionary key
    # {exclamation\n   marks} is written across a line break and in the plural: it links to the entry
    assert batch.links == ("exclamation mark", "question mark", "batch file", "esoteric programming language")
    assert batch.lead[0].startswith("<language, humour> A daft way of obfuscating text strings by encoding each "
                                    "character as a different number of exclamation marks surrounded by")
    assert not any("{" in p or "(2014-10-25)" in p for p in batch.lead)  # braces and the edit stamp are gone
    ctss = next(a for a in foldoc if a.title == "Compatible Timesharing System")
    assert {"Multics", "Unix"} <= set(ctss.links)
    # an alias in the names block ("CTSS") reaches its entry
    assert any("Compatible Timesharing System" in a.links for a in foldoc)


def test_jargon_file(shared_data: Path) -> None:
    jargon = list(read_glossary(shared_data / "foldoc" / "jargon.jsonl.gz"))
    assert len(jargon) == 2_307
    assert sum(len(a.links) for a in jargon) == 5_112
    frog = next(a for a in jargon if a.title == "dancing frog")
    assert frog.lead[0].startswith("[Vancouver area] A problem that occurs on a computer that will not reappear")
    assert "n." not in frog.lead  # the indented part-of-speech line belongs to the names block
    substrate = next(a for a in jargon if a.title == "sodium substrate")
    assert substrate.links == ("salt substrate",) and substrate.lead == ("Syn salt substrate.",)


def _dictd_number(value: int) -> str:
    digits = ""
    while True:
        value, digit = divmod(value, 64)
        digits = DICTD_DIGITS[digit] + digits
        if not value:
            return digits


def test_dictd_index_and_dictzip_match_the_jsonl(tmp_path: Path, foldoc_path: Path) -> None:
    """Debian's dict-foldoc layout: foldoc.index (headword, base-64 offset, length; one line per name, all
    pointing at the same definition) and foldoc.dict.dz (gzip-compatible dictzip)."""
    with gzip.open(foldoc_path, "rt", encoding="utf-8") as stream:
        records = [json.loads(line) for line in itertools.islice(stream, 400, 440)]
    subset = tmp_path / "subset.jsonl"
    subset.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")

    body, index = b"", []
    for text in ["00-database-info\n   This file was converted from the original database on FOLDOC.\n"] + \
            [r["text"] for r in records]:
        data = text.encode("utf-8")
        names = [text.split("\n")[0]] + [n for n in text.split("\n\n")[0].split("\n")[1:] if n and not n[0].isspace()]
        for name in names:
            index.append(f"{name.lower()}\t{_dictd_number(len(body))}\t{_dictd_number(len(data))}")
        body += data
    (tmp_path / "foldoc.dict.dz").write_bytes(gzip.compress(body))
    (tmp_path / "foldoc.index").write_text("\n".join(sorted(index)) + "\n", encoding="utf-8")

    from_jsonl = list(read_glossary(subset))
    from_dictd = list(read_glossary(tmp_path / "foldoc.index"))
    assert len(from_dictd) == 40
    assert [(a.title, a.lead, a.links) for a in from_dictd] == [(a.title, a.lead, a.links) for a in from_jsonl]
    assert any(a.links for a in from_dictd)


def test_bad_glossary_lines(tmp_path: Path, foldoc_path: Path) -> None:
    with gzip.open(foldoc_path, "rt", encoding="utf-8") as stream:
        first, second = (json.loads(line) for line in itertools.islice(stream, 2))
    path = tmp_path / "glossary.jsonl"
    second.pop("headword")
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 2: field 'headword': missing"):
        list(read_glossary(path))
    second.update(headword="!!!batch", text="!!!Batch\n\n")
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 2: field 'text': empty"):
        list(read_glossary(path))
    (tmp_path / "foldoc.index").write_text("!!!batch\tA\n", encoding="utf-8")
    (tmp_path / "foldoc.dict").write_text(first["text"], encoding="utf-8")
    with pytest.raises(DataError, match="line 1: field 'offset': expected 3 tab-separated columns"):
        list(read_glossary(tmp_path / "foldoc.index"))
