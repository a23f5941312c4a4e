"""Queries and relevance labels in the formats of the field, and few-shot query samples.

Queries: BEIR ``queries.jsonl`` (``{"_id", "text", ...}``) and MS MARCO / TREC DL topics (``qid<TAB>text``).
Qrels: BEIR ``qrels/*.tsv`` (``query-id<TAB>corpus-id<TAB>score`` after a header line) and TREC qrels
(``qid iteration docid relevance``, whitespace separated). Tables of either (``seedr.data.tables``: parquet
and Arrow files, ``datasets`` folders, and from Python a ``datasets.Dataset``, a pandas ``DataFrame`` or a
list of dicts) are read by their columns (``QUERY_COLUMNS``, ``QREL_COLUMNS``: BEIR's names, as its Hugging
Face data sets have them, or others'). Every reader names the file, line (a table's row) and field of bad
input; every writer is atomic.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any, Literal

from seedr.data.inputs import Inputs, input_sources
from seedr.data.records import Qrels
from seedr.data.tables import Table, is_table, open_table
from seedr.io import DataError, atomic_write, iter_jsonl, iter_lines, require, unique_id, write_jsonl
from seedr.registry import Registry

PathLike = str | os.PathLike

# A reader yields (line, qid, text) for queries, (line, qid, docid, relevance text) for qrels.
QueryLines = Iterator[tuple[int, str, str]]
QrelLines = Iterator[tuple[int, str, str, str]]

QUERY_FORMATS: Registry[Callable[[PathLike], QueryLines]] = Registry("query format")
QRELS_FORMATS: Registry[Callable[[PathLike], QrelLines]] = Registry("qrels format")
QRELS_WRITERS: Registry[Callable[[Qrels], Iterator[str]]] = Registry("qrels format")

# Column names used in error messages: BEIR's own header, and trec_eval's names for TREC qrels.
QREL_FIELDS = {"beir": ("query-id", "corpus-id", "score"), "trec": ("qid", "docid", "relevance")}
BEIR_QRELS_HEADER = "\t".join(QREL_FIELDS["beir"])
# What the id is called in each query format, for error messages.
QUERY_ID_FIELDS = {"beir": "_id", "tsv": "qid"}

#: The columns of a table of queries, each field by the names it goes by (BEIR's first).
QUERY_COLUMNS = {"id": ("_id", "id", "qid", "query_id", "query-id"), "text": ("text", "query")}
#: The columns of a table of qrels: BEIR's (its Hugging Face qrels), trec_eval's, ir_datasets'.
QREL_COLUMNS = {"query": ("query-id", "qid", "query_id"), "document": ("corpus-id", "docid", "doc_id", "corpus_id"),
                "relevance": ("score", "relevance")}


def _first_line(path: PathLike) -> tuple[int, str]:
    """The first non-blank line (number, text), for sniffing a file's format."""
    for number, text in iter_lines(path):
        if text.strip():
            return number, text
    raise DataError(path, "the file is empty")


def _resolve_format(path: PathLike, format: str, registry: Registry, sniff: Callable[[PathLike], str]) -> str:
    name = sniff(path) if format == "auto" else format
    registry.get(name)  # an unknown name is an error listing the valid ones
    return name


# ----------------------------------------------------------------------------------------------- queries


@QUERY_FORMATS.register("beir")
def _beir_query_lines(path: PathLike) -> QueryLines:
    for number, record in iter_jsonl(path):
        yield number, require(record, "_id", path, number), require(record, "text", path, number)


@QUERY_FORMATS.register("tsv")
def _tsv_query_lines(path: PathLike) -> QueryLines:
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        columns = line.split("\t")
        if len(columns) != 2:
            raise DataError(path, f"expected 2 tab-separated columns (qid, text), found {len(columns)}",
                            line=number)
        qid, text = (column.strip() for column in columns)
        if not qid:
            raise DataError(path, "empty", line=number, field="qid")
        if not text:
            raise DataError(path, "empty", line=number, field="text")
        yield number, qid, text


def _sniff_query_format(path: PathLike) -> str:
    # JSON lines open with an object; a TSV line never does (query ids are not JSON).
    return "beir" if _first_line(path)[1].lstrip().startswith("{") else "tsv"


