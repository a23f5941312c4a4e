"""Structured articles (the wiki/ bundle) and raw wikiextractor output, on the real shards."""

from __future__ import annotations

import html
import inspect
import itertools
import json
import lzma
import tracemalloc
from pathlib import Path

import pytest

from seedr.data.articles import read_articles, read_wikiextractor
from seedr.data.records import Article
from seedr.io import DataError

#: Articles in enwiki-2015-00.jsonl.xz, counted once (the 8 shards hold 30,522 in all).
SHARD_00_ARTICLES = 3221


@pytest.fixture(scope="module")
def shard_head(wiki_shard: Path) -> list[Article]:
    return list(itertools.islice(read_articles(wiki_shard), 300))


@pytest.fixture(scope="module")
def raw_lines(wiki_shard: Path) -> list[str]:
    with lzma.open(wiki_shard, "rt", encoding="utf-8") as stream:
        return [line.rstrip("\n") for line in itertools.islice(stream, 3)]


def write_like_wikiextractor(path: Path, articles: list[Article], links: dict[str, list[str]] | None = None) -> None:
    """Lay articles out exactly as attardi/wikiextractor writes a <doc> file (extract.py: title line, blank
    line, one paragraph per line, headings with "." appended, HTML-escaped text, optional <a href> links)."""
    with path.open("w", encoding="utf-8") as stream:
        for article in articles:
            lines = [html.escape(p, quote=False) for p in article.lead]
            for section in article.sections:
                heading = section.heading if section.heading[-1:] in ("!", "?") else section.heading + "."
                lines += [html.escape(heading, quote=False)] + [html.escape(p, quote=False) for p in section.paragraphs]
            for target in (links or {}).get(article.title, []):
                anchor = f'<a href="{target.replace(" ", "%20")}">{target}</a>'
                lines[0] = lines[0].replace(target, anchor, 1)
            stream.write(f'<doc id="{article.id}" url="https://en.wikipedia.org/wiki?curid={article.id}" '
                         f'title="{article.title}">\n{article.title}\n\n' + "\n".join(lines) + "\n\n</doc>\n")


def test_whole_shard_streams_with_exact_count(wiki_shard: Path) -> None:
    reader = read_articles(wiki_shard)
    assert inspect.isgenerator(reader)
    tracemalloc.start()
    first = next(reader)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # the first article arrives with the xz decoder's 9 MiB and a sliver of the 53 MB shard in memory
    assert peak < 12_000_000
    assert (first.id, first.title) == ("12", "Anarchism")
    assert first.lead[0].startswith("Anarchism is a political philosophy")
    assert first.sections[0].heading == "Etymology and terminology"
    assert sum(1 for _ in reader) + 1 == SHARD_00_ARTICLES  # + the first article, read above


def test_articles_keep_structure(shard_head: list[Article]) -> None:
    assert all(isinstance(a.id, str) and a.title and a.paragraphs for a in shard_head)
    autism = next(a for a in shard_head if a.title == "Autism")
    assert autism.id == "25" and len(autism.lead) == 4
    assert [s.heading for s in autism.sections[:3]] == ["Characteristics", "Social development", "Communication"]
    assert autism.paragraphs[:4] == autism.lead


