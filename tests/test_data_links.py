"""Link recovery from title mentions on a real wiki shard, and the link graph WLP reads."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from seedr.data.articles import read_articles
from seedr.data.links import (
    TitleLinker,
    inbound_links,
    link_graph,
    read_links,
    recover_title_links,
    write_links,
)
from seedr.data.records import Article
from seedr.io import DataError


@pytest.fixture(scope="module")
def shard(wiki_shard: Path) -> list[Article]:
    return list(read_articles(wiki_shard))


@pytest.fixture(scope="module")
def linked(shard: list[Article]) -> list[Article]:
    return recover_title_links(shard)


def test_recovery_is_fast_on_a_whole_shard(shard: list[Article]) -> None:
    started = time.perf_counter()
    recover_title_links(shard)
    # ~8M words: one Aho-Corasick pass, about a second here (a regex per title would take hours)
    assert time.perf_counter() - started < 20


def test_recovered_links_on_a_real_shard(linked: list[Article]) -> None:
    titles = {a.title for a in linked}
    all_links = [(a.title, link) for a in linked for link in a.links]
    assert len(all_links) > 5_000 and sum(bool(a.links) for a in linked) > 1_000
    assert all(link in titles for _, link in all_links)  # links go to articles of the corpus
    assert all(link != title for title, link in all_links)  # never to itself
    assert all(len(link.split()) >= 2 for _, link in all_links)  # single-word titles are off by default
    assert all(len(set(a.links)) == len(a.links) for a in linked)
    anarchism = next(a for a in linked if a.title == "Anarchism")
    assert {"Albert Camus", "Allen Ginsberg", "Austrian School"} <= set(anarchism.links)
    # common-noun titles are found with a lower-case first letter too ("carbon dioxide")
    assert any("Carbon dioxide" in a.links and "Carbon dioxide" not in "\n".join(a.paragraphs) for a in linked)
    # "Liberal Party (UK)" is not linked from "Liberal Party" by default; "Cocos (Keeling) Islands" is a plain title
    assert not any(link.endswith(")") for a in linked for link in a.links)
    text = "\n".join(anarchism.paragraphs)
    assert all(link in text or (link[0].lower() + link[1:]) in text for link in anarchism.links)


def test_options_single_words_and_cap(shard: list[Article]) -> None:
    head = shard[:200]
    with_single = recover_title_links(head, min_title_words=1, titles=(a.title for a in shard))
    assert any(len(link.split()) == 1 for a in with_single for link in a.links)
    capped = recover_title_links(head, max_links_per_article=3)
    assert max(len(a.links) for a in capped) == 3


def test_longest_match_whole_words_and_own_title() -> None:
    linker = TitleLinker(["New York City", "New York", "York City", "United States", "United States Army",
                          "Political philosophy", "Mercury (planet)", "Mercury (element)", "Apollo (spaceflight)",
                          "Amazon River"])
    sentence = ("In New York City the United States Army recruited a student of political philosophy; "
                "the Amazon Riverside hotel overlooks New York.")
    assert linker.mentions(sentence) == ["New York City", "United States Army", "Political philosophy", "New York"]
    # the article's own title still takes its span, so its shorter parts are not linked
    assert linker.mentions("The United States Army was founded in 1775.", own_title="United States Army") == []
    # with match_disambiguated, "(planet)" is dropped for matching; a form shared by two titles links to neither
    assert linker.mentions("Mercury orbits the Sun") == []
    both = TitleLinker(["Mercury (planet)", "Mercury (element)", "Liberal Party (UK)", "Apollo (spaceflight)",
                        "Apollo"], min_title_words=1, match_disambiguated=True)
    assert both.mentions("Mercury, Apollo 11 and the Liberal Party") == ["Apollo", "Liberal Party (UK)"]


def test_graph_inbound_and_links_file(tmp_path: Path, linked: list[Article]) -> None:
    graph = link_graph(linked)
    inbound = inbound_links(graph)
    assert sum(map(len, graph.values())) == sum(map(len, inbound.values()))
    for source, targets in list(graph.items())[:200]:
        assert all(source in inbound[target] for target in targets)
    assert inbound_links(linked) == inbound
    path = tmp_path / "links.jsonl"
    assert write_links(path, linked) == len(linked)
    assert read_links(path) == link_graph(linked, within=False)
    path.write_text('{"id": "12", "title": "Anarchism", "links": "Political philosophy"}\n', encoding="utf-8")
    with pytest.raises(DataError, match="line 1: field 'links': expected list"):
        read_links(path)
