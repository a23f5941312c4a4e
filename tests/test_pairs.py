"""The ICT / BFS / WLP pair builders and their epoch data, on real Wikipedia articles and FOLDOC entries."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest

from seedr.data.articles import read_articles
from seedr.data.corpus import read_corpus_articles
from seedr.data.glossary import read_glossary
from seedr.data.links import inbound_links, recover_title_links
from seedr.data.pair_units import check_pair_sources
from seedr.data.records import Article
from seedr.data.sentences import split_sentences
from seedr.io import DataError
from seedr.objectives.pair_tasks import BFSPairs
from seedr.objectives.pair_tasks import ICTPairs
from seedr.objectives.pair_tasks import PAIR_TASKS
from seedr.objectives.pair_tasks import WLPPairs
from seedr.objectives.two_tower import PairData, pair_data_for
from seedr.objectives.two_tower_options import PairConfig
from seedr.training.mined_pairs import PAIR_SOURCES

ARTICLES = 300


@pytest.fixture(scope="module")
def articles(wiki_shard: Path) -> list[Article]:
    """The shard's first 300 articles, with links recovered from title mentions (as WLP needs)."""
    return recover_title_links(itertools.islice(read_articles(wiki_shard), ARTICLES), min_title_words=2)


@pytest.fixture(scope="module")
def foldoc(shared_data: Path) -> list[Article]:
    return list(read_glossary(shared_data / "foldoc" / "foldoc.jsonl.gz"))


@pytest.fixture(scope="module")
def ict(articles: list[Article]) -> ICTPairs:
    return ICTPairs(articles, PairConfig())


@pytest.fixture(scope="module")
def bfs(articles: list[Article]) -> BFSPairs:
    return BFSPairs(articles, PairConfig())


@pytest.fixture(scope="module")
def wlp(articles: list[Article]) -> WLPPairs:
    return WLPPairs(articles, PairConfig())


def epoch_pairs(data: PairData, epoch: int, count: int = 200) -> list:
    dataset = data.dataset(epoch)
    return [dataset[i] for i in range(min(count, len(dataset)))]


def test_ict_query_is_a_sentence_of_its_passage_and_not_in_its_document(articles, ict):
    assert len(ict) > 1000  # every paragraph of two or more sentences: thousands in 300 articles
    by_id = {article.id: article for article in articles}
    for pair in epoch_pairs(PairData([ict], seed=3), epoch=0, count=400):
        article = by_id[pair.source["article_id"]]
        passage = article.paragraphs[pair.source["paragraph"]]
        start, end = pair.source["query_span"]
        assert pair.query == passage[start:end]
        assert pair.query in split_sentences(passage)
        assert pair.query not in pair.document
        assert pair.document == f"{passage[:start].rstrip()} {passage[end:].lstrip()}".strip()
        assert pair.title == article.title and pair.task == "ict"


def test_ict_keeps_the_query_in_its_document_when_asked_as_orqa(articles):
    pairs = epoch_pairs(PairData([ICTPairs(articles, PairConfig(keep_query_probability=1.0))], seed=3), 0, 50)
    by_id = {article.id: article for article in articles}
    for pair in pairs:
        assert pair.source["query_kept"]
        assert pair.document == by_id[pair.source["article_id"]].paragraphs[pair.source["paragraph"]]
        assert pair.query in pair.document


def test_bfs_query_is_a_lead_sentence_and_document_a_body_passage_of_the_same_article(articles, bfs):
    by_id = {article.id: article for article in articles}
    pairs = epoch_pairs(PairData([bfs], seed=5), epoch=0, count=len(bfs))
    assert len(pairs) == len(bfs) > 200
    for pair in pairs:
        article = by_id[pair.source["article_id"]]
        lead = [sentence for paragraph in article.lead for sentence in split_sentences(paragraph)]
        body = [p for section in article.sections for p in section.paragraphs]
        assert pair.query in lead
        assert pair.document in body
        assert pair.source["document_paragraph"] >= len(article.lead)
        assert article.paragraphs[pair.source["document_paragraph"]] == pair.document
        assert pair.title == article.title
    # one pair per article per epoch
    assert len({pair.source["article_id"] for pair in pairs}) == len(pairs)


def check_wlp_pairs(pairs: list, articles: list[Article]) -> None:
    inbound = inbound_links(articles)
    by_id = {article.id: article for article in articles}
    for pair in pairs:
        target, linking = by_id[pair.source["article_id"]], by_id[pair.source["linked_from_id"]]
        assert linking.title in inbound[target.title] and target.title in linking.links
        assert linking.id != target.id
        assert pair.query in [s for paragraph in target.lead for s in split_sentences(paragraph)]
        assert pair.document == linking.paragraphs[pair.source["document_paragraph"]]
        assert pair.title == linking.title


