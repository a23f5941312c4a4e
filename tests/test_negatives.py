"""Negative strategies on real SciFact: never a positive, always a provenance; BM25, static (TREC run,
DPR file), in-batch, and an ANCE refresh with MiniLM that follows the model as it changes."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch

from seedr.data.corpus import load_corpus
from seedr.data.queries import read_qrels, read_queries
from seedr.data.records import Document
from seedr.data.runs import write_trec_run
from seedr.data.training_sets import TrainingSet, load_training_set
from seedr.io import DataError
from seedr.losses import NLLLoss
from seedr.negatives import NEGATIVES, NegativeTable, ance_refresh
from seedr.negatives.ance import changed_share
from seedr.negatives.base import FalseNegativeMargins, MinedNegative, positives
from seedr.retrieval.bm25 import BM25Index
from seedr.retrieval.dual_encoder import DualEncoder
from seedr.training.finetune import FinetuneCollator, FinetuneData


@pytest.fixture(scope="module")
def scifact(shared_data: Path):
    folder = shared_data / "scifact"
    corpus = load_corpus(folder / "corpus.jsonl")
    queries = read_queries(folder / "queries.jsonl")
    qrels = read_qrels(folder / "qrels" / "train.tsv", queries=queries, documents=corpus)
    return corpus, queries, qrels


def _subset(scifact, query_count: int, document_count: int):
    """The first training queries, their positives and other real abstracts up to ``document_count``."""
    corpus, queries, qrels = scifact
    qids = sorted(qrels)[:query_count]
    wanted = {doc for qid in qids for doc in qrels[qid]}
    documents = {doc: corpus[doc] for doc in sorted(wanted)}
    for doc_id in corpus:
        if len(documents) >= document_count:
            break
        documents.setdefault(doc_id, corpus[doc_id])
    return documents, {qid: queries[qid] for qid in qids}, {qid: qrels[qid] for qid in qids}


def _assert_no_positive(table: NegativeTable, qrels) -> None:
    relevant = positives(qrels)
    for qid, candidates in table.negatives.items():
        assert not {n.id for n in candidates} & relevant.get(qid, set()), qid


def test_from_run_drops_positives_and_keeps_ranks() -> None:
    run = {"q": {"d1": 5.0, "pos": 4.0, "d2": 3.0, "d3": 2.0, "judged-0": 1.0}}
    table = NegativeTable.from_run(run, {"q": {"pos": 1, "judged-0": 0}}, depth=4, provenance={"strategy": "x"})
    assert [(n.id, n.rank, n.score) for n in table.negatives["q"]] == [("d1", 1, 5.0), ("d2", 3, 3.0), ("d3", 4, 2.0)]
    assert table.provenance["depth"] == 4 and table.provenance["strategy"] == "x" and "created" in table.provenance


def test_margins_keep_the_top_candidates_below_the_best_positive() -> None:
    """Hand computation: positives scored 0.8 and 0.5 (the best counts); ceilings 0.8 × 0.95 = 0.76
    (relative 0.05) and 0.8 − 0.1 = 0.7 (absolute 0.1), the lower one when both are set; then the top
    ``depth`` of what is left, however deep it ranks (NV-Retriever's top-k below the threshold)."""
    run = {"q": {"d1": 0.9, "d2": 0.78, "pos": 0.8, "d3": 0.74, "d4": 0.6, "pos2": 0.5},
           "unscored": {"e1": 0.9, "e2": 0.1}}
    qrels = {"q": {"pos": 1, "pos2": 2}, "unscored": {"elsewhere": 1}}

    def kept(depth=2, **margins):
        table = NegativeTable.from_run(run, qrels, depth, provenance={"strategy": "x"},
                                       margins=FalseNegativeMargins(**margins))
        return table, {qid: [n.id for n in candidates] for qid, candidates in table.negatives.items()}

    table, ids = kept(relative=0.05)
    assert ids == {"q": ["d3", "d4"], "unscored": ["e1", "e2"]}  # a query whose positive is unscored: kept
    assert [n.rank for n in table.negatives["q"]] == [4, 5]  # ranks in the miner's ranking, positives counted
    assert table.provenance["false_negative_filter"] == {
        "absolute_margin": None, "relative_margin": 0.05, "ranked_depth": 6, "dropped": 2,
        "queries_short_of_depth": 0, "queries_left_without_negatives": 0, "queries_without_positive_scores": 1}
    assert kept(depth=1, relative=0.05)[1]["q"] == ["d3"]
    assert NegativeTable.from_run(run, qrels, 1, {"strategy": "x"}).negatives["q"][0].id == "d1"  # unfiltered
    table, ids = kept(absolute=0.1)
    assert ids["q"] == ["d4"] and table.provenance["false_negative_filter"]["queries_short_of_depth"] == 1
    assert kept(absolute=0.03, relative=0.05)[1]["q"] == ["d3", "d4"]  # 0.77 vs 0.76: the lower ceiling
    assert kept(relative=0.0)[1]["q"] == ["d2", "d3"]  # only what outscores the positive goes
    assert "false_negative_filter" not in NegativeTable.from_run(run, qrels, 2, {"strategy": "x"}).provenance
    with pytest.raises(ValueError, match="relative_margin must be in"):
        FalseNegativeMargins(relative=1.0)
    with pytest.raises(ValueError, match="absolute_margin must be at least 0"):
        FalseNegativeMargins(absolute=-0.1)


def test_sampling_is_seeded_and_fills_short_lists() -> None:
    table = NegativeTable({"q": [MinedNegative(f"d{i}", i + 1) for i in range(10)], "few": [MinedNegative("x", 1)]})
    first = table.sample("q", 3, random.Random(7))
    assert first == table.sample("q", 3, random.Random(7)) and len(set(first)) == 3
    assert table.sample("few", 3, random.Random(0)) == ["x", "x", "x"]  # with replacement when short
    assert table.sample("unknown", 3, random.Random(0)) == []


def test_table_round_trip_and_bad_files(tmp_path: Path) -> None:
    table = NegativeTable({"q1": [MinedNegative("d1", 2, 1.5)], "q2": []}, {"strategy": "bm25", "source": "t"})
    table.save(tmp_path / "t")
    again = NegativeTable.load(tmp_path / "t")
    assert again.negatives == table.negatives and again.provenance == table.provenance
    summary = json.loads((tmp_path / "t" / "provenance.json").read_text())
    assert summary["queries"] == 2 and summary["negatives"] == 1
    (tmp_path / "t" / "negatives.jsonl").write_text('{"query_id": "q1", "negatives": [{"id": "d1"}]}\n')
    with pytest.raises(DataError, match=r"negatives.jsonl, line 1: field 'rank': missing"):
        NegativeTable.load(tmp_path / "t")


def test_bm25_negatives_on_scifact(scifact) -> None:
    corpus, queries, qrels = scifact
    qids = sorted(qrels)[:25]
    train_queries, train_qrels = {q: queries[q] for q in qids}, {q: qrels[q] for q in qids}
    strategy = NEGATIVES.build("bm25", {"depth": 100})
    table = strategy.mine(corpus, train_queries, train_qrels, model=None, model_source="unused")
    _assert_no_positive(table, train_qrels)
    assert set(table.negatives) == set(qids)
    for qid, candidates in table.negatives.items():
        ranks = [n.rank for n in candidates]
        assert ranks == sorted(ranks) and ranks[-1] <= 100
        assert len(candidates) >= 100 - len(train_qrels[qid])  # only the positives were taken out
    # a positive that BM25 ranks first leaves a gap at rank 1: ranks are those of the BM25 run
    run = BM25Index.build(corpus.values()).search(train_queries, k=1)
    for qid in qids:
        top = next(iter(run[qid]))
        assert (table.negatives[qid][0].rank == 1) == (top not in train_qrels[qid])
    assert table.provenance["strategy"] == "bm25" and table.provenance["step"] == 0
    assert table.provenance["bm25"]["k1"] == 0.9 and "5183-document" in table.provenance["source"]


def test_static_negatives_from_a_trec_run(scifact, tmp_path: Path) -> None:
    corpus, queries, qrels = _subset(scifact, 10, 200)
    run = BM25Index.build(corpus.values()).search(queries, k=30)  # a real run, positives included
    assert any(doc in qrels[qid] for qid in run for doc in run[qid])
    write_trec_run(tmp_path / "bm25.run", run)
    table = NEGATIVES.build("static", {"run": str(tmp_path / "bm25.run"), "depth": 20}).mine(
        corpus, queries, qrels, model=None, model_source="unused")
    _assert_no_positive(table, qrels)
    assert max(n.rank for c in table.negatives.values() for n in c) <= 20
    assert table.provenance["run"] == str(tmp_path / "bm25.run") and table.provenance["strategy"] == "static"

    write_trec_run(tmp_path / "other.run", {next(iter(queries)): {"not-in-corpus": 1.0}})
    with pytest.raises(DataError, match="'not-in-corpus'.*not in the training corpus"):
        NEGATIVES.build("static", {"run": str(tmp_path / "other.run")}).mine(corpus, queries, qrels, None, "")
    write_trec_run(tmp_path / "none.run", {"unknown-query": {next(iter(corpus)): 1.0}})
    with pytest.raises(DataError, match="ranks none of the training queries"):
        NEGATIVES.build("static", {"run": str(tmp_path / "none.run")}).mine(corpus, queries, qrels, None, "")


def test_static_negatives_mined_by_a_model_with_a_relative_margin(scifact, minilm_path: Path) -> None:
    """Positive-aware mining with MiniLM on real SciFact: the positives are scored wherever they rank
    (as the encoder scores them alone), and the kept candidates are the top 10 of a ranking four times
    as deep once those above 95% of the best positive's score are out."""
    corpus, queries, qrels = _subset(scifact, 8, 150)
    depth = 10
    # the model being fine-tuned: the miner encodes at its lengths (abstracts cut at 128 tokens, for speed)
    miner = DualEncoder.from_pretrained(minilm_path, document_max_length=128)
    deep = NEGATIVES.build("static", {"model": str(minilm_path), "depth": 4 * depth, "batch_size": 32}).mine(
        corpus, queries, qrels, miner, "")
    filtered = NEGATIVES.build("static", {"model": str(minilm_path), "depth": depth, "batch_size": 32,
                                          "relative_margin": 0.05}).mine(corpus, queries, qrels, miner, "")
    _assert_no_positive(filtered, qrels)
    run = miner.rank(corpus, queries, 5, batch_size=32, score_also=positives(qrels))
    for qid, judged in qrels.items():
        assert set(judged) <= set(run[qid])  # every positive scored, in the top 5 or not
        document = corpus[next(iter(judged))]
        alone = miner.embed_queries([queries[qid]]) @ miner.embed_documents([document]).T
        assert run[qid][document.id] == pytest.approx(float(alone[0, 0]), abs=1e-4)
        ceiling = 0.95 * max(run[qid][doc] for doc in judged)
        below = [n.id for n in deep.negatives[qid] if n.score <= ceiling]
        assert [n.id for n in filtered.negatives[qid]] == below[:depth]
    summary = filtered.provenance["false_negative_filter"]
    assert summary["ranked_depth"] >= 4 * depth and summary["dropped"] > 0  # MiniLM scores some that close
    assert summary["queries_without_positive_scores"] == 0
    with pytest.raises(ValueError, match="need the miner's scores"):
        NEGATIVES.build("static", {"relative_margin": 0.05}).mine(corpus, queries, qrels, None, "", given=deep)


def _dpr_record(document: Document) -> dict:
    return {"title": document.title, "text": document.text, "passage_id": document.id, "score": 0}


def test_static_negatives_from_a_dpr_file(scifact, tmp_path: Path) -> None:
    corpus, queries, qrels = _subset(scifact, 3, 40)
    extra = [d for d in corpus.values() if all(d.id not in judged for judged in qrels.values())]
    items = []
    for i, (qid, judged) in enumerate(qrels.items()):
        positive = corpus[next(iter(judged))]
        # DPR files can list a passage as a hard negative of one question and the positive of another
        hard = [extra[i], extra[i + 5], corpus[next(iter(qrels[sorted(qrels)[(i + 1) % 3]]))]]
        items.append({"question": queries[qid], "answers": ["x"], "positive_ctxs": [_dpr_record(positive)],
                      "negative_ctxs": [_dpr_record(extra[20])], "hard_negative_ctxs": [_dpr_record(d) for d in hard]})
    items.append({"question": "a question without a positive", "answers": ["y"], "positive_ctxs": []})
    (tmp_path / "dpr.json").write_text(json.dumps(items))
    training = load_training_set(tmp_path / "dpr.json")
    assert len(training.queries) == 3  # the question without a positive is left out, as DPR does
    table = NEGATIVES.build("static").mine(training.corpus, training.queries, training.qrels, None, "",
                                           given=training.given_negatives)
    _assert_no_positive(table, training.qrels)
    first_question = next(iter(training.queries))
    assert [n.id for n in table.negatives[first_question]][:2] == [extra[0].id, extra[5].id]
    assert "hard_negative_ctxs" in table.provenance["source"]


def test_in_batch_adds_no_negatives() -> None:
    strategy = NEGATIVES.build("in_batch")
    table = strategy.mine({}, {"q": "text"}, {"q": {"d": 1}}, None, "")
    assert len(table) == 0 and not strategy.hard_negatives and table.provenance["strategy"] == "in_batch"


def test_every_strategy_is_registered_and_checks_options() -> None:
    assert NEGATIVES.names() == ["ance", "bm25", "in_batch", "static"]
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['top'\].*valid: \['depth', 'k1', 'b'\]"):
        NEGATIVES.build("bm25", {"top": 5})


def test_ance_refresh_follows_the_model(scifact, tmp_path: Path, minilm_path: Path) -> None:
    """Mine with MiniLM, change the model by a few NLL steps on these queries, mine again: the negatives
    move with the model, and each refresh names the checkpoint and step that mined it."""
    corpus, queries, qrels = _subset(scifact, 6, 120)
    first = NegativeTable.load(ance_refresh(minilm_path, corpus, queries, qrels, tmp_path / "refresh-0", top=20,
                                            step=0, document_max_length=48))
    _assert_no_positive(first, qrels)
    assert first.provenance["checkpoint"] == str(minilm_path) and first.provenance["step"] == 0
    assert first.provenance["strategy"] == "ance" and first.provenance["depth"] == 20

    torch.manual_seed(0)
    model = DualEncoder.from_pretrained(minilm_path, NLLLoss(), document_max_length=48)
    data = FinetuneData(TrainingSet(corpus, queries, qrels, "SciFact subset"), first, tmp_path / "refresh-0", tmp_path,
                        negatives_per_query=1, seed=0)
    collate = FinetuneCollator(model.tokenizer, 32, 48, data.relevant)
    # the 30k-row embedding matrix stays frozen: its gradient would be most of this test's time
    model.query_encoder.embeddings.requires_grad_(False)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-4)
    losses = []
    for step in range(2):
        batch = collate(data.dataset(step))
        output = model(**batch)
        output.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(output.loss.item())
    model.save(tmp_path / "step-2")
    second = NegativeTable.load(ance_refresh(tmp_path / "step-2", corpus, queries, qrels, tmp_path / "refresh-2",
                                             top=20, step=2, document_max_length=48))
    _assert_no_positive(second, qrels)
    assert second.provenance["checkpoint"] == str(tmp_path / "step-2") and second.provenance["step"] == 2
    assert changed_share(first, second) > 0, losses
    assert [n.id for n in first.negatives[next(iter(qrels))]] != [n.id for n in second.negatives[next(iter(qrels))]]