def _table_query_lines(table: Table, id_field: str, text_field: str) -> QueryLines:
    for number, row in table.rows([id_field, text_field]):
        yield number, require(row, id_field, table.where, number), require(row, text_field, table.where, number)


def _query_lines(source: Path | Table, format: str) -> tuple[QueryLines, str]:
    """The ``(line, qid, text)`` of one source of queries, and what it calls the id: a table by its columns
    (``QUERY_COLUMNS``), whatever ``format`` says; a text file in ``format``."""
    if is_table(source):
        table = open_table(source, "queries")
        id_field, text_field = table.column(QUERY_COLUMNS["id"]), table.column(QUERY_COLUMNS["text"])
        return _table_query_lines(table, id_field, text_field), id_field
    name = _resolve_format(source, format, QUERY_FORMATS, _sniff_query_format)
    return QUERY_FORMATS.get(name)(source), QUERY_ID_FIELDS[name]


def read_queries(path: Inputs, format: Literal["auto", "beir", "tsv"] = "auto") -> dict[str, str]:
    """Read queries as ``{qid: text}``, in file order.

    ``path``: a file, or several files, quoted globs or folders (a BEIR folder or one made by
    ``seedr prepare`` stands for its ``queries.jsonl``: ``seedr.data.inputs.input_files``), read one
    after another; an id is unique across all of them. Parquet and Arrow files and ``datasets`` folders
    are tables, read by their columns (``QUERY_COLUMNS``: ``_id``/``id``/``qid``, ``text``/``query``; a
    ``DatasetDict``'s ``queries`` split, or its only one). From Python, rows in memory instead: a
    ``datasets.Dataset``, a pandas ``DataFrame``, a list of dicts (``seedr.data.inputs.input_sources``).

    ``format``: ``"beir"`` (``queries.jsonl``: ``_id``, ``text``; other keys such as ``metadata`` are
    ignored), ``"tsv"`` (MS MARCO ``queries.*.tsv``, TREC DL topics: ``qid<TAB>text``) or ``"auto"``
    (a first line opening a JSON object means BEIR); tables are read by their columns whatever it says. A
    missing id, an empty text, a duplicate id, a wrong column count or a table without an id or text
    column raises a ``DataError`` naming the file (or ``<list>``, ``<Dataset>`` ...), line (row) and field.

    Example:
        >>> queries = read_queries("../shared/data/scifact/queries.jsonl")  # doctest: +SKIP
        >>> queries["0"]  # doctest: +SKIP
        '0-dimensional biomaterials lack inductive properties.'
    """
    queries: dict[str, str] = {}
    lines_of_ids: dict[str, int] = {}
    for file in input_sources(path, "queries"):
        lines, id_field = _query_lines(file, format)
        for number, qid, text in lines:
            queries[unique_id(lines_of_ids, qid, file, number, field=id_field)] = text
    return queries


def write_queries(path: PathLike, queries: Mapping[str, str]) -> int:
    """Atomically write ``{qid: text}`` as BEIR ``queries.jsonl``; returns how many were written."""
    return write_jsonl(path, ({"_id": qid, "text": text} for qid, text in queries.items()))


# ------------------------------------------------------------------------------------------------- qrels


@QRELS_FORMATS.register("beir")
def _beir_qrel_lines(path: PathLike) -> QrelLines:
    header_seen = False
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        columns = line.split("\t")
        if len(columns) != 3:
            raise DataError(path, f"expected 3 tab-separated columns (query-id, corpus-id, score), "
                            f"found {len(columns)}", line=number)
        if not header_seen:
            header_seen = True
            # BEIR files open with "query-id corpus-id score"; a header is a first row whose score column
            # is not a number at all, so a header-less file loses no judgement (and "1.5" is an error).
            if not _is_number(columns[2]):
                continue
        yield number, columns[0].strip(), columns[1].strip(), columns[2].strip()


@QRELS_FORMATS.register("trec")
def _trec_qrel_lines(path: PathLike) -> QrelLines:
    for number, line in iter_lines(path):
        columns = line.split()
        if not columns:
            continue
        if len(columns) != 4:
            raise DataError(path, f"expected 4 whitespace-separated columns (qid, iteration, docid, "
                            f"relevance), found {len(columns)}", line=number)
        qid, _iteration, docid, relevance = columns
        yield number, qid, docid, relevance


