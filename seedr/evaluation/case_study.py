"""A side-by-side case study of the queries on which two retrieval systems disagree (SEED-Encoder, Lu
et al., EMNLP 2021, §4.6.2 "Case Study" and Table 5: queries SEED-Encoder wins over RoBERTa, each with
both models' first-ranked documents and their MRR@100).

On the same judged queries, a query is a *win* of system A over system B when A ranks a relevant
document first and B does not. The further down B ranks its first relevant document (not retrieved at
all: furthest), the larger the disagreement; wins are ordered by it, ties by query id, so the table is
the same on every run. Both directions are listed, so that a study never shows only one model's good
side. ``case_study`` computes the wins as a JSON-able record (what an experiment's ``results.json``
stores); ``case_study_markdown`` renders it as Table 5: the query, each system's top document (title and
first words) marked relevant or not, and each system's rank of its first relevant document.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from seedr.data.records import Document, Qrels, Run
from seedr.data.runs import rank_documents

#: Table 5 shows a document's title and its opening (about two lines); this many words of its text.
SNIPPET_WORDS = 30
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")


def first_relevant_rank(scores: Mapping[str, float], relevant: set[str]) -> int | None:
    """The 1-based rank (seedr's rank order: score descending, then document id) of the first relevant
    document of one query's run, or None when the run holds none."""
    for rank, (document, _) in enumerate(rank_documents(dict(scores)), start=1):
        if document in relevant:
            return rank
    return None


def _top_document(scores: Mapping[str, float], relevant: set[str], documents: Mapping[str, Document],
                  words: int) -> dict[str, Any] | None:
    if not scores:
        return None
    document_id = rank_documents(dict(scores))[0][0]
    if document_id not in documents:
        raise ValueError(f"the run's top document {document_id!r} is not in the corpus given")
    document = documents[document_id]
    text = document.text.split()
    snippet = " ".join(text[:words]) + (" …" if len(text) > words else "")
    return {"id": document_id, "title": document.title, "snippet": snippet,
            "relevant": document_id in relevant}


def case_study(runs: Mapping[str, Run], qrels: Qrels, queries: Mapping[str, str],
               documents: Mapping[str, Document], count: int = 5,
               words: int = SNIPPET_WORDS) -> dict[str, Any]:
    """The queries on which two systems disagree (Table 5), both directions.

    Args:
        runs: exactly two systems' runs (``{name: {qid: {docid: score}}}``) on the same queries.
        qrels: the judgements; a document is relevant when its grade is > 0. Queries without a relevant
            document cannot be won and are left out.
        queries: query texts by id (every judged query's); documents: the corpus by id (every top document).
        count: wins shown per direction (the largest disagreements).
        words: words of each top document's text shown.

    Returns:
        ``{"systems": [a, b], "judged_queries": n, "wins": {a: {"total": wins of a over b, "cases":
        [...]}, b: {...}}}``; a case is ``{"query_id", "query", "first_relevant": {system: rank or None},
        "top": {system: {"id", "title", "snippet", "relevant"} or None (nothing retrieved)}}``.
    """
    if len(runs) != 2:
        raise ValueError(f"a case study compares two systems, got {len(runs)}: {sorted(runs)}")
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    systems = list(runs)
    relevant_by_query = {qid: {doc for doc, grade in judgements.items() if grade > 0}
                         for qid, judgements in qrels.items()}
    judged = {qid: relevant for qid, relevant in relevant_by_query.items() if relevant}
    missing = sorted(set(judged) - set(queries))
    if missing:
        raise ValueError(f"{len(missing)} judged queries have no text, e.g. {missing[0]!r}")
    ranks = {qid: {system: first_relevant_rank(runs[system].get(qid, {}), relevant) for system in systems}
             for qid, relevant in judged.items()}
    wins = {}
    for system, other in (systems, systems[::-1]):
        won = [qid for qid, rank in ranks.items() if rank[system] == 1 and rank[other] != 1]
        # the larger the other's rank of its first relevant document, the larger the disagreement
        won.sort(key=lambda qid: (-(math.inf if ranks[qid][other] is None else ranks[qid][other]), qid))
        cases = [{"query_id": qid, "query": queries[qid], "first_relevant": ranks[qid],
                  "top": {name: _top_document(runs[name].get(qid, {}), judged[qid], documents, words)
                          for name in systems}}
                 for qid in won[:count]]
        wins[system] = {"total": len(won), "cases": cases}
    return {"systems": systems, "judged_queries": len(judged), "wins": wins}


def _cell(text: str) -> str:
    """``text`` as literal Markdown inside one table cell: one line, its special characters escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(text.split()))


def _document_cell(top: dict[str, Any] | None) -> str:
    if top is None:
        return "(nothing retrieved)"
    mark = "✓ relevant" if top["relevant"] else "✗ not relevant"
    title = f"**{_cell(top['title'])}** " if top["title"].strip() else ""
    return f"{mark}: {title}{_cell(top['snippet'])} ({_cell(top['id'])})"


def case_study_markdown(study: dict[str, Any], heading_level: int = 4) -> str:
    """Table 5 from a ``case_study`` record: one table per direction, largest disagreements first."""
    systems: Sequence[str] = study["systems"]
    hashes = "#" * heading_level
    header = ("| query | " + " | ".join(f"{_cell(system)}: top document" for system in systems) + " | "
              + " | ".join(f"{_cell(system)}: first relevant" for system in systems) + " |")
    lines = []
    for system, other in (systems, systems[::-1]):
        wins = study["wins"][system]
        shown = (f"; the {len(wins['cases'])} with {_cell(other)}'s first relevant document ranked lowest:"
                 if wins["cases"] else ".")
        lines += [f"{hashes} {_cell(system)} ranks a relevant document first, {_cell(other)} does not", "",
                  f"{wins['total']} of {study['judged_queries']} judged queries{shown}", ""]
        if not wins["cases"]:
            continue
        lines += [header, "|---|" + "---|" * len(systems) + "---:|" * len(systems)]
        for case in wins["cases"]:
            ranks = [str(case["first_relevant"][name] or "not retrieved") for name in systems]  # ranks start at 1
            lines.append(f"| {_cell(case['query'])} ({_cell(case['query_id'])}) | "
                         + " | ".join(_document_cell(case["top"][name]) for name in systems) + " | "
                         + " | ".join(ranks) + " |")
        lines.append("")
    return "\n".join(lines)


__all__ = ["SNIPPET_WORDS", "case_study", "case_study_markdown", "first_relevant_rank"]
