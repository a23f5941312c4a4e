"""The encode → index → search → evaluate stages end to end on a slice of real SciFact, plus the BM25,
QA-coverage and ReQA modes and the error paths."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seedr.cli import app
from seedr.data.articles import read_articles
from seedr.data.corpus import write_corpus
from seedr.data.passages import split_passages
from seedr.data.queries import read_qrels, read_queries, write_qrels, write_queries
from seedr.data.runs import read_trec_run
from seedr.hardware import native_bf16
from seedr.retrieval.encode import TextEncoder

runner = CliRunner()


def seedr(*args: str):
    result = runner.invoke(app, [str(a) for a in args])
    return result


@pytest.fixture(scope="module")
def scifact_slice(shared_data: Path, tmp_path_factory) -> Path:
    """20 SciFact test queries, their relevant abstracts plus 40 others, and their qrels, in BEIR format."""
    source = shared_data / "scifact"
    folder = tmp_path_factory.mktemp("scifact-slice")
    qrels = read_qrels(source / "qrels" / "test.tsv")
    qids = sorted(qrels)[:20]
    relevant = {doc for qid in qids for doc in qrels[qid]}
    documents = [json.loads(line) for line in (source / "corpus.jsonl").read_text().splitlines()]
    others = [d for d in documents if d["_id"] not in relevant][:40]
    kept = [d for d in documents if d["_id"] in relevant] + others
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in kept))
    queries = read_queries(source / "queries.jsonl")
    write_queries(folder / "queries.jsonl", {qid: queries[qid] for qid in qids})
    write_qrels(folder / "qrels.tsv", {qid: qrels[qid] for qid in qids}, format="beir")
    return folder


def test_dense_pipeline_and_comparison_with_bm25(tmp_path, scifact_slice):
    data = scifact_slice
    result = seedr("encode", "--model", "minilm", "--corpus", data / "corpus.jsonl",
                   "--out", tmp_path / "emb", "--max-length", 64, "--shard-size", 25, "--batch-size", 16)
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "emb" / "manifest.json").read_text())
    count = len((data / "corpus.jsonl").read_text().splitlines())  # 60 and a few: some have 2 relevant
    assert manifest["count"] == count and len(manifest["shards"]) == 3
    assert manifest["encoder"]["pooling"] == "mean" and manifest["encoder"]["normalize"]  # MiniLM's own
    # bf16 by default where the CPU computes it natively, recorded, and followed by the query encoder
    assert manifest["encoder"]["compute_dtype"] == ("bfloat16" if native_bf16("cpu") else "float32")
    assert f"computed in {manifest['encoder']['compute_dtype']}" in result.output

    result = seedr("index", "--embeddings", tmp_path / "emb", "--out", tmp_path / "index",
                   "--factory", "HNSW32")
    assert result.exit_code == 0, result.output
    recorded = json.loads((tmp_path / "index" / "index.json").read_text())["encoder"]
    assert recorded["max_length"] == 64
    assert TextEncoder.from_settings(recorded).settings().items() <= recorded.items()  # queries as documents

    result = seedr("search", "--index", tmp_path / "index", "--queries", data / "queries.jsonl",
                   "--out", tmp_path / "dense.trec", "--k", 10, "--ef-search", 64)
    assert result.exit_code == 0, result.output
    dense = read_trec_run(tmp_path / "dense.trec")
    assert len(dense) == 20 and all(len(docs) == 10 for docs in dense.values())
    assert (tmp_path / "dense.trec").read_text().split("\n")[0].endswith(" index")

    result = seedr("search", "--bm25", "--corpus", data / "corpus.jsonl", "--queries", data / "queries.jsonl",
                   "--out", tmp_path / "bm25.trec", "--k", 10, "--bm25-index", tmp_path / "bm25-index")
    assert result.exit_code == 0, result.output
    result = seedr("search", "--bm25", "--bm25-index", tmp_path / "bm25-index",
                   "--queries", data / "queries.jsonl", "--out", tmp_path / "bm25-again.trec", "--k", 10)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "bm25-again.trec").read_text() == (tmp_path / "bm25.trec").read_text()

    result = seedr("evaluate", tmp_path / "dense.trec", "--baseline", tmp_path / "bm25.trec",
                   "--qrels", data / "qrels.tsv", "--metrics", "nDCG@10,MRR@10,R@10", "--test", "ttest",
                   "--json", tmp_path / "compare.json", "--markdown", tmp_path / "compare.md")
    assert result.exit_code == 0, result.output
    assert "bm25 (baseline)" in result.output and "nDCG@10" in result.output
    assert "left out" not in result.output  # every metric is within the runs' 10 documents
    comparison = json.loads((tmp_path / "compare.json").read_text())["comparison"]
    assert comparison["baseline"] == "bm25" and comparison["test"] == "ttest"
    assert set(comparison["systems"]) == {"bm25", "dense"}
    assert 0 < comparison["systems"]["dense"]["nDCG@10"]["mean"] <= 1
    marker, table = (tmp_path / "compare.md").read_text().split("\n", 1)  # marked as seedr's (check_output)
    assert marker == "<!-- seedr evaluate -->" and table.startswith("| system | nDCG@10 | MRR@10 | R@10 |")
    ndcg = comparison["systems"]["dense"]["nDCG@10"]  # the console shows the effect and p, not only marks
    assert f"{ndcg['delta']:+.4f} p={ndcg['p_value']:.2g}" in result.output

    result = seedr("evaluate", tmp_path / "dense.trec", "--qrels", data / "qrels.tsv", "--metrics", "nDCG@10,R@100")
    assert result.exit_code == 0, result.output
    assert "left out R@100: the runs rank at most 10 documents" in " ".join(result.output.split())
    assert "nDCG@10" in result.output and "R@100 " not in result.output.split("left out")[0]
    result = seedr("evaluate", tmp_path / "dense.trec", "--qrels", data / "qrels.tsv", "--metrics", "R@100")
    assert result.exit_code == 1 and "deeper than the runs" in result.output


def test_long_documents_are_searched_by_their_best_passage(tmp_path, scifact_slice):
    data = scifact_slice
    result = seedr("encode", "--model", "minilm", "--corpus", data / "corpus.jsonl",
                   "--out", tmp_path / "emb", "--max-length", 48, "--limit", 8, "--long-documents", "maxp",
                   "--compute-dtype", "float32")  # how bf16 is turned off
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "emb" / "manifest.json").read_text())["encoder"]["compute_dtype"] == "float32"
    ids = (tmp_path / "emb" / "ids-00000.txt").read_text().split()
    assert len(ids) > 8 and all("#" in passage for passage in ids)  # abstracts cut into 48-token passages
    assert seedr("index", "--embeddings", tmp_path / "emb", "--out", tmp_path / "index").exit_code == 0
    result = seedr("search", "--index", tmp_path / "index", "--queries", data / "queries.jsonl",
                   "--out", tmp_path / "maxp.trec", "--k", 5)
    assert result.exit_code == 0, result.output
    run = read_trec_run(tmp_path / "maxp.trec")
    documents = {passage.split("#")[0] for passage in ids}
    assert all(len(docs) == 5 and set(docs) <= documents for docs in run.values())  # documents, not passages


def test_single_run_json_is_flat_metrics(tmp_path, scifact_slice):
    data = scifact_slice
    assert seedr("search", "--bm25", "--corpus", data / "corpus.jsonl", "--queries", data / "queries.jsonl",
                 "--out", tmp_path / "bm25.trec").exit_code == 0
    result = seedr("evaluate", tmp_path / "bm25.trec", "--qrels", data / "qrels.tsv",
                   "--json", tmp_path / "e.json")
    assert result.exit_code == 0, result.output
    written = json.loads((tmp_path / "e.json").read_text())
    # the slice has 60-odd documents, so the run ranks fewer than 100 a query: the deeper metrics are left out
    depth = len((data / "corpus.jsonl").read_text().splitlines())
    assert written["left_out"] == {"metrics": ["MRR@100", "R@100", "R@1000"], "run_depth": depth}
    assert set(written["metrics"]) == {"MRR@10", "R@5", "R@10", "R@20", "R@50", "nDCG@10", "MAP"}
    assert "left out MRR@100, R@100, R@1000" in " ".join(result.output.split())
    assert written["queries"]["bm25"] == {"judged": 20, "evaluated": 20, "missing_from_run": 0,
                                          "unjudged_in_run": 0}


def test_qa_coverage_mode(tmp_path, wiki_shard, shared_data):
    articles = list(itertools.islice(read_articles(wiki_shard), 60))
    write_corpus(tmp_path / "passages.jsonl", split_passages(articles))
    titles = {article.title.lower() for article in articles if len(article.title) > 6}
    lines = [line for line in (shared_data / "nq-open" / "NQ-open.dev.jsonl").read_text().splitlines()
             if any(title in json.loads(line)["question"].lower() for title in titles)]
    (tmp_path / "nq.jsonl").write_text("\n".join(lines) + "\n")
    result = seedr("search", "--bm25", "--corpus", tmp_path / "passages.jsonl",
                   "--questions", tmp_path / "nq.jsonl", "--out", tmp_path / "nq.trec", "--k", 20)
    assert result.exit_code == 0, result.output
    result = seedr("evaluate", tmp_path / "nq.trec", "--qa-answers", tmp_path / "nq.jsonl", "--corpus",
                   tmp_path / "passages.jsonl", "--ks", "5,20", "--json", tmp_path / "qa.json")
    assert result.exit_code == 0, result.output
    coverage = json.loads((tmp_path / "qa.json").read_text())
    assert coverage["questions"] == len(lines)
    assert 0 <= coverage["metrics"]["Top-5"] <= coverage["metrics"]["Top-20"] <= 1


def test_a_qa_run_scored_against_other_questions_is_refused(tmp_path, wiki_shard, shared_data):
    write_corpus(tmp_path / "passages.jsonl", split_passages(itertools.islice(read_articles(wiki_shard), 20)))
    lines = (shared_data / "nq-open" / "NQ-open.dev.jsonl").read_text().splitlines()
    (tmp_path / "asked.jsonl").write_text("\n".join(lines[:40]) + "\n")
    (tmp_path / "other.jsonl").write_text("\n".join(lines[40:80]) + "\n")  # the same ids: lines 1..40
    result = seedr("search", "--bm25", "--corpus", tmp_path / "passages.jsonl", "--questions",
                   tmp_path / "asked.jsonl", "--out", tmp_path / "run.trec", "--k", 5)
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "run.trec.json").read_text())["queries"]
    assert record["kind"] == "questions" and record["count"] == 40
    assert record["files"] == [str(tmp_path / "asked.jsonl")]
    assert len(read_trec_run(tmp_path / "run.trec")) == 40  # the run file itself stays plain TREC

    evaluate = ("evaluate", tmp_path / "run.trec", "--corpus", tmp_path / "passages.jsonl", "--ks", "5")
    result = seedr(*evaluate, "--qa-answers", tmp_path / "other.jsonl")
    assert result.exit_code == 1
    assert "run.trec: the run was searched with other questions (40 from" in result.output
    assert seedr(*evaluate, "--qa-answers", tmp_path / "asked.jsonl").exit_code == 0
    # a copy of the same questions is the same questions
    (tmp_path / "copy.jsonl").write_text((tmp_path / "asked.jsonl").read_text())
    result = seedr(*evaluate, "--qa-answers", tmp_path / "copy.jsonl")
    assert result.exit_code == 0 and "warning" not in result.output
    # a run from another tool has no record: refused, unless --force, which scores it with a warning
    (tmp_path / "run.trec.json").unlink()
    result = seedr(*evaluate, "--qa-answers", tmp_path / "other.jsonl")
    assert result.exit_code == 1 and "cannot be checked against" in result.output and "--force" in result.output
    assert len([line for line in result.output.splitlines() if line.startswith("error:")]) == 1
    result = seedr(*evaluate, "--qa-answers", tmp_path / "other.jsonl", "--force")
    assert result.exit_code == 0 and "warning" in result.output and "cannot be checked against" in result.output


def test_reqa_mode(tmp_path, shared_data):
    with gzip.open(shared_data / "squad" / "squad-dev-v1.1.json.gz", "rt", encoding="utf-8") as stream:
        squad = json.load(stream)
    squad["data"] = squad["data"][:2]
    (tmp_path / "squad.json").write_text(json.dumps(squad))
    result = seedr("search", "--bm25", "--reqa", tmp_path / "squad.json", "--out", tmp_path / "reqa.trec")
    assert result.exit_code == 0, result.output
    result = seedr("evaluate", tmp_path / "reqa.trec", "--reqa", tmp_path / "squad.json",
                   "--json", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "r.json").read_text())["metrics"]
    assert list(metrics) == ["R@1", "R@5", "R@10", "R@50", "R@100", "MRR"]
    assert metrics["R@1"] < metrics["R@100"] <= 1

    squad["data"] = squad["data"][:1]  # dense: (sentence, paragraph) pairs encoded by MiniLM
    squad["data"][0]["paragraphs"] = squad["data"][0]["paragraphs"][:4]
    (tmp_path / "one.json").write_text(json.dumps(squad))
    result = seedr("search", "--model", "minilm", "--max-length", 64, "--reqa", tmp_path / "one.json",
                   "--out", tmp_path / "dense.trec", "--k", 20)
    assert result.exit_code == 0, result.output
    result = seedr("evaluate", tmp_path / "dense.trec", "--reqa", tmp_path / "one.json")
    assert result.exit_code == 0 and "R@1" in result.output


def test_bad_input_is_one_clear_line(tmp_path, scifact_slice):
    bad = tmp_path / "bad.trec"
    bad.write_text("1 Q0 4983 1 12.5 run\n1 Q0 5836 2 twelve run\n")
    result = seedr("evaluate", bad, "--qrels", scifact_slice / "qrels.tsv")
    assert result.exit_code == 1
    assert "bad.trec, line 2: field 'score'" in result.output
    result = seedr("search", "--bm25", "--index", tmp_path, "--queries", scifact_slice / "queries.jsonl",
                   "--out", tmp_path / "x.trec")
    assert result.exit_code == 1 and "choose one way to search" in result.output
    result = seedr("index", "--embeddings", tmp_path, "--out", tmp_path / "index")
    assert result.exit_code == 1 and "no manifest.json" in result.output
    assert not (tmp_path / "x.trec").exists() and not (tmp_path / "index").exists()


@pytest.mark.parametrize("stage", ["encode", "index", "search", "evaluate"])
def test_help_ends_with_an_example(stage):
    result = seedr(stage, "--help")
    assert result.exit_code == 0
    assert f"Example: seedr {stage} " in result.output
