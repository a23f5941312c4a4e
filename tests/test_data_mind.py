"""MIND readers on small files written in MIND's real layout (rows from MIND's documentation and MIND-small;
MIND itself is not available on this machine)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from helpers import check_data_error, write

from seedr.data.mind import read_behaviors, read_news
from seedr.data.records import Document
from seedr.io import DataError

ROYALS = ("N55528\tlifestyle\tlifestyleroyals\t"
          "The Brands Queen Elizabeth, Prince Charles, and Prince Philip Swear By\t"
          "Shop the notebooks, jackets, and more that the royals can't live without.\t"
          "https://assets.msn.com/labs/mind/AAGH0ET.html\t"
          '[{"Label": "Prince Philip, Duke of Edinburgh", "Type": "P", "WikidataId": "Q80976", '
          '"Confidence": 1.0, "OccurrenceOffsets": [48], "SurfaceForms": ["Prince Philip"]}, '
          '{"Label": "Elizabeth II", "Type": "P", "WikidataId": "Q9682", "Confidence": 0.97, '
          '"OccurrenceOffsets": [11], "SurfaceForms": ["Queen Elizabeth"]}]\t[]\n')
PGA = ("N37378\tsports\tgolf\tPGA Tour winners\tA gallery of recent winners on the PGA Tour.\t"
       "https://assets.msn.com/labs/mind/AAjnQKJ.html\t"
       '[{"Label": "PGA Tour", "Type": "O", "WikidataId": "Q910409", "Confidence": 1.0, '
       '"OccurrenceOffsets": [0], "SurfaceForms": ["PGA Tour"]}]\t[]\n')
NO_ABSTRACT = "N18445\tfoodanddrink\tfoodnews\tDollar General's new store is a $10 billion gamble\t\t" \
              "https://assets.msn.com/labs/mind/BBWv6oY.html\t\t\n"
NEWS = ROYALS + PGA + NO_ABSTRACT

LABELLED = ("1\tU13740\t11/11/2019 9:05:58 AM\tN55528 N18445\tN37378-1 N55528-0\n"
            "2\tU91836\t11/12/2019 6:11:30 PM\t\tN18445-0 N37378-0 N55528-1\n")
UNLABELLED = "1\tU80234\t11/15/2019 12:37:50 PM\tN55528 N37378\tN18445 N55528\n"


def test_read_news(tmp_path: Path) -> None:
    news = read_news(write(tmp_path / "news.tsv", NEWS))
    assert list(news) == ["N55528", "N37378", "N18445"]
    royals = news["N55528"]
    assert (royals.category, royals.subcategory) == ("lifestyle", "lifestyleroyals")
    assert [entity["WikidataId"] for entity in royals.title_entities] == ["Q80976", "Q9682"]
    assert royals.abstract_entities == []
    assert royals.url == "https://assets.msn.com/labs/mind/AAGH0ET.html"
    assert news["N18445"].abstract == "" and news["N18445"].title_entities == []
    assert news["N37378"].as_document() == Document("N37378", "A gallery of recent winners on the PGA Tour.",
                                                    "PGA Tour winners")


def test_read_labelled_behaviors(tmp_path: Path) -> None:
    news = read_news(write(tmp_path / "news.tsv", NEWS))
    first, second = read_behaviors(write(tmp_path / "behaviors.tsv", LABELLED), news=news)
    assert (first.id, first.user, first.time) == ("1", "U13740", datetime(2019, 11, 11, 9, 5, 58))
    assert first.history == ["N55528", "N18445"]
    assert (first.candidates, first.labels) == (["N37378", "N55528"], [1, 0])
    assert second.time == datetime(2019, 11, 12, 18, 11, 30)  # PM
    assert second.history == []  # a user with no clicks before the impression
    assert second.labels == [0, 0, 1]


def test_read_unlabelled_test_behaviors(tmp_path: Path) -> None:
    (impression,) = read_behaviors(write(tmp_path / "behaviors.tsv", UNLABELLED))
    assert impression.candidates == ["N18445", "N55528"]
    assert impression.labels is None


def test_behaviors_stream(tmp_path: Path) -> None:
    impressions = read_behaviors(write(tmp_path / "behaviors.tsv", LABELLED))
    assert next(impressions).id == "1"  # an iterator: MIND-large train has millions of impressions
    assert next(impressions).id == "2"


@pytest.mark.parametrize(("text", "line", "field", "reason"), [
    (ROYALS + "N37378\tsports\tgolf\tPGA Tour winners\n", 2, None, "expected 8 tab-separated columns"),
    (ROYALS + ROYALS, 2, "news_id", "duplicate news_id 'N55528' (first on line 1)"),
    (ROYALS + "\t" + PGA.split("\t", 1)[1], 2, "news_id", "empty"),
    (ROYALS + PGA.replace('"SurfaceForms": ["PGA Tour"]}]', '"SurfaceForms": ["PGA Tour"]'), 2,
     "title_entities", "malformed JSON"),
    (ROYALS + PGA.replace("\t[]\n", '\t{"Label": "PGA Tour"}\n'), 2, "abstract_entities", "JSON list"),
    (ROYALS.encode() + PGA.encode().replace(b"gallery", b"gall\xe9ry"), 2, None, "not UTF-8"),
])
def test_bad_news(tmp_path: Path, text: str | bytes, line: int, field: str | None, reason: str) -> None:
    path = write(tmp_path / "news.tsv", text)
    with pytest.raises(DataError) as info:
        read_news(path)
    check_data_error(info, path, line, field, reason)


@pytest.mark.parametrize(("text", "line", "field", "reason"), [
    (LABELLED + "3\tU1\t11/13/2019 8:36:57 AM\tN55528\n", 3, None, "expected 5 tab-separated columns"),
    (LABELLED + "3\tU1\t11/13/2019 8:36:57 AM\tN55528\tN37378-2\n", 3, "impressions", "click label 0 or 1"),
    (LABELLED + "3\tU1\t11/13/2019 8:36:57 AM\tN55528\tN37378-1 N18445\n", 3, "impressions",
     "some candidates have a click label"),
    (LABELLED + "3\tU1\t11/13/2019 8:36:57 AM\tN55528\t \n", 3, "impressions", "empty"),
    (LABELLED + "3\tU1\t2019-11-13 08:36:57\tN55528\tN37378-1\n", 3, "time", "is not a time"),
    (LABELLED + "3\t\t11/13/2019 8:36:57 AM\tN55528\tN37378-1\n", 3, "user_id", "empty"),
])
def test_bad_behaviors(tmp_path: Path, text: str, line: int, field: str | None, reason: str) -> None:
    path = write(tmp_path / "behaviors.tsv", text)
    with pytest.raises(DataError) as info:
        list(read_behaviors(path))
    check_data_error(info, path, line, field, reason)


@pytest.mark.parametrize(("row", "field"), [
    ("3\tU1\t11/13/2019 8:36:57 AM\tN55528 N99999\tN37378-1\n", "history"),
    ("3\tU1\t11/13/2019 8:36:57 AM\tN55528\tN37378-0 N99999-1\n", "impressions"),
])
def test_behaviors_naming_unknown_news(tmp_path: Path, row: str, field: str) -> None:
    news = read_news(write(tmp_path / "news.tsv", NEWS))
    path = write(tmp_path / "behaviors.tsv", LABELLED + row)
    with pytest.raises(DataError) as info:
        list(read_behaviors(path, news=news))
    check_data_error(info, path, 3, field, "unknown news 'N99999'")
    assert len(list(read_behaviors(path))) == 3  # without the news ids, the same file reads
