"""Hugging Face datasets and parquet as corpora, queries and qrels (issue 42): parquet and Arrow files,
``save_to_disk`` folders (a ``Dataset``, a ``DatasetDict``) and rows in memory (a ``Dataset``, a pandas
``DataFrame``, a list of dicts), all built from real SciFact (its test queries, their judgements, the
abstracts they judge and 100 others), read to exactly what the BEIR JSONL/TSV originals give; a missing
column is one line naming the input and the field; ``seedr search`` and ``seedr evaluate`` take them."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pandas as pd
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
from helpers import check_data_error
from typer.testing import CliRunner

from seedr.cli import app
from seedr.data.corpus import (
    count_documents,
    load_corpus,
    materialize_corpus,
    read_corpus,
    read_corpus_articles,
)
from seedr.data.inputs import input_files
from seedr.data.queries import read_qrels, read_queries
from seedr.io import DataError

runner = CliRunner()


@pytest.fixture(scope="module", autouse=True)
def _quiet_datasets():
    datasets.disable_progress_bars()  # save_to_disk's bars would fill the test log
    yield
    datasets.enable_progress_bars()


@pytest.fixture(scope="module")
def beir(shared_data: Path, tmp_path_factory) -> dict:
    """The SciFact slice as BEIR files (the originals) and as the rows Hugging Face's BEIR data sets hold."""
    source = shared_data / "scifact"
    qrels_lines = (source / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    judgements = [line.split("\t") for line in qrels_lines[1:]]
    judged = {docid for _, docid, _ in judgements}
    documents = [json.loads(line) for line in (source / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    others = [document for document in documents if document["_id"] not in judged][:100]
    corpus = [document for document in documents if document["_id"] in judged] + others
    asked = {qid for qid, _, _ in judgements}
    queries = [query for query in map(json.loads, (source / "queries.jsonl").read_text(encoding="utf-8").splitlines())
               if query["_id"] in asked]
    folder = tmp_path_factory.mktemp("beir")
    (folder / "corpus.jsonl").write_text("".join(json.dumps(row) + "\n" for row in corpus), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(row) + "\n" for row in queries), encoding="utf-8")
    (folder / "qrels.tsv").write_text("\n".join([qrels_lines[0], *map("\t".join, judgements)]) + "\n",
                                      encoding="utf-8")
    qrels = [{"query-id": qid, "corpus-id": docid, "score": int(score)} for qid, docid, score in judgements]
    return {"folder": folder, "corpus": corpus, "queries": queries, "qrels": qrels,
            "documents": list(read_corpus(folder / "corpus.jsonl")), "texts": read_queries(folder / "queries.jsonl"),
            "judgements": read_qrels(folder / "qrels.tsv")}


def test_the_slice_is_what_it_says(beir):
    assert len(beir["texts"]) == 300 and sum(map(len, beir["judgements"].values())) == 339
    assert len(beir["documents"]) == 283 + 100  # the abstracts judged, and 100 others


def _parquet(path: Path, rows: list[dict], row_group_size: int = 64) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=row_group_size)  # several row groups
    return path


def test_parquet_reads_as_the_beir_files(beir, tmp_path):
    corpus = _parquet(tmp_path / "corpus.parquet", beir["corpus"])
    assert list(read_corpus(corpus)) == beir["documents"]
    assert count_documents(corpus) == len(beir["documents"])
    assert read_queries(_parquet(tmp_path / "queries.parquet", beir["queries"])) == beir["texts"]
    assert read_qrels(_parquet(tmp_path / "qrels.parquet", beir["qrels"])) == beir["judgements"]
    # other names of the columns, numeric ids (SciFact's are numbers): the same records
    renamed = [{"docid": int(row["_id"]), "text": row["text"], "title": row["title"]} for row in beir["corpus"]]
    assert list(read_corpus(_parquet(tmp_path / "docid.parquet", renamed))) == beir["documents"]
    trec = [{"qid": int(row["query-id"]), "docid": int(row["corpus-id"]), "relevance": row["score"]}
            for row in beir["qrels"]]
    assert read_qrels(_parquet(tmp_path / "trec.parquet", trec)) == beir["judgements"]
    # a folder of parquet shards, as the Hub has them; and Arrow (Feather) files
    (tmp_path / "shards").mkdir()
    _parquet(tmp_path / "shards" / "corpus-00000-of-00002.parquet", beir["corpus"][:200])
    _parquet(tmp_path / "shards" / "corpus-00001-of-00002.parquet", beir["corpus"][200:])
    assert list(read_corpus(tmp_path / "shards")) == beir["documents"]
    feather.write_feather(pa.Table.from_pylist(beir["corpus"]), tmp_path / "corpus.arrow")
    assert list(read_corpus(tmp_path / "corpus.arrow")) == beir["documents"]
    # a flat document becomes an article, as from the JSONL
    assert list(read_corpus_articles(corpus)) == list(read_corpus_articles(beir["folder"] / "corpus.jsonl"))


def test_save_to_disk_folders_are_one_input(beir, tmp_path):
    corpus = datasets.Dataset.from_list(beir["corpus"])
    corpus.save_to_disk(tmp_path / "corpus", max_shard_size="100KB")
    assert len(list((tmp_path / "corpus").glob("data-*.arrow"))) > 1  # shards of one data set ...
    assert input_files(tmp_path / "corpus") == [tmp_path / "corpus"]  # ... read as one input
    assert list(read_corpus(tmp_path / "corpus")) == beir["documents"]
    assert count_documents(tmp_path / "corpus") == len(beir["documents"])
    # BEIR's Hugging Face layout: the split named after the kind of input
    splits = datasets.DatasetDict({"corpus": corpus, "queries": datasets.Dataset.from_list(beir["queries"])})
    splits.save_to_disk(tmp_path / "scifact")
    assert list(read_corpus(tmp_path / "scifact")) == beir["documents"]
    assert read_queries(tmp_path / "scifact") == beir["texts"]
    assert input_files(tmp_path / "scifact", "queries") == [tmp_path / "scifact"]
    # qrels in BEIR's train/test splits: which one is for the user to say
    test = datasets.Dataset.from_list(beir["qrels"])
    datasets.DatasetDict({"train": test.select(range(10)), "test": test}).save_to_disk(tmp_path / "qrels")
    with pytest.raises(DataError) as info:
        read_qrels(tmp_path / "qrels")
    check_data_error(info, tmp_path / "qrels", None, None, "holds the splits train, test")
    assert f"e.g. {tmp_path / 'qrels' / 'train'}" in str(info.value)
    assert read_qrels(tmp_path / "qrels" / "test") == beir["judgements"]
    datasets.DatasetDict({"test": test}).save_to_disk(tmp_path / "test-only")
    assert read_qrels(tmp_path / "test-only") == beir["judgements"]  # the only split


def test_rows_in_memory_read_as_the_files(beir):
    documents, texts, judgements = beir["documents"], beir["texts"], beir["judgements"]
    for corpus in (datasets.Dataset.from_list(beir["corpus"]), pd.DataFrame(beir["corpus"]), beir["corpus"],
                   iter(beir["corpus"]), datasets.DatasetDict({"corpus": datasets.Dataset.from_list(beir["corpus"])})):
        assert list(read_corpus(corpus)) == documents, type(corpus)
    assert count_documents(beir["corpus"]) == len(documents) and count_documents(iter(beir["corpus"])) is None
    for queries in (datasets.Dataset.from_list(beir["queries"]), pd.DataFrame(beir["queries"]), beir["queries"]):
        assert read_queries(queries) == texts, type(queries)
    for qrels in (datasets.Dataset.from_list(beir["qrels"]), pd.DataFrame(beir["qrels"]), beir["qrels"]):
        assert read_qrels(qrels) == judgements, type(qrels)
    # a title missing from some rows (None in a Dataset, NaN in a DataFrame) is an empty title
    untitled = [{**row, "title": None} if index % 2 else row for index, row in enumerate(beir["corpus"])]
    expected = [document if index % 2 == 0 else type(document)(document.id, document.text, "")
                for index, document in enumerate(documents)]
    assert list(read_corpus(pd.DataFrame(untitled))) == expected
    assert list(read_corpus(datasets.Dataset.from_list(untitled))) == expected
    # checked as the files are: the ids of the queries and documents judged
    assert read_qrels(beir["qrels"], queries=texts, documents=load_corpus(beir["corpus"])) == judgements


def test_an_in_memory_corpus_becomes_a_seedr_file(beir, tmp_path):
    written = materialize_corpus(datasets.Dataset.from_list(beir["corpus"]), tmp_path / "corpus.jsonl")
    assert written == tmp_path / "corpus.jsonl"
    assert json.loads(written.read_text(encoding="utf-8").splitlines()[0]).keys() == {"id", "title", "text"}
    assert list(read_corpus(written)) == beir["documents"]


def test_a_missing_column_is_one_line_naming_input_and_field(beir, tmp_path):
    no_text = _parquet(tmp_path / "no-text.parquet", [{"_id": row["_id"], "title": row["title"]}
                                                       for row in beir["corpus"]])
    with pytest.raises(DataError) as info:
        list(read_corpus(no_text))
    check_data_error(info, no_text, None, "text", "no such column; its columns: _id, title")
    no_id = _parquet(tmp_path / "no-id.parquet", [{"title": row["title"], "text": row["text"]}
                                                   for row in beir["corpus"]])
    with pytest.raises(DataError) as info:
        count_documents(no_id)
    check_data_error(info, no_id, None, "_id", "nor 'id', 'docid', 'doc_id'; its columns: title, text")
    no_score = _parquet(tmp_path / "no-score.parquet", [{k: row[k] for k in ("query-id", "corpus-id")}
                                                         for row in beir["qrels"]])
    with pytest.raises(DataError) as info:
        read_qrels(no_score)
    check_data_error(info, no_score, None, "score", "its columns: query-id, corpus-id")
    datasets.Dataset.from_list([{"_id": row["_id"], "question": row["text"]} for row in beir["queries"]]
                               ).save_to_disk(tmp_path / "questions")
    with pytest.raises(DataError) as info:
        read_queries(tmp_path / "questions")
    check_data_error(info, tmp_path / "questions", None, "text", "its columns: _id, question")
    with pytest.raises(DataError) as info:
        read_queries(pd.DataFrame(beir["queries"]).drop(columns="text"))
    check_data_error(info, "<DataFrame>", None, "text")


def test_a_bad_row_in_memory_is_named_by_its_number(beir):
    rows = [*beir["corpus"][:5], {"_id": "1", "title": "No text"}, *beir["corpus"][5:]]
    with pytest.raises(DataError) as info:
        list(read_corpus(rows))
    check_data_error(info, "<list>", 6, "text", "missing")
    repeated = [*beir["corpus"][:3], beir["corpus"][1]]
    with pytest.raises(DataError) as info:
        list(read_corpus(datasets.Dataset.from_list(repeated)))
    check_data_error(info, "<Dataset>", 4, "_id", f"duplicate _id {beir['corpus'][1]['_id']!r} (first on line 2)")
    graded = [*beir["qrels"][:2], {**beir["qrels"][2], "score": 0.5}]
    with pytest.raises(DataError) as info:
        read_qrels(pd.DataFrame(graded))
    check_data_error(info, "<DataFrame>", 3, "score", "relevance must be an integer, got '0.5'")
    with pytest.raises(DataError) as info:
        read_queries([*beir["queries"][:2], "what is a query?"])
    check_data_error(info, "<list>", 3, None, "expected a row of named columns (a mapping), got str")
    with pytest.raises(DataError) as info:
        read_queries({"0": "a dict of texts"})
    check_data_error(info, "<dict>", None, None, "cannot read queries from it")
    with pytest.raises(DataError) as info:
        list(read_corpus(beir["documents"]))  # records, not rows of named columns
    check_data_error(info, "<list>", None, None, "holds a Document: give corpus files, or rows of named columns")


def test_damaged_table_files_are_data_errors(beir, tmp_path):
    whole = _parquet(tmp_path / "whole.parquet", beir["corpus"]).read_bytes()
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(DataError) as info:
        list(read_corpus(cut))
    check_data_error(info, cut, None, None, "truncated or corrupt parquet file (Parquet magic bytes not found")
    datasets.Dataset.from_list(beir["corpus"]).save_to_disk(tmp_path / "corpus")
    shard = next((tmp_path / "corpus").glob("data-*.arrow"))
    shard.write_bytes(shard.read_bytes()[:20_000])
    with pytest.raises(DataError) as info:
        list(read_corpus(tmp_path / "corpus"))
    assert str(info.value).startswith(f"{tmp_path / 'corpus'}, line ") and "truncated or corrupt" in str(info.value)
    shard.unlink()
    with pytest.raises(DataError) as info:
        list(read_corpus(tmp_path / "corpus"))
    check_data_error(info, shard, None, None, "no such file")


def test_a_saved_dataset_reads_only_its_own_files(beir, tmp_path):
    """#58 item 8: a ``save_to_disk`` folder whose state.json names ``../other/data-….arrow`` (or an
    absolute path) had another dataset's rows read as its corpus."""
    datasets.Dataset.from_list(beir["corpus"][:5]).save_to_disk(tmp_path / "other")
    datasets.Dataset.from_list(beir["corpus"]).save_to_disk(tmp_path / "corpus")
    state_path = tmp_path / "corpus" / "state.json"
    state = json.loads(state_path.read_text())
    other = next((tmp_path / "other").glob("data-*.arrow"))
    for name in (f"../other/{other.name}", str(other)):
        state["_data_files"] = [{"filename": name}]
        state_path.write_text(json.dumps(state))
        with pytest.raises(DataError, match="lies outside the folder") as info:
            list(read_corpus(tmp_path / "corpus"))
        check_data_error(info, state_path, None, "_data_files", "lies outside the folder")


def seedr(*args: str | Path):
    return runner.invoke(app, [str(arg) for arg in args])


def test_search_and_evaluate_take_parquet(beir, tmp_path):
    corpus = _parquet(tmp_path / "corpus.parquet", beir["corpus"])
    queries = _parquet(tmp_path / "queries.parquet", beir["queries"])
    qrels = _parquet(tmp_path / "qrels.parquet", beir["qrels"])
    result = seedr("search", "--bm25", "--corpus", corpus, "--queries", queries, "--out", tmp_path / "tables.trec")
    assert result.exit_code == 0, result.output
    folder = beir["folder"]
    result = seedr("search", "--bm25", "--corpus", folder / "corpus.jsonl", "--queries", folder / "queries.jsonl",
                   "--out", tmp_path / "files.trec")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "tables.trec").read_text() == (tmp_path / "files.trec").read_text()
    scores = {}
    for name, judgements in (("tables", qrels), ("files", folder / "qrels.tsv")):
        result = seedr("evaluate", tmp_path / "tables.trec", "--qrels", judgements, "--json", tmp_path / f"{name}.json")
        assert result.exit_code == 0, result.output
        scores[name] = json.loads((tmp_path / f"{name}.json").read_text())["metrics"]
    assert scores["tables"] == scores["files"] and scores["tables"]["nDCG@10"] > 0.5  # BM25 on SciFact
    no_text = _parquet(tmp_path / "no-text.parquet", [{"_id": row["_id"]} for row in beir["corpus"]])
    result = seedr("search", "--bm25", "--corpus", no_text, "--queries", queries, "--out", tmp_path / "x.trec")
    assert result.exit_code == 1 and "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert errors == [f"error: {no_text}: field 'text': no such column; its columns: _id"], result.output
    assert not (tmp_path / "x.trec").exists()
