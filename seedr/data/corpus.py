"""Corpora in every format the field uses, read as a stream of ``Document`` and written as seedr JSONL.

Formats (``CORPUS_FORMATS``; ``format="auto"`` recognises each from its first line):

==================  =====================================================================================
``seedr``           JSON lines ``{"id", "title", "text"}`` — what seedr's stages write and read
``beir``            BEIR ``corpus.jsonl``: ``{"_id", "title", "text"}``
``msmarco-passage`` MS MARCO passage ``collection.tsv``: ``pid <TAB> passage``
``msmarco-doc``     MS MARCO document ``msmarco-docs.tsv``: ``docid <TAB> url <TAB> title <TAB> body``
``dpr``             DPR's ``psgs_w100.tsv``: header ``id <TAB> text <TAB> title`` (``seedr.data.qa``)
``articles``        structured article JSONL (the ``wiki/`` bundle), one document per article
``wikiextractor``   raw wikiextractor output (``<doc>`` files or ``--json``), one document per page
``glossary``        FOLDOC / Jargon File (JSONL ``{"headword", "text"}`` or a dictd ``.index``)
==================  =====================================================================================

An article becomes one document: its title, and its paragraphs (lead first) joined by newlines.

Tables are read by their columns, whatever ``format`` says (``seedr.data.tables``): parquet and Arrow
files, ``datasets`` folders (``save_to_disk``) and, from Python, rows in memory (a ``datasets.Dataset``, a
pandas ``DataFrame``, a list of dicts), with the columns of ``CORPUS_COLUMNS`` (BEIR's: ``_id``,
``title``, ``text``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seedr.data.articles import read_articles, read_wikiextractor
from seedr.data.glossary import read_glossary
from seedr.data.inputs import Inputs, input_sources
from seedr.data.qa import read_dpr_passages
from seedr.data.records import Article, Document
from seedr.data.tables import Table, is_table, open_table
from seedr.io import DataError, iter_jsonl, iter_lines, parse_json, require, unique_id, write_jsonl
from seedr.registry import Registry

#: ``(line, document)``; the line is ``None`` for formats whose reader checks its records itself.
NumberedDocuments = Iterator[tuple[int | None, Document]]


@dataclass(frozen=True)
class CorpusFormat:
    """A corpus format: how to recognise a file of it, and how to read it.

    ``read_articles`` is set for formats with article structure (paragraphs, sections, links), which
    the pair builders (ICT, BFS, WLP) and link recovery use.
    """

    sniff: Callable[[Path, str], bool]  # (path, first non-blank line) -> is it this format?
    read: Callable[[Path], NumberedDocuments]
    read_articles: Callable[[Path], Iterator[Article]] | None = None
    id_field: str = "id"  # what the format calls the id and the text, for error messages
    text_field: str = "text"
    # how many documents a file holds at most, counted cheaply (for progress bars); None: it cannot tell
    count: Callable[[Path], int | None] | None = None


CORPUS_FORMATS: Registry[CorpusFormat] = Registry("corpus format")


def _first_json(first_line: str) -> dict:
    """The first line as a JSON object, ``{}`` for anything else (so that its format is told from its keys);
    malformed or too deeply nested JSON is read, and refused, by the format's own reader."""
    try:
        record = json.loads(first_line)
    except (json.JSONDecodeError, RecursionError):
        return {}
    return record if isinstance(record, dict) else {}


def _document(record: Mapping[str, Any], path: str | os.PathLike, line: int, id_field: str,
              title_field: str | None = "title", text_field: str = "text") -> Document:
    """A document from a record of named fields (a JSON object, a table's row); the title is optional."""
    doc_id = require(record, id_field, path, line)
    title = ("" if title_field is None or record.get(title_field) is None
             else require(record, title_field, path, line, allow_empty=True))
    text = require(record, text_field, path, line, allow_empty=True)
    return Document(id=doc_id, text=text, title=title)


def _read_jsonl(path: Path, id_field: str) -> NumberedDocuments:
    for line, record in iter_jsonl(path):
        yield line, _document(record, path, line, id_field)


def _count_lines(path: Path) -> int:
    """The non-blank lines of a file: its documents, in a format of one document per line."""
    return sum(1 for _, line in iter_lines(path) if line.strip())  # a damaged file: a DataError naming it


def _read_tsv(path: Path, columns: tuple[str, ...], build: Callable[[list[str]], Document]) -> NumberedDocuments:
    for line, text in iter_lines(path):
        if not text.strip():
            continue
        values = text.split("\t")
        if len(values) != len(columns):
            described = ", ".join(columns)
            raise DataError(path, f"expected {len(columns)} tab-separated columns ({described}), found {len(values)}",
                            line=line, field=columns[len(values)] if len(values) < len(columns) else columns[-1])
        if not values[0].strip():
            raise DataError(path, "missing", line=line, field=columns[0])
        yield line, build(values)


def article_document(article: Article) -> Document:
    """An article as one document: its title, and its paragraphs (lead first) joined by newlines."""
    return Document(id=article.id, text="\n".join(article.paragraphs), title=article.title)


