"""The case study of SEED-Encoder's Table 5: queries on which two systems disagree, from two small TREC
runs written by hand over real SciFact queries, judgements and abstracts."""

from __future__ import annotations

import pytest
from helpers import write

from seedr.data.corpus import load_corpus
from seedr.data.queries import read_qrels, read_queries
from seedr.data.runs import read_trec_run
from seedr.evaluation.case_study import case_study, case_study_markdown, first_relevant_rank

QUERIES = ("1", "3", "5", "13", "36", "42")  # SciFact test queries; 36 has two relevant abstracts
# 4983, 5836 and 7912 are judged for none of them.
SEED_RUN = """\
1 Q0 31715818 1 3.0 seed
1 Q0 4983 2 2.0 seed
3 Q0 14717500 1 3.0 seed
3 Q0 5836 2 1.0 seed
5 Q0 13734012 1 5.0 seed
5 Q0 4983 2 4.0 seed
13 Q0 4983 1 9.0 seed
13 Q0 5836 2 8.0 seed
13 Q0 7912 3 7.0 seed
13 Q0 1606628 4 6.0 seed
36 Q0 11705328 1 2.0 seed
36 Q0 4983 2 1.0 seed
42 Q0 4983 1 1.0 seed
42 Q0 5836 2 0.5 seed
"""
# Query 3 is missing (nothing retrieved); query 36's first two documents tie: 5836 ranks first (id order).
MLM_RUN = """\
1 Q0 4983 1 0.9 mlm
1 Q0 5836 2 0.8 mlm
1 Q0 31715818 3 0.7 mlm
5 Q0 13734012 1 0.5 mlm
13 Q0 1606628 1 0.9 mlm
13 Q0 4983 2 0.1 mlm
36 Q0 7912 1 0.5 mlm
36 Q0 5836 2 0.5 mlm
36 Q0 5152028 3 0.4 mlm
42 Q0 18174210 1 1.0 mlm
"""


@pytest.fixture(scope="module")
def scifact(shared_data):
    folder = shared_data / "scifact"
    qrels = read_qrels(folder / "qrels" / "test.tsv")
    qrels = {qid: judged for qid, judged in qrels.items() if qid in QUERIES}
    return qrels, read_queries(folder / "queries.jsonl"), load_corpus(folder / "corpus.jsonl")


@pytest.fixture
def runs(tmp_path):
    return {"seed": read_trec_run(write(tmp_path / "seed.trec", SEED_RUN)),
            "mlm": read_trec_run(write(tmp_path / "mlm.trec", MLM_RUN))}


def test_first_relevant_rank_follows_seedr_rank_order(runs):
    assert first_relevant_rank(runs["seed"]["13"], {"1606628"}) == 4
    assert first_relevant_rank(runs["mlm"]["36"], {"5152028", "11705328"}) == 3
    assert first_relevant_rank(runs["seed"]["42"], {"18174210"}) is None
    assert first_relevant_rank({}, {"18174210"}) is None


def test_wins_both_ways_largest_disagreement_first_ties_by_query_id(runs, scifact):
    qrels, queries, corpus = scifact
    study = case_study(runs, qrels, queries, corpus, count=2)
    assert study["systems"] == ["seed", "mlm"] and study["judged_queries"] == 6
    seed, mlm = study["wins"]["seed"], study["wins"]["mlm"]
    # seed wins 3 (mlm retrieved nothing), then 1 and 36 (mlm's first relevant at 3: tied, by id); 5 agrees
    assert seed["total"] == 3 and [case["query_id"] for case in seed["cases"]] == ["3", "1"]
    assert mlm["total"] == 2 and [case["query_id"] for case in mlm["cases"]] == ["42", "13"]
    assert [case["first_relevant"] for case in seed["cases"]] == [{"seed": 1, "mlm": None},
                                                                   {"seed": 1, "mlm": 3}]
    assert [case["first_relevant"] for case in mlm["cases"]] == [{"seed": None, "mlm": 1},
                                                                  {"seed": 4, "mlm": 1}]
    every = case_study(runs, qrels, queries, corpus, count=5)["wins"]["seed"]["cases"]
    assert [case["query_id"] for case in every] == ["3", "1", "36"]

    first = seed["cases"][1]  # query 1
    assert first["query"] == queries["1"] == "0-dimensional biomaterials show inductive properties."
    assert first["top"]["seed"]["id"] == "31715818" and first["top"]["seed"]["relevant"]
    top = first["top"]["mlm"]
    assert (top["id"], top["relevant"], top["title"]) == ("4983", False, corpus["4983"].title)
    assert top["snippet"] == " ".join(corpus["4983"].text.split()[:30]) + " …"
    assert seed["cases"][0]["top"]["mlm"] is None  # query 3: nothing retrieved
    assert every[2]["top"]["mlm"]["id"] == "5836"  # query 36: a score tie with 7912, the lower id first


def test_markdown_is_table_5_side_by_side(runs, scifact):
    qrels, queries, corpus = scifact
    study = case_study(runs, qrels, queries, corpus, count=2)
    markdown = case_study_markdown(study)
    lines = markdown.splitlines()
    header = "| query | seed: top document | mlm: top document | seed: first relevant | mlm: first relevant |"
    assert lines[0] == "#### seed ranks a relevant document first, mlm does not"
    assert "3 of 6 judged queries; the 2 with mlm's first relevant document ranked lowest:" in lines
    assert lines.count(header) == 2 and lines.count("|---|---|---|---:|---:|") == 2
    rows = [line for line in lines if line.startswith("| ") and line != header]
    shown = ("3", "1", "42", "13")
    assert [row.split(" | ")[0] for row in rows] == [f"| {queries[qid]} ({qid})" for qid in shown]
    assert rows[0].endswith("| (nothing retrieved) | 1 | not retrieved |")
    assert rows[1].count("✓ relevant: ") == 1 and rows[1].count("✗ not relevant: ") == 1
    assert f"✗ not relevant: **{corpus['4983'].title}** " in rows[1]
    assert rows[1].endswith(" (4983) | 1 | 3 |")
    assert rows[3].endswith(" | 4 | 1 |")
    assert markdown.index("#### mlm ranks a relevant document first, seed does not") > markdown.index(rows[1])
    assert case_study_markdown(case_study(runs, qrels, queries, corpus, count=2)) == markdown  # deterministic

    # a query's own "|" stays inside its cell
    piped = case_study(runs, qrels, {**queries, "3": "genomes | variants"}, corpus, count=1)
    assert "| genomes \\| variants (3) |" in case_study_markdown(piped)


def test_clear_errors(runs, scifact):
    qrels, queries, corpus = scifact
    with pytest.raises(ValueError, match="two systems, got 3"):
        case_study({**runs, "bm25": runs["mlm"]}, qrels, queries, corpus)
    with pytest.raises(ValueError, match="'4983' is not in the corpus"):
        case_study(runs, qrels, queries, {doc: corpus[doc] for doc in ("31715818", "14717500")})
    with pytest.raises(ValueError, match="no text, e.g. '1'"):
        case_study(runs, qrels, {qid: text for qid, text in queries.items() if qid != "1"}, corpus)