def test_wlp_pairs_a_lead_sentence_with_a_passage_of_an_article_linking_to_it(articles, wlp):
    assert len(wlp) > 20
    pairs = epoch_pairs(PairData([wlp], seed=7), epoch=0, count=len(wlp))
    check_wlp_pairs(pairs, articles)
    # recovered links are title mentions, so the chosen passage is the one that mentions the target
    assert all(pair.source["mention"] for pair in pairs)
    assert all(pair.source["title"].casefold() in pair.document.casefold() for pair in pairs
               if "(" not in pair.source["title"])


def test_wlp_uses_foldoc_cross_references(foldoc):
    task = WLPPairs(foldoc, PairConfig())
    assert len(task) > 5000  # most FOLDOC entries are cross-referenced from another
    pairs = epoch_pairs(PairData([task], seed=7), epoch=0, count=300)
    check_wlp_pairs(pairs, foldoc)
    # most linking passages name the target; the others link through an alias ("NIST") that the
    # articles do not record, and the pair falls back to another passage of the linking entry
    assert sum(pair.source["mention"] for pair in pairs) > 0.75 * len(pairs)


def test_pairs_are_deterministic_per_seed_and_epoch_and_change_across_epochs(ict, bfs):
    def draw(seed: int, epoch: int) -> list[tuple[str, str]]:
        pairs = epoch_pairs(PairData([ict, bfs], seed=seed), epoch, count=300)
        return [(pair.query, pair.document) for pair in pairs]

    assert draw(11, 0) == draw(11, 0)
    assert draw(11, 0) != draw(11, 1)
    assert draw(11, 0) != draw(12, 0)
    # an item does not depend on which items were read before it (DataLoader workers read in any order)
    dataset = PairData([ict], seed=11).dataset(4)
    forward = [dataset[i] for i in (3, 9, 57)]
    backward = [PairData([ict], seed=11).dataset(4)[i] for i in (57, 9, 3)]
    assert forward == backward[::-1]


def test_mixture_draws_tasks_uniformly_and_visits_every_unit_before_repeating(ict, bfs, wlp):
    dataset = PairData([ict, bfs, wlp], seed=2, pairs_per_epoch=3000).dataset(0)
    pairs = [dataset[i] for i in range(len(dataset))]
    counts = Counter(pair.task for pair in pairs)
    assert set(counts) == {"ict", "bfs", "wlp"}
    for task in counts:  # binomial(3000, 1/3): standard deviation 26
        assert abs(counts[task] - 1000) < 100
    # WLP has fewer units than its share: each is used k or k+1 times, never k+2 while another waits
    uses = Counter(pair.source["article_id"] for pair in pairs if pair.task == "wlp")
    assert len(uses) == len(wlp) and max(uses.values()) - min(uses.values()) <= 1


def test_pair_data_for_reads_wiki_and_foldoc(wiki_shard, shared_data):
    data = pair_data_for("ict_bfs_wlp", wiki_shard, seed=0, config=PairConfig(max_articles=100))
    assert [task.name for task in data.tasks] == ["ict", "bfs", "wlp"] and all(len(t) for t in data.tasks)
    assert len(data) == sum(len(task) for task in data.tasks)
    foldoc = pair_data_for("wlp", shared_data / "foldoc" / "foldoc.jsonl.gz", seed=0,
                           config=PairConfig(max_articles=3000))
    assert foldoc.dataset(0)[0].task == "wlp"


def test_pair_data_for_rejects_what_cannot_make_pairs(shared_data, wiki_shard):
    with pytest.raises(ValueError, match="does not train on"):
        pair_data_for("mlm", wiki_shard, seed=0)
    # FOLDOC entries have no sections, hence no BFS documents
    with pytest.raises(DataError, match="no bfs pair"):
        pair_data_for("bfs", shared_data / "foldoc" / "jargon.jsonl.gz", seed=0)
    with pytest.raises(ValueError, match="keep_query_probability"):
        PairConfig(keep_query_probability=1.5)


def test_the_check_before_mining_and_the_tasks_agree_on_the_sources_a_corpus_gives(articles, foldoc,
                                                                                   shared_data):
    # seedr adapt refuses a source without torch (seedr.data.pair_units) by the rule the task builds by:
    # a corpus gives a source exactly when its task has a unit there
    abstracts = list(itertools.islice(read_corpus_articles(shared_data / "scifact"), 200))
    assert set(PAIR_TASKS.names()) >= set(PAIR_SOURCES)
    for corpus in (articles, foldoc[:400], abstracts):
        for name in PAIR_SOURCES:
            given = len(PAIR_TASKS.get(name)(corpus, PairConfig())) > 0
            try:
                check_pair_sources(iter(corpus), [name], "corpus")
                accepted = True
            except DataError as refusal:
                assert f"no {name} pair can be mined from these documents" in str(refusal)
                accepted = False
            assert accepted == given, (name, len(corpus))
    with pytest.raises(DataError, match="no bfs pair .* they support: ict, title, crop"):
        check_pair_sources(iter(abstracts), ["bfs"], "abstracts")