@pytest.mark.parametrize(("change", "field", "message"), [
    (lambda record: record.pop("id"), "id", "missing"),
    (lambda record: record.pop("title"), "title", "missing"),
    (lambda record: record.update(lead=[], sections=[]), "lead", "empty"),
    (lambda record: record.update(lead="one string"), "lead", "list of strings"),
    (lambda record: record.update(sections=[{"heading": "History", "paragraphs": [3]}]), "sections[0].paragraphs",
     "list of strings"),
])
def test_bad_article_names_file_line_and_field(tmp_path: Path, raw_lines: list[str], change, field: str,
                                               message: str) -> None:
    record = json.loads(raw_lines[1])
    change(record)
    path = tmp_path / "articles.jsonl"
    path.write_text(raw_lines[0] + "\n" + json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as error:
        list(read_articles(path))
    assert (error.value.path, error.value.line, error.value.field) == (str(path), 2, field)
    assert message in str(error.value) and str(path) in str(error.value) and "line 2" in str(error.value)


def test_duplicate_article_id_and_malformed_json(tmp_path: Path, raw_lines: list[str]) -> None:
    path = tmp_path / "articles.jsonl"
    path.write_text("\n".join([raw_lines[0], raw_lines[1], raw_lines[0]]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"line 3: field 'id': duplicate id '12' \(first on line 1\)"):
        list(read_articles(path))
    path.write_text(raw_lines[0] + "\n" + raw_lines[1][:-20] + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 2: malformed JSON"):
        list(read_articles(path))


def test_wikiextractor_output_recovers_real_structure(tmp_path: Path, shard_head: list[Article]) -> None:
    path = tmp_path / "wiki_00"
    write_like_wikiextractor(path, shard_head)
    pages = {a.id: a for a in read_wikiextractor(path)}
    assert len(pages) == len(shard_head)
    headings = [(a.id, s.heading) for a in shard_head for s in a.sections]
    recovered = {(a.id, s.heading) for a in pages.values() for s in a.sections}
    # headings are recognised only by shape (short line ending in "."): measured 99.5% on the shard
    assert sum(h in recovered for h in headings) >= 0.99 * len(headings)
    assert sum(pages[a.id].lead == a.lead for a in shard_head) >= 0.97 * len(shard_head)
    assert sum(pages[a.id] == a for a in shard_head) >= 0.95 * len(shard_head)
    anarchism = pages["12"]
    assert anarchism.title == "Anarchism" and "Anarchism" not in anarchism.lead  # title line dropped
    assert anarchism.sections[0] == shard_head[0].sections[0]


def test_wikiextractor_links_escapes_json_and_empty_pages(tmp_path: Path, shard_head: list[Article]) -> None:
    anarchism = shard_head[0]
    path = tmp_path / "wiki_01"
    write_like_wikiextractor(path, [anarchism], links={"Anarchism": ["political philosophy", "anti-statism"]})
    with path.open("a", encoding="utf-8") as stream:  # wikiextractor writes stubs it could not render as empty pages
        stream.write('<doc id="5" url="https://en.wikipedia.org/wiki?curid=5" title="Stub &amp; Co">\n'
                     'Stub &amp; Co\n\n\n</doc>\n')
    (page,) = read_wikiextractor(path)
    assert page.links == ("Political philosophy", "Anti-statism")
    assert page.lead == anarchism.lead  # anchors replaced by their text
    with pytest.raises(DataError, match=r"line \d+: field .text.: empty"):
        list(read_wikiextractor(path, skip_empty=False))

    json_path = tmp_path / "wiki_02.json"
    text = "\n".join(anarchism.lead + (anarchism.sections[0].heading + ".",) + anarchism.sections[0].paragraphs)
    json_path.write_text(json.dumps({"id": "12", "revid": "1", "url": "u", "title": "Anarchism", "text": text}) + "\n")
    (page,) = read_wikiextractor(json_path)
    assert page.lead == anarchism.lead and page.sections[0] == anarchism.sections[0]


@pytest.mark.parametrize(("content", "line", "message"), [
    ('<doc id="1" url="u" title="Anarchism">\nAnarchism\n\nAnarchism holds the state to be undesirable, unnecessary, or harmful.\n', 1, "ends inside a <doc>"),
    ('Stray text\n<doc id="1" url="u" title="Anarchism">\nAnarchism\n\nAnarchism holds the state to be undesirable, unnecessary, or harmful.\n</doc>\n', 1, "text outside a <doc>"),
    ('<doc id="1" url="u" title="Anarchism">\nAnarchism\n\nAnarchism holds the state to be undesirable, unnecessary, or harmful.\n</doc>\n<doc id="1" url="u" title="Autism">\nAutism\n\nAutism is a neurodevelopmental disorder.\n</doc>\n', 6,
     "duplicate id '1'"),
    ('<doc url="u" title="Anarchism">\nAnarchism\n\nAnarchism holds the state to be undesirable, unnecessary, or harmful.\n</doc>\n', 1, "field 'id': missing"),
])
def test_bad_wikiextractor_files(tmp_path: Path, content: str, line: int, message: str) -> None:
    path = tmp_path / "wiki_bad"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataError, match=message) as error:
        list(read_wikiextractor(path))
    assert error.value.line == line and error.value.path == str(path)
