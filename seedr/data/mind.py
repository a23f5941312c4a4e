"""MIND, the Microsoft News Dataset (Wu et al., ACL 2020): news articles and impression logs.

SEED-Encoder (Lu et al., EMNLP 2021, sec. 4.4 and appendix A.1) reranks the candidates of each MIND
impression with a Siamese model: the user is the concatenation of the titles of their clicked history,
a candidate the concatenation of its title and abstract (``NewsItem.as_document``).

File formats (msnews.github.io, "MIND dataset format"), tab-separated, no header:

- ``news.tsv``: news id, category, subcategory, title, abstract, URL, title entities, abstract entities
  (the entities are JSON lists of Wikidata links; empty in some rows).
- ``behaviors.tsv``: impression id, user id, time (``MM/DD/YYYY HH:MM:SS AM/PM``), history (clicked news
  ids, space-separated, oldest first, possibly empty), impressions (``N123-1 N456-0``: news id and click
  label; the test set has no labels: ``N123 N456``).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from seedr.data.records import Document
from seedr.io import DataError, iter_lines, parse_json, unique_id

PathLike = str | os.PathLike

NEWS_COLUMNS = ("news_id", "category", "subcategory", "title", "abstract", "url", "title_entities",
                "abstract_entities")
BEHAVIOR_COLUMNS = ("impression_id", "user_id", "time", "history", "impressions")
TIME_FORMAT = "%m/%d/%Y %I:%M:%S %p"


@dataclass(frozen=True, slots=True)
class NewsItem:
    id: str
    category: str
    subcategory: str
    title: str
    abstract: str
    url: str
    title_entities: list[dict[str, Any]]
    abstract_entities: list[dict[str, Any]]

    def as_document(self) -> Document:
        """The candidate side of SEED-Encoder's MIND protocol: title and abstract ("snippet")."""
        return Document(self.id, self.abstract, self.title)


@dataclass(frozen=True, slots=True)
class Impression:
    """One impression: the news shown to ``user`` at ``time`` and, outside the test set, which were
    clicked (``labels[k]`` is 1 if ``candidates[k]`` was clicked, else 0; ``None`` when unlabelled)."""

    id: str
    user: str
    time: datetime
    history: list[str]
    candidates: list[str]
    labels: list[int] | None


def _columns(path: PathLike, number: int, line: str, names: tuple[str, ...]) -> list[str]:
    columns = line.split("\t")
    if len(columns) != len(names):
        raise DataError(path, f"expected {len(names)} tab-separated columns ({', '.join(names)}), "
                        f"found {len(columns)}", line=number)
    return columns


def _entities(path: PathLike, number: int, field: str, text: str) -> list[dict[str, Any]]:
    if not text.strip():
        return []
    try:
        entities = parse_json(text, path, number)
    except DataError as error:
        raise DataError(path, error.reason, line=number, field=field) from None
    if not isinstance(entities, list) or not all(isinstance(entity, dict) for entity in entities):
        raise DataError(path, "expected a JSON list of entity objects", line=number, field=field)
    return entities


def read_news(path: PathLike) -> dict[str, NewsItem]:
    """Read MIND ``news.tsv`` as ``{news id: NewsItem}``. A wrong column count, an empty or duplicate news
    id and malformed entity JSON raise a ``DataError`` naming the file, line and field.

    Example:
        >>> news = read_news("MINDsmall_dev/news.tsv")  # doctest: +SKIP
        >>> news["N55528"].category  # doctest: +SKIP
        'lifestyle'
    """
    news: dict[str, NewsItem] = {}
    lines_of_ids: dict[str, int] = {}
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        news_id, category, subcategory, title, abstract, url, title_entities, abstract_entities = (
            _columns(path, number, line, NEWS_COLUMNS))
        news_id = news_id.strip()
        if not news_id:
            raise DataError(path, "empty", line=number, field="news_id")
        unique_id(lines_of_ids, news_id, path, number, field="news_id")
        news[news_id] = NewsItem(news_id, category, subcategory, title, abstract, url,
                                 _entities(path, number, "title_entities", title_entities),
                                 _entities(path, number, "abstract_entities", abstract_entities))
    return news


def _parse_impressions(path: PathLike, number: int, text: str) -> tuple[list[str], list[int] | None]:
    candidates, labels = [], []
    for token in text.split():
        news_id, dash, label = token.rpartition("-")
        if not dash:  # test set: a bare news id
            candidates.append(token)
            continue
        if label not in ("0", "1") or not news_id:
            raise DataError(path, f"{token!r} is not a news id with a click label 0 or 1 (N123-1)",
                            line=number, field="impressions")
        candidates.append(news_id)
        labels.append(int(label))
    if not candidates:
        raise DataError(path, "empty", line=number, field="impressions")
    if labels and len(labels) != len(candidates):
        raise DataError(path, "some candidates have a click label and others not", line=number,
                        field="impressions")
    return candidates, labels or None


def read_behaviors(path: PathLike, news: Collection[str] | None = None) -> Iterator[Impression]:
    """Stream the impressions of MIND ``behaviors.tsv`` (MIND-large train has 2.2M of them).

    When ``news`` (the ids of ``read_news``) is given, a history or candidate naming unknown news is an
    error. A wrong column count, a bad time, a click label other than 0/1 or an impression mixing
    labelled and unlabelled candidates raises a ``DataError`` naming the file, line and field.

    Example:
        >>> impressions = list(read_behaviors("MINDsmall_dev/behaviors.tsv"))  # doctest: +SKIP
        >>> impressions[0].candidates[:2], impressions[0].labels[:2]  # doctest: +SKIP
        (['N31958', 'N29197'], [1, 0])
    """
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        impression_id, user, time, history_text, impressions_text = (
            _columns(path, number, line, BEHAVIOR_COLUMNS))
        if not impression_id.strip():
            raise DataError(path, "empty", line=number, field="impression_id")
        if not user.strip():
            raise DataError(path, "empty", line=number, field="user_id")
        try:
            shown_at = datetime.strptime(time.strip(), TIME_FORMAT)
        except ValueError:
            raise DataError(path, f"{time!r} is not a time like 11/15/2019 10:22:32 AM", line=number,
                            field="time") from None
        history = history_text.split()
        candidates, labels = _parse_impressions(path, number, impressions_text)
        if news is not None:
            for field, ids in (("history", history), ("impressions", candidates)):
                unknown = next((news_id for news_id in ids if news_id not in news), None)
                if unknown is not None:
                    raise DataError(path, f"unknown news {unknown!r}", line=number, field=field)
        yield Impression(impression_id.strip(), user.strip(), shown_at, history, candidates, labels)


__all__ = ["BEHAVIOR_COLUMNS", "NEWS_COLUMNS", "Impression", "NewsItem", "read_behaviors", "read_news"]
