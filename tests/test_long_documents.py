"""FirstP and MaxP on real long documents: whole Wikipedia articles from the shared wiki shard."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from seedr.data.articles import read_articles
from seedr.data.records import Document
from seedr.data.runs import run_from_topk
from seedr.data.sentences import sentence_spans
from seedr.evaluation.metrics import evaluate_run
from seedr.retrieval.encode import TextEncoder
from seedr.retrieval.faiss_index import DenseIndex
from seedr.retrieval.long_documents import (
    LONG_DOCUMENTS,
    firstp_passages,
    max_passage_run,
    maxp_passages,
    search_max_passage,
    split_documents,
)

PASSAGE_TOKENS = 96  # short passages keep the test fast; the logic is the same at 512
PASSAGES = 4  # ANCE MaxP keeps a document's first four passages


@pytest.fixture(scope="module")
def long_articles(wiki_shard: Path, tokenizer) -> list[Document]:
    """Whole articles (title + every paragraph) that fill at least four passages."""
    documents = []
    for article in itertools.islice(read_articles(wiki_shard), 400):
        document = Document(article.id, "\n".join(article.paragraphs), article.title)
        if len(tokenizer(document.text, add_special_tokens=False, verbose=False)["input_ids"]) > 4 * PASSAGE_TOKENS:
            documents.append(document)
        if len(documents) == 30:
            break
    assert len(documents) == 30
    return documents


@pytest.fixture(scope="module")
def deep_queries(long_articles: list[Document], tokenizer) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """For each article, a sentence of it that lies past its first passage but within its first four:
    a query only the body of the document answers (FirstP cannot see it, MaxP can)."""
    first = {p.id.split("#")[0]: p for p in firstp_passages(long_articles, tokenizer, PASSAGE_TOKENS).passages}
    covered = maxp_passages(long_articles, tokenizer, PASSAGE_TOKENS, max_passages=PASSAGES)
    last_covered = {covered.parent[p.id]: p for p in covered.passages}  # the last of each document's passages
    queries, qrels = {}, {}
    for document in long_articles:
        start = document.text.index(first[document.id].text) + len(first[document.id].text)
        end = document.text.index(last_covered[document.id].text)  # inside the covered span
        sentence = next((document.text[a:b] for a, b in sentence_spans(document.text)
                         if start < a and b < end and len(document.text[a:b].split()) >= 8), None)
        if sentence is not None:
            queries[f"q{document.id}"] = sentence
            qrels[f"q{document.id}"] = {document.id: 1}
    assert len(queries) >= 25
    return queries, qrels


def test_passages_fit_the_encoder_and_keep_the_text_verbatim(long_articles: list[Document], tokenizer) -> None:
    passages = split_documents(long_articles[:5], tokenizer, passage_length=PASSAGE_TOKENS)
    by_document: dict[str, list[Document]] = {}
    for passage in passages.passages:
        by_document.setdefault(passages.parent[passage.id], []).append(passage)
    for document in long_articles[:5]:
        pieces = by_document[document.id]
        assert [p.id for p in pieces] == [f"{document.id}#{i}" for i in range(len(pieces))]
        position = 0
        for piece in pieces:
            assert piece.title == document.title
            assert len(tokenizer(piece.title, piece.text)["input_ids"]) <= PASSAGE_TOKENS
            position = document.text.index(piece.text, position)  # verbatim, in order
        assert document.text.rstrip().endswith(pieces[-1].text)  # no overlap by default, nothing lost at the end


def test_max_passages_and_stride(long_articles: list[Document], tokenizer) -> None:
    capped = maxp_passages(long_articles[:3], tokenizer, PASSAGE_TOKENS, max_passages=PASSAGES)
    assert capped.max_per_document == PASSAGES
    first = firstp_passages(long_articles[:3], tokenizer, PASSAGE_TOKENS)
    assert [p.text for p in first.passages] == [p.text for p in capped.passages if p.id.endswith("#0")]
    overlapping = split_documents(long_articles[:1], tokenizer, PASSAGE_TOKENS, stride=32, max_passages=3)
    a, b = overlapping.passages[0].text, overlapping.passages[1].text
    assert b[:40] in a and not b.startswith(a[:40])  # the second window starts inside the first
    assert LONG_DOCUMENTS.names() == ["firstp", "maxp"]


def test_max_passage_run_takes_each_documents_best_passage() -> None:
    run = {"q": {"a#0": 0.2, "a#1": 0.9, "b#0": 0.5, "c#3": 0.1}}
    parent = {"a#0": "a", "a#1": "a", "b#0": "b", "c#3": "c"}
    assert max_passage_run(run, parent) == {"q": {"a": 0.9, "b": 0.5, "c": 0.1}}
    assert max_passage_run(run, parent, k=2) == {"q": {"a": 0.9, "b": 0.5}}


@pytest.fixture(scope="module")
def minilm_search(long_articles, deep_queries, tokenizer):
    encoder = TextEncoder("minilm", pooling="mean", normalize=True, max_length=PASSAGE_TOKENS)
    queries, _ = deep_queries
    query_ids = list(queries)
    query_vectors = encoder.encode_queries([queries[q] for q in query_ids])
    results = {}
    for mode in ("firstp", "maxp"):
        passages = (firstp_passages(long_articles, tokenizer, PASSAGE_TOKENS) if mode == "firstp"
                    else maxp_passages(long_articles, tokenizer, PASSAGE_TOKENS, max_passages=PASSAGES))
        vectors = encoder.encode_documents(passages.passages)
        index = DenseIndex.build(vectors, [p.id for p in passages.passages])
        results[mode] = (index, passages, query_vectors, query_ids)
    return results


def test_maxp_finds_what_only_the_body_says(minilm_search, deep_queries) -> None:
    _, qrels = deep_queries
    recall = {}
    for mode, (index, passages, query_vectors, query_ids) in minilm_search.items():
        run = search_max_passage(index, query_vectors, query_ids, passages, k=10)
        recall[mode] = evaluate_run(run, qrels, ["R@1", "R@10"])
    assert recall["maxp"]["R@1"] >= recall["firstp"]["R@1"]
    assert recall["maxp"]["R@10"] >= recall["firstp"]["R@10"]
    # not a tie: a sentence of the body is found more often through the passage that holds it (FirstP
    # still finds many: the lead often gives an article's subject away, and these articles differ in subject)
    assert recall["maxp"]["R@1"] > recall["firstp"]["R@1"], recall


def test_max_passage_search_is_exact(minilm_search) -> None:
    index, passages, query_vectors, query_ids = minilm_search["maxp"]
    fast = search_max_passage(index, query_vectors, query_ids, passages, k=5)
    scores, ids = index.search(query_vectors, len(passages.passages))  # every passage
    exhaustive = max_passage_run(run_from_topk(query_ids, scores, ids), passages.parent, k=5)
    assert list(fast) == list(exhaustive)
    for qid in fast:
        assert list(fast[qid]) == list(exhaustive[qid])
        assert np.allclose(list(fast[qid].values()), list(exhaustive[qid].values()))