def _from_articles(reader: Callable[[Path], Iterator[Article]]) -> Callable[[Path], NumberedDocuments]:
    def read(path: Path) -> NumberedDocuments:
        for article in reader(path):
            yield None, article_document(article)

    return read


CORPUS_FORMATS.register("seedr")(CorpusFormat(
    sniff=lambda path, first: {"id", "text"} <= _first_json(first).keys() and "url" not in _first_json(first),
    read=lambda path: _read_jsonl(path, "id"),
    count=_count_lines,
))
CORPUS_FORMATS.register("beir")(CorpusFormat(
    sniff=lambda path, first: "_id" in _first_json(first),
    read=lambda path: _read_jsonl(path, "_id"),
    id_field="_id",
    count=_count_lines,
))
CORPUS_FORMATS.register("msmarco-passage")(CorpusFormat(
    sniff=lambda path, first: first.count("\t") == 1,
    read=lambda path: _read_tsv(path, ("pid", "passage"), lambda v: Document(id=v[0].strip(), text=v[1])),
    id_field="pid",
    text_field="passage",
    count=_count_lines,
))
CORPUS_FORMATS.register("msmarco-doc")(CorpusFormat(
    sniff=lambda path, first: first.count("\t") == 3,
    read=lambda path: _read_tsv(path, ("docid", "url", "title", "body"),
                                lambda v: Document(id=v[0].strip(), text=v[3], title=v[2])),
    id_field="docid",
    text_field="body",
    count=_count_lines,
))
CORPUS_FORMATS.register("dpr")(CorpusFormat(
    sniff=lambda path, first: sorted(first.split("\t")) == ["id", "text", "title"],
    read=lambda path: ((None, passage) for passage in read_dpr_passages(path)),
))
CORPUS_FORMATS.register("articles")(CorpusFormat(
    sniff=lambda path, first: bool({"lead", "sections"} & _first_json(first).keys()),
    read=_from_articles(read_articles),
    read_articles=read_articles,
    count=_count_lines,
))
CORPUS_FORMATS.register("wikiextractor")(CorpusFormat(
    sniff=lambda path, first: first.lstrip().startswith("<doc") or {"url", "text"} <= _first_json(first).keys(),
    read=_from_articles(read_wikiextractor),
    read_articles=read_wikiextractor,
))
CORPUS_FORMATS.register("glossary")(CorpusFormat(
    sniff=lambda path, first: path.suffix == ".index" or "headword" in _first_json(first),
    read=_from_articles(read_glossary),
    read_articles=read_glossary,
))


def detect_format(path: str | os.PathLike) -> str:
    """The name of the corpus format of ``path``, recognised from its name and first non-blank line."""
    path = Path(path)
    line, first = (None, "") if path.suffix == ".index" else next(
        ((number, text) for number, text in iter_lines(path) if text.strip()), (None, None))
    if first is None:
        raise DataError(path, "empty file: no corpus to read")
    matches = [name for name in CORPUS_FORMATS if CORPUS_FORMATS.get(name).sniff(path, first)]
    if not matches and first.lstrip().startswith("{"):
        parse_json(first, path, line)  # a JSON line that does not parse: say why (malformed, nested too deeply)
    if len(matches) != 1:
        found = f"it looks like {' or '.join(matches)}" if matches else "it fits none of them"
        raise DataError(path, f"cannot tell the corpus format ({found}); name it: one of "
                        f"{', '.join(CORPUS_FORMATS.names())}", line=line)
    return matches[0]


def _resolve_format(path: Path, format: str) -> str:
    name = detect_format(path) if format == "auto" else format
    CORPUS_FORMATS.get(name)  # an unknown name is a KeyError listing the valid ones
    return name


#: The columns of a corpus table (``seedr.data.tables``: parquet, Arrow, ``datasets`` folders, rows in
#: memory), each field by the names it goes by, BEIR's first. The title is optional.
CORPUS_COLUMNS = {"id": ("_id", "id", "docid", "doc_id"), "title": ("title",), "text": ("text",)}


def _table_format(source: Path | Table) -> CorpusFormat:
    """How to read one corpus table: by its columns, found once (a missing id or text column is a
    ``DataError`` naming the table, the field and the columns it has)."""
    table = open_table(source, "corpus")
    id_field, text_field = table.column(CORPUS_COLUMNS["id"]), table.column(CORPUS_COLUMNS["text"])
    title_field = table.column(CORPUS_COLUMNS["title"], required=False)
    wanted = [name for name in (id_field, title_field, text_field) if name]

    def read(_: Path | Table) -> NumberedDocuments:
        for line, row in table.rows(wanted):
            yield line, _document(row, table.where, line, id_field, title_field, text_field)

    return CorpusFormat(sniff=lambda path, first: False, read=read, id_field=id_field, text_field=text_field,
                        count=lambda _: table.count())


def _source_format(source: Path | Table, format: str) -> CorpusFormat:
    """How to read one source of a corpus: a table by its columns, whatever ``format`` says; a text file
    in ``format`` (``"auto"``: recognised from its first line)."""
    return _table_format(source) if is_table(source) else CORPUS_FORMATS.get(_resolve_format(source, format))