def _is_integer(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _sniff_qrels_format(path: PathLike) -> str:
    number, line = _first_line(path)
    if len(line.split("\t")) == 3:
        return "beir"
    if len(line.split()) == 4:
        return "trec"
    raise DataError(path, "cannot tell the qrels format: expected BEIR (query-id, corpus-id, score; "
                    "tab-separated) or TREC (qid, iteration, docid, relevance) columns", line=number)


def _as_lookup(ids: Collection[str] | None) -> Collection[str] | None:
    """Membership in O(1): sets and mappings (a corpus dict) as they are, anything else as a set."""
    return ids if ids is None or isinstance(ids, AbstractSet | Mapping) else set(ids)


def _relevance_text(value: Any) -> str:
    """A table's relevance as the text files have it: an integral float (a column with gaps) as an int."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _table_qrel_lines(table: Table, fields: tuple[str, str, str]) -> QrelLines:
    qid_field, docid_field, relevance_field = fields
    for number, row in table.rows(fields):
        yield (number, require(row, qid_field, table.where, number), require(row, docid_field, table.where, number),
               _relevance_text(require(row, relevance_field, table.where, number, kind=(int, float, str))))


def _qrel_lines(source: Any, format: str) -> tuple[QrelLines, tuple[str, str, str], str | os.PathLike]:
    """The ``(line, qid, docid, relevance)`` of qrels, the names of their fields, and what errors name: a
    table by its columns (``QREL_COLUMNS``), whatever ``format`` says; a text file in ``format``."""
    if isinstance(source, str | os.PathLike) and not is_table(source):
        name = _resolve_format(source, format, QRELS_FORMATS, _sniff_qrels_format)
        return QRELS_FORMATS.get(name)(source), QREL_FIELDS[name], source
    table = open_table(source, "qrels")  # a table file or folder, or rows in memory
    fields = tuple(table.column(names) for names in QREL_COLUMNS.values())
    return _table_qrel_lines(table, fields), fields, table.where


def read_qrels(path: PathLike | Inputs, format: Literal["auto", "beir", "trec"] = "auto",
               queries: Collection[str] | None = None, documents: Collection[str] | None = None) -> Qrels:
    """Read relevance judgements as ``{qid: {docid: relevance}}``.

    ``path``: a file; or a table, read by its columns (``QREL_COLUMNS``: BEIR's ``query-id``,
    ``corpus-id``, ``score`` as its Hugging Face qrels have them, or ``qid``, ``docid``, ``relevance``): a
    parquet or Arrow file, a ``datasets`` folder (a ``DatasetDict`` of several splits, such as BEIR's
    train and test, is an error naming them: give the split's folder), or from Python rows in memory (a
    ``datasets.Dataset``, a pandas ``DataFrame``, a list of dicts).

    ``format``: ``"beir"`` (``query-id<TAB>corpus-id<TAB>score`` after a header line), ``"trec"``
    (``qid iteration docid relevance``, the iteration column is ignored as trec_eval does) or ``"auto"``
    (3 tab-separated columns mean BEIR, 4 columns TREC); tables are read by their columns whatever it
    says. Judgements of 0 (and negative TREC grades) are kept: they mark judged non-relevant documents.
    When ``queries`` / ``documents`` are given, a judgement naming an unknown query or document is an
    error, as are a non-integer relevance and one (qid, docid) pair judged twice with different labels.

    Example:
        >>> qrels = read_qrels("../shared/data/scifact/qrels/test.tsv")  # doctest: +SKIP
        >>> qrels["1"]  # doctest: +SKIP
        {'31715818': 1}
    """
    lines, (qid_field, docid_field, relevance_field), where = _qrel_lines(path, format)
    known_queries, known_documents = _as_lookup(queries), _as_lookup(documents)
    qrels: Qrels = {}
    for number, qid, docid, relevance_text in lines:
        if not qid:
            raise DataError(where, "empty", line=number, field=qid_field)
        if not docid:
            raise DataError(where, "empty", line=number, field=docid_field)
        if not _is_integer(relevance_text):
            raise DataError(where, f"relevance must be an integer, got {relevance_text!r}", line=number,
                            field=relevance_field)
        if known_queries is not None and qid not in known_queries:
            raise DataError(where, f"unknown query {qid!r}", line=number, field=qid_field)
        if known_documents is not None and docid not in known_documents:
            raise DataError(where, f"unknown document {docid!r}", line=number, field=docid_field)
        relevance = int(relevance_text)
        judged = qrels.setdefault(qid, {})
        if judged.get(docid, relevance) != relevance:
            raise DataError(where, f"({qid!r}, {docid!r}) is judged {judged[docid]} earlier and {relevance} "
                            "here", line=number, field=relevance_field)
        judged[docid] = relevance
    return qrels


def _check_ids(qrels: Qrels, forbidden: Callable[[str], bool], what: str) -> None:
    for qid, judged in qrels.items():
        for identifier in (qid, *judged):
            if not identifier or forbidden(identifier):
                raise ValueError(f"id {identifier!r} cannot be written to {what}")


@QRELS_WRITERS.register("trec")
def _trec_qrels_text(qrels: Qrels) -> Iterator[str]:
    _check_ids(qrels, lambda identifier: any(c.isspace() for c in identifier), "TREC qrels (whitespace)")
    for qid, judged in qrels.items():
        for docid, relevance in judged.items():
            yield f"{qid} 0 {docid} {relevance}\n"


@QRELS_WRITERS.register("beir")
def _beir_qrels_text(qrels: Qrels) -> Iterator[str]:
    _check_ids(qrels, lambda identifier: "\t" in identifier or "\n" in identifier, "BEIR qrels (tab/newline)")
    yield BEIR_QRELS_HEADER + "\n"
    for qid, judged in qrels.items():
        for docid, relevance in judged.items():
            yield f"{qid}\t{docid}\t{relevance}\n"


def write_qrels(path: PathLike, qrels: Qrels, format: Literal["trec", "beir"] = "trec") -> None:
    """Atomically write qrels as TREC (``qid 0 docid relevance``) or BEIR (tab-separated, with header).

    An id that the format cannot hold (whitespace in TREC, a tab in BEIR) is a ``ValueError`` and
    nothing is written.
    """
    lines = list(QRELS_WRITERS.get(format)(qrels))  # validate every id before touching the file
    with atomic_write(path) as stream:
        stream.writelines(lines)


# ------------------------------------------------------------------------------------- few-shot samples


def sample_queries(qids: Iterable[str], fraction: float | None = None, count: int | None = None,
                   seed: int = 0) -> list[str]:
    """A seeded few-shot sample of query ids, by ``fraction`` or by ``count`` (exactly one of them).

    The few-shot settings of the papers: CPDAE fine-tunes on 0.1k / 1k / 10k MS MARCO training queries
    (Ma et al., CIKM 2022, sec. 4.4, Table 3, averaged over three seeds); Chang et al. (ICLR 2020,
    sec. 4.1) fine-tune on 1% / 5% / 80% of the question set. The ids are sorted, shuffled with ``seed``
    and a prefix is taken, so the sample does not depend on the order the ids come in, and for one seed
    the samples are nested: the 1k queries contain the 0.1k ones, as a learning curve needs. A fraction
    keeps at least one query (``round(fraction * n)`` otherwise). Returned in sample order.
    """
    ordered = sorted(qids)
    if len(set(ordered)) != len(ordered):
        raise ValueError("sample_queries: the query ids contain duplicates")
    if (fraction is None) == (count is None):
        raise ValueError("sample_queries: give exactly one of fraction= or count=")
    if fraction is not None:
        if not 0 < fraction <= 1:
            raise ValueError(f"sample_queries: fraction must be in (0, 1], got {fraction}")
        count = max(1, round(fraction * len(ordered)))
    if not 0 <= count <= len(ordered):
        raise ValueError(f"sample_queries: cannot draw {count} of {len(ordered)} queries")
    random.Random(seed).shuffle(ordered)
    return ordered[:count]


__all__ = [
    "BEIR_QRELS_HEADER",
    "QREL_COLUMNS",
    "QRELS_FORMATS",
    "QRELS_WRITERS",
    "QUERY_COLUMNS",
    "QUERY_FORMATS",
    "read_qrels",
    "read_queries",
    "sample_queries",
    "write_qrels",
    "write_queries",
]
