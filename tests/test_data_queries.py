"""Queries and qrels: BEIR SciFact from ../shared/data; MS MARCO / TREC formats written here in their real
layout (queries and judgements below are real MS MARCO dev and TREC DL 2019 lines)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import check_data_error, write

from seedr.data.queries import read_qrels, read_queries, sample_queries, write_qrels, write_queries
from seedr.io import DataError

MSMARCO_QUERIES = ("1048585\twhat is paula deen's brother\n2\tAndrogen receptor define\n"
                   "524332\ttreasure of the sierra madre\n")
TREC_DL_QRELS = "19335 0 1017759 0\n19335 0 1082489 0\n19335 0 109063 3\n1037798 0 1034183 2\n"


# --------------------------------------------------------------------------------------- real SciFact


@pytest.fixture(scope="module")
def scifact(shared_data: Path) -> Path:
    return shared_data / "scifact"


@pytest.fixture(scope="module")
def scifact_corpus_ids(scifact: Path) -> set[str]:
    with open(scifact / "corpus.jsonl", encoding="utf-8") as stream:
        return {str(json.loads(line)["_id"]) for line in stream}


def test_scifact_queries(scifact: Path) -> None:
    queries = read_queries(scifact / "queries.jsonl")
    assert len(queries) == 1109  # every claim of the release; 809 + 300 of them have judgements
    assert queries["0"] == "0-dimensional biomaterials lack inductive properties."
    assert read_queries(scifact / "queries.jsonl", format="beir") == queries


@pytest.mark.parametrize(("split", "judgements", "query_count"), [("train", 919, 809), ("test", 339, 300)])
def test_scifact_qrels_match_beir_counts_and_ids(scifact: Path, scifact_corpus_ids: set[str], split: str,
                                                 judgements: int, query_count: int) -> None:
    queries = read_queries(scifact / "queries.jsonl")
    qrels = read_qrels(scifact / "qrels" / f"{split}.tsv", queries=queries, documents=scifact_corpus_ids)
    assert len(qrels) == query_count
    assert sum(len(judged) for judged in qrels.values()) == judgements
    assert {relevance for judged in qrels.values() for relevance in judged.values()} == {1}
    assert read_qrels(scifact / "qrels" / f"{split}.tsv", format="beir") == qrels


def test_scifact_train_and_test_queries_are_disjoint(scifact: Path) -> None:
    train, test = (read_qrels(scifact / "qrels" / f"{split}.tsv") for split in ("train", "test"))
    assert not set(train) & set(test)
    assert test["1"] == {"31715818": 1}


# -------------------------------------------------------------------------------- MS MARCO / TREC files


def test_msmarco_queries_tsv(tmp_path: Path) -> None:
    path = write(tmp_path / "queries.dev.small.tsv", MSMARCO_QUERIES)
    queries = read_queries(path)
    assert queries == {"1048585": "what is paula deen's brother", "2": "Androgen receptor define",
                       "524332": "treasure of the sierra madre"}
    assert list(queries) == ["1048585", "2", "524332"]  # file order
    assert read_queries(path, format="tsv") == queries


def test_trec_qrels_keep_graded_and_zero_labels(tmp_path: Path) -> None:
    path = write(tmp_path / "2019qrels-pass.txt", TREC_DL_QRELS)
    qrels = read_qrels(path)
    assert qrels == {"19335": {"1017759": 0, "1082489": 0, "109063": 3}, "1037798": {"1034183": 2}}
    assert read_qrels(path, format="trec") == qrels


def test_tab_separated_trec_qrels(tmp_path: Path) -> None:
    # MS MARCO's qrels.dev.tsv is TREC qrels with tabs.
    path = write(tmp_path / "qrels.dev.tsv", "1102432\t0\t2026790\t1\n1102431\t0\t7066866\t1\n")
    assert read_qrels(path) == {"1102432": {"2026790": 1}, "1102431": {"7066866": 1}}


def test_gzipped_queries(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "queries.tsv.gz"
    path.write_bytes(gzip.compress(MSMARCO_QUERIES.encode()))
    assert len(read_queries(path)) == 3


def test_repeated_identical_judgement_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path / "qrels.txt", "1 0 d1 1\n1 0 d1 1\n")
    assert read_qrels(path) == {"1": {"d1": 1}}


# ------------------------------------------------------------------------------------------ round trips


def test_queries_round_trip(scifact: Path, tmp_path: Path) -> None:
    queries = read_queries(scifact / "queries.jsonl")
    write_queries(tmp_path / "queries.jsonl", queries)
    assert read_queries(tmp_path / "queries.jsonl") == queries
    first = json.loads((tmp_path / "queries.jsonl").read_text().splitlines()[0])
    assert first == {"_id": "0", "text": queries["0"]}


@pytest.mark.parametrize("format", ["trec", "beir"])
def test_qrels_round_trip(scifact: Path, tmp_path: Path, format: str) -> None:
    qrels = read_qrels(scifact / "qrels" / "test.tsv") | read_qrels(write(tmp_path / "dl.txt", TREC_DL_QRELS))
    write_qrels(tmp_path / "qrels.out", qrels, format=format)
    assert read_qrels(tmp_path / "qrels.out") == qrels  # auto-detected
    assert read_qrels(tmp_path / "qrels.out", format=format) == qrels
    first = (tmp_path / "qrels.out").read_text().splitlines()[0]
    assert first == ("query-id\tcorpus-id\tscore" if format == "beir" else "1 0 31715818 1")


def test_writers_reject_ids_the_format_cannot_hold_and_leave_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "qrels.txt", TREC_DL_QRELS)
    with pytest.raises(ValueError, match="whitespace"):
        write_qrels(path, {"q 1": {"d1": 1}}, format="trec")
    with pytest.raises(ValueError, match="tab"):
        write_qrels(path, {"q1": {"d\t1": 1}}, format="beir")
    assert path.read_text() == TREC_DL_QRELS
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qrels.txt"]  # no temporary left behind


def test_unknown_format_lists_the_valid_ones(tmp_path: Path) -> None:
    path = write(tmp_path / "queries.tsv", MSMARCO_QUERIES)
    with pytest.raises(KeyError, match="beir, tsv"):
        read_queries(path, format="xml")
    with pytest.raises(KeyError, match="beir, trec"):
        write_qrels(tmp_path / "out", {}, format="csv")


# ----------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(("name", "text", "line", "field", "reason"), [
    ("queries.jsonl", '{"_id": "1", "text": "a claim"}\n{"_id": "2", "text": "a claim\n', 2, None,
     "malformed JSON"),
    ("queries.jsonl", '{"_id": "1", "text": "a claim"}\n{"text": "no id"}\n', 2, "_id", "missing"),
    ("queries.jsonl", '{"_id": "1", "text": "a claim"}\n{"_id": "2", "text": "  "}\n', 2, "text", "empty"),
    ("queries.jsonl", '{"_id": "1", "text": "a"}\n{"_id": "7", "text": "b"}\n{"_id": "1", "text": "c"}\n', 3,
     "_id", "duplicate _id '1' (first on line 1)"),
    ("queries.tsv", "1\twhat is a\n1\twhat is b\n", 2, "qid", "duplicate qid '1' (first on line 1)"),
    ("queries.tsv", "1\twhat is a\n2\twhat\tis b\n", 2, None, "expected 2 tab-separated columns"),
    ("queries.tsv", "1\twhat is a\n2\t\n", 2, "text", "empty"),
    ("queries.tsv", b"1\twhat is a\n2\twhat is \xff\n", 2, None, "not UTF-8"),
])
def test_bad_queries(tmp_path: Path, name: str, text: str | bytes, line: int, field: str | None,
                     reason: str) -> None:
    path = write(tmp_path / name, text)
    with pytest.raises(DataError) as info:
        read_queries(path)
    check_data_error(info, path, line, field, reason)


BEIR_HEADER = "query-id\tcorpus-id\tscore\n"


@pytest.mark.parametrize(("name", "text", "line", "field", "reason"), [
    ("test.tsv", BEIR_HEADER + "1\t31715818\t1\n3\t14717500\tyes\n", 3, "score",
     "must be an integer, got 'yes'"),
    ("test.tsv", BEIR_HEADER + "1\t31715818\t1\n3\t14717500\t1.5\n", 3, "score", "must be an integer"),
    ("test.tsv", BEIR_HEADER + "1\t31715818\t1\n3\t14717500\n", 3, None, "expected 3 tab-separated columns"),
    ("test.tsv", BEIR_HEADER + "1\t31715818\t1\n1\t31715818\t0\n", 3, "score", "judged 1 earlier and 0 here"),
    ("test.tsv", BEIR_HEADER + "1\t\t1\n", 2, "corpus-id", "empty"),
    ("qrels.txt", "1 0 d1 1\n1 0 d2\n", 2, None, "expected 4 whitespace-separated columns"),
    ("qrels.txt", "1 0 d1 1\n1 0 d2 high\n", 2, "relevance", "must be an integer"),
    ("qrels.txt", b"1 0 d1 1\n1 0 d\xe92 1\n", 2, None, "not UTF-8"),
    ("qrels.txt", "1 0 d1\n", 1, None, "cannot tell the qrels format"),
])
def test_bad_qrels(tmp_path: Path, name: str, text: str | bytes, line: int, field: str | None,
                   reason: str) -> None:
    path = write(tmp_path / name, text)
    with pytest.raises(DataError) as info:
        read_qrels(path)
    check_data_error(info, path, line, field, reason)


@pytest.mark.parametrize(("text", "line", "field", "unknown"), [
    (BEIR_HEADER + "1\t31715818\t1\n99999\t31715818\t1\n", 3, "query-id", "unknown query '99999'"),
    (BEIR_HEADER + "1\t31715818\t1\n1\t1\t1\n", 3, "corpus-id", "unknown document '1'"),
])
def test_qrels_naming_unknown_queries_or_documents(scifact: Path, scifact_corpus_ids: set[str],
                                                   tmp_path: Path, text: str, line: int, field: str,
                                                   unknown: str) -> None:
    path = write(tmp_path / "test.tsv", text)
    queries = read_queries(scifact / "queries.jsonl")
    with pytest.raises(DataError) as info:
        read_qrels(path, queries=list(queries), documents=scifact_corpus_ids)
    check_data_error(info, path, line, field, unknown)
    assert read_qrels(path)  # without the id sets, the same file reads


def test_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path / "queries.tsv", "\n\n")
    with pytest.raises(DataError, match="empty"):
        read_queries(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such file"):
        read_qrels(tmp_path / "absent.tsv")


# ------------------------------------------------------------------------------------ few-shot samples


def test_sampling_is_deterministic_and_order_independent(scifact: Path) -> None:
    qids = list(read_qrels(scifact / "qrels" / "train.tsv"))
    sample = sample_queries(qids, count=100, seed=3)
    assert sample == sample_queries(reversed(qids), count=100, seed=3)
    assert len(sample) == len(set(sample)) == 100
    assert set(sample) <= set(qids)
    assert sample != sample_queries(qids, count=100, seed=4)


def test_samples_are_nested_across_sizes(scifact: Path) -> None:
    qids = list(read_qrels(scifact / "qrels" / "train.tsv"))
    for seed in (0, 1, 2):  # CPDAE averages three runs with different samples
        small, medium, large = (sample_queries(qids, fraction=f, seed=seed) for f in (0.01, 0.05, 0.8))
        assert (len(small), len(medium), len(large)) == (8, 40, 647)  # round(f * 809)
        assert large[:len(medium)] == medium and medium[:len(small)] == small
        assert sample_queries(qids, count=40, seed=seed) == medium


def test_sampling_arguments() -> None:
    qids = ["q1", "q2", "q3"]
    assert len(sample_queries(qids, fraction=0.01)) == 1  # a fraction keeps at least one query
    assert sorted(sample_queries(qids, fraction=1.0)) == qids
    with pytest.raises(ValueError, match="exactly one"):
        sample_queries(qids)
    with pytest.raises(ValueError, match="exactly one"):
        sample_queries(qids, fraction=0.5, count=1)
    with pytest.raises(ValueError, match="cannot draw 4 of 3"):
        sample_queries(qids, count=4)
    with pytest.raises(ValueError, match="fraction must be in"):
        sample_queries(qids, fraction=0)
    with pytest.raises(ValueError, match="duplicates"):
        sample_queries(["q1", "q1"], count=1)