def read_corpus(path: Inputs, format: str = "auto", skip_empty: bool = False,
                check_duplicates: bool = True) -> Iterator[Document]:
    """Stream the documents of a corpus in any format of ``CORPUS_FORMATS`` (compression transparent), or
    of a table (``CORPUS_COLUMNS``).

    Args:
        path: a file, or several files, quoted globs or folders (a folder of shards, or one made by
            ``seedr prepare``: ``seedr.data.inputs.input_files``), read one after another; parquet and
            Arrow files and ``datasets`` folders are tables. From Python, rows in memory instead: a
            ``datasets.Dataset`` (or ``DatasetDict``: its ``corpus`` split, or its only one), a pandas
            ``DataFrame``, a list of dicts (``seedr.data.inputs.input_sources``; a one-shot iterator is
            read once).
        format: a name from ``CORPUS_FORMATS``, or ``"auto"`` to recognise it from each file (tables are
            read by their columns, whatever it says).
        skip_empty: skip documents with neither title nor text instead of raising.
        check_duplicates: raise on an id seen earlier, in any of the files (keeps one string per
            document in memory).

    Raises:
        DataError: naming the file (or ``<list>``, ``<Dataset>`` ...), line (a table's row, from 1) and
            field of malformed JSON, a missing id, an empty document, a repeated id, a wrong number of TSV
            columns, bytes that are not UTF-8, a table without an id or text column, a damaged table file.

    Example:
        >>> docs = read_corpus("../shared/data/scifact/corpus.jsonl")   # BEIR, recognised
        >>> next(docs).id
        '4983'
        >>> next(read_corpus([{"_id": "7", "title": "", "text": "Anarchism is a political philosophy."}])).id
        '7'
    """
    seen: dict[str, int] = {}
    for file in input_sources(path, "corpus"):
        corpus_format = _source_format(file, format)
        for line, document in corpus_format.read(file):
            if not document.text.strip() and not document.title.strip():
                if skip_empty:
                    continue
                raise DataError(file, "empty: the document has neither text nor title", line=line,
                                field=corpus_format.text_field)
            if check_duplicates:
                unique_id(seen, document.id, file, line, field=corpus_format.id_field)
            yield document


def read_corpus_articles(path: Inputs, format: str = "auto") -> Iterator[Article]:
    """Stream a corpus (files, globs, folders or rows, as ``read_corpus``) as articles: structured formats
    keep their sections and links; a flat document becomes an article whose lead is its text (one
    paragraph)."""
    for file in input_sources(path, "corpus"):
        reader = _source_format(file, format).read_articles
        if reader is not None:
            yield from reader(file)
            continue
        for document in read_corpus(file, format):
            yield Article(id=document.id, title=document.title,
                          lead=(document.text,) if document.text.strip() else ())


def count_documents(path: Inputs, format: str = "auto") -> int | None:
    """How many documents ``read_corpus(path, format)`` yields at most (the total of a progress bar, for
    an ETA), counted from the lines of formats with one document per line and the rows of tables;
    ``None`` for other formats (and for rows from a one-shot iterator)."""
    total = 0
    for file in input_sources(path, "corpus"):
        count = _source_format(file, format).count
        counted = None if count is None else count(file)
        if counted is None:
            return None
        total += counted
    return total


def write_corpus(path: str | os.PathLike, documents: Iterable[Document]) -> int:
    """Write documents as seedr corpus JSONL (``{"id", "title", "text"}``), atomically; returns the count."""
    return write_jsonl(path, ({"id": d.id, "title": d.title, "text": d.text} for d in documents))


def materialize_corpus(corpus: Inputs, path: str | os.PathLike, format: str = "auto",
                       skip_empty: bool = False) -> Path:
    """Write a corpus given in any form ``read_corpus`` takes — a ``datasets.Dataset``, a pandas
    ``DataFrame``, a list of dicts, parquet files ... — as one seedr corpus JSONL file at ``path``
    (atomically, checked as ``read_corpus`` checks it), for what needs a file: pre-training keys its token
    shards on the corpus files (``seedr.data.shards.source_fingerprint``). Returns ``path``.

    Example:
        >>> materialize_corpus(dataset, "runs/corpus.jsonl")  # doctest: +SKIP
        PosixPath('runs/corpus.jsonl')
    """
    write_corpus(path, read_corpus(corpus, format, skip_empty=skip_empty))
    return Path(path)


def load_corpus(path: Inputs, format: str = "auto") -> dict[str, Document]:
    """The whole corpus (files, globs, folders or rows, as ``read_corpus``) in memory, by id (duplicate ids are
    an error)."""
    return {document.id: document for document in read_corpus(path, format)}


__all__ = [
    "CORPUS_COLUMNS",
    "CORPUS_FORMATS",
    "CorpusFormat",
    "article_document",
    "count_documents",
    "detect_format",
    "load_corpus",
    "materialize_corpus",
    "read_corpus",
    "read_corpus_articles",
    "write_corpus",
]
