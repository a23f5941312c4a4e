"""DPR answer coverage: the normaliser on tricky strings, and real NQ-open questions over passages cut
from Wikipedia shard 00."""

from __future__ import annotations

import itertools
import random
import unicodedata

import pytest

from seedr.data.answers import dpr_tokens, has_answer
from seedr.data.articles import read_articles
from seedr.data.passages import split_passages
from seedr.data.qa import read_nq_open
from seedr.data.runs import rank_documents
from seedr.evaluation.qa_coverage import answer_coverage, coverage_per_question, first_hit_ranks
from seedr.retrieval.bm25 import BM25Index


def test_tokens_are_drqa_simple_tokens():  # NFD: "é" is "e" + a combining accent, inside the word
    assert dpr_tokens("Beyoncé Knowles-Carter, U.S. $1,000 (2015)") == [
        "beyonce\u0301", "knowles", "-", "carter", ",", "u", ".", "s", ".", "$", "1", ",", "000",
        "(", "2015", ")"]
    assert dpr_tokens("March\xa01,\xa02018") == ["march", "1", ",", "2018"]  # no-break spaces separate


@pytest.mark.parametrize("answer, text, expected", [
    ("BEYONCÉ", "a concert by Beyoncé in 2013", True),                       # case
    ("Beyonc\u00e9", "by Beyonce\u0301 (decomposed)", True),                  # NFC answer, NFD text
    ("beyonce", "a concert by Beyoncé", False),                                # accents are kept
    ("U.S.", "the U.S. Army", True),                                           # punctuation tokens
    ("US", "the U.S. Army", False),
    ("Sigmund Freud", "founded by Sigmund  Freud, in Vienna", True),           # whitespace is not a token
    ("Freud,", "Freud was", False),                                            # the comma must be there
    ("cat", "concatenate", False),                                             # whole tokens only
    ("14 December 1972", "on 14 December 1972 UTC", True),
    ("March 1, 2018", "aired on March\xa01,\xa02018.", True),
])
def test_has_answer_on_tricky_strings(answer, text, expected):
    assert has_answer([answer], text) is expected


def test_normalisation_is_nfd():
    composed = unicodedata.normalize("NFC", "Ångström")
    decomposed = unicodedata.normalize("NFD", "Ångström")
    assert composed != decomposed and dpr_tokens(composed) == dpr_tokens(decomposed)


@pytest.fixture(scope="module")
def nq_over_wiki(wiki_shard, shared_data):
    """Passages of the first 300 articles of shard 00, and the NQ-open questions naming one of them."""
    articles = list(itertools.islice(read_articles(wiki_shard), 300))
    passages = {passage.id: passage for passage in split_passages(articles)}
    titles = {article.title.lower() for article in articles if len(article.title) > 6}
    questions = [q for q in read_nq_open(shared_data / "nq-open" / "NQ-open.dev.jsonl")
                 if any(title in q.question.lower() for title in titles)]
    run = BM25Index.build(passages.values()).search({q.id: q.question for q in questions}, k=100)
    return passages, {q.id: q.answers for q in questions}, run


def test_coverage_of_real_questions(nq_over_wiki):
    passages, answers, run = nq_over_wiki
    assert len(answers) >= 40
    coverage = answer_coverage(run, passages, answers)
    assert list(coverage) == ["Top-1", "Top-5", "Top-20", "Top-100"]
    values = list(coverage.values())
    assert values == sorted(values) and 0 < values[0] and values[-1] < 1
    # the definition, recomputed directly: any of the top k passages holds any answer
    for k in (1, 5, 20, 100):
        covered = [any(has_answer(answers[qid], passages[doc].text)
                       for doc, _ in rank_documents(run[qid])[:k])
                   for qid in answers]
        assert coverage[f"Top-{k}"] == pytest.approx(sum(covered) / len(answers))


def test_bm25_beats_a_random_ranking(nq_over_wiki):
    passages, answers, run = nq_over_wiki
    rng = random.Random(0)
    shuffled = {qid: {doc: rng.random() for doc in rng.sample(sorted(passages), 100)} for qid in answers}
    bm25 = answer_coverage(run, passages, answers)["Top-20"]
    assert bm25 > answer_coverage(shuffled, passages, answers)["Top-20"]


def test_per_question_hits_and_missing_questions(nq_over_wiki):
    passages, answers, run = nq_over_wiki
    partial = dict(list(run.items())[1:])  # the first question was not searched
    ranks = first_hit_ranks(partial, passages, answers, depth=100)
    assert ranks[next(iter(run))] is None
    hits = coverage_per_question(ranks, ks=(5,))["Top-5"]
    assert set(hits) == set(answers) and set(hits.values()) <= {0.0, 1.0}
    assert answer_coverage(partial, passages, answers, ks=(5,))["Top-5"] == pytest.approx(
        sum(hits.values()) / len(answers))


def test_a_passage_outside_the_collection_is_an_error(nq_over_wiki):
    passages, answers, _ = nq_over_wiki
    qid = next(iter(answers))
    with pytest.raises(KeyError, match="not in the passage collection"):
        answer_coverage({qid: {"no-such-passage": 1.0}}, passages, {qid: answers[qid]})


def test_title_is_searched_only_when_asked(nq_over_wiki):
    passages, _, _ = nq_over_wiki
    passage = next(p for p in passages.values() if p.title.lower() not in p.text.lower())
    run = {"q": {passage.id: 1.0}}
    assert answer_coverage(run, passages, {"q": [passage.title]}, ks=(1,))["Top-1"] == 0.0
    assert answer_coverage(run, passages, {"q": [passage.title]}, ks=(1,), include_title=True)["Top-1"] == 1.0
