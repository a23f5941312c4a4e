"""Stale, crafted and odd input that seedr used to accept or crash on (issue 46, items 7, 9-12, 14, 15),
each through the command a user runs: a run whose record describes another run, an embeddings folder
resumed over an edited corpus, byte-order marks, fusion weights that overflow, faiss factory strings
that crash faiss, JSON nested past Python's recursion limit, upper-case compression suffixes, and a
BM25 index saved before its ids were checked. Every refusal is one ``error:`` line and leaves nothing
behind (no output, no lock, no temporary)."""

from __future__ import annotations

import bz2
import gzip
import itertools
import json
import lzma
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import tiny_bert, write
from typer.testing import CliRunner

from seedr.cli import app
from seedr.data.articles import read_articles
from seedr.data.corpus import read_corpus, write_corpus
from seedr.data.passages import split_passages
from seedr.data.queries import read_qrels, read_queries
from seedr.data.runs import read_trec_run
from seedr.io import DataError, read_json

runner = CliRunner()


def seedr(*args):
    return runner.invoke(app, [str(a) for a in args])


def refused(result, *words: str) -> str:
    """The one ``error:`` line of a command that exited 1 without a traceback; it contains ``words``."""
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    message = " ".join(result.output[result.output.index("error:"):].split())
    for word in words:
        assert word in message, message
    return message


def leftovers(folder: Path) -> list[str]:
    """Locks and temporaries in ``folder`` (hidden files seedr writes beside its outputs)."""
    return sorted(path.name for path in folder.iterdir() if path.name.startswith("."))


# ------------------------------------------------------------------ 7: a run and its record

@pytest.fixture(scope="module")
def qa(tmp_path_factory, wiki_shard, shared_data) -> Path:
    """Passages of 80 Wikipedia articles and two files of NQ-open questions about them (A and B, the
    same number each: question ids are line numbers, so both have the same ids)."""
    folder = tmp_path_factory.mktemp("qa")
    articles = list(itertools.islice(read_articles(wiki_shard), 80))
    write_corpus(folder / "passages.jsonl", split_passages(articles))
    titles = {article.title.lower() for article in articles if len(article.title) > 6}
    lines = [line for line in (shared_data / "nq-open" / "NQ-open.dev.jsonl").read_text().splitlines()
             if any(title in json.loads(line)["question"].lower() for title in titles)]
    half = len(lines) // 2
    assert half >= 4
    (folder / "A.jsonl").write_text("\n".join(lines[:half]) + "\n")
    (folder / "B.jsonl").write_text("\n".join(lines[half:2 * half]) + "\n")
    for name in ("A", "B"):
        result = seedr("search", "--bm25", "--corpus", folder / "passages.jsonl", "--questions", folder / f"{name}.jsonl",
                       "--k", 20, "--out", folder / f"{name}.trec")
        assert result.exit_code == 0, result.output
    return folder


def _evaluate_qa(folder: Path, run: Path, questions: str):
    return seedr("evaluate", run, "--qa-answers", folder / f"{questions}.jsonl", "--corpus", folder / "passages.jsonl",
                 "--ks", "5,20", "--resamples", 100)


def test_a_run_file_replaced_under_its_record_is_refused(qa, tmp_path):
    """Run A and its record, then B's run file put in its place (what a search killed between its two
    writes left): the record no longer describes the file, and evaluating it against A is refused."""
    run = tmp_path / "run.trec"
    run.write_bytes((qa / "A.trec").read_bytes())
    Path(f"{run}.json").write_bytes((qa / "A.trec.json").read_bytes())
    assert _evaluate_qa(qa, run, "A").exit_code == 0
    run.write_bytes((qa / "B.trec").read_bytes())
    refused(_evaluate_qa(qa, run, "A"), "the run file changed since its record", "run.trec.json")
    refused(_evaluate_qa(qa, run, "B"), "the run file changed since its record")


class _Killed(BaseException):
    """A kill, as far as the code under test can tell: no ``except Exception`` catches it."""


def _kill_at_second_rename(monkeypatch) -> None:
    """Kill the process at its second ``os.replace`` (the second atomic write moved into place)."""
    calls = itertools.count(1)
    replace = os.replace

    def killing(source, target, *args, **kwargs):
        if next(calls) == 2:
            raise _Killed(target)
        return replace(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "replace", killing)


def test_a_search_killed_between_its_two_writes_leaves_a_pair_that_is_refused(qa, tmp_path, monkeypatch):
    run = tmp_path / "run.trec"
    for name in ("trec", "trec.json"):
        (tmp_path / f"run.{name}").write_bytes((qa / f"A.{name}").read_bytes())
    _kill_at_second_rename(monkeypatch)
    with pytest.raises(_Killed):
        seedr("search", "--bm25", "--corpus", qa / "passages.jsonl", "--questions", qa / "B.jsonl", "--k", 20,
              "--out", run, "--overwrite")
    monkeypatch.undo()
    for questions in ("A", "B"):  # whichever of the two files was written, they no longer agree
        refused(_evaluate_qa(qa, run, questions), "the run file changed since its record")


def test_a_fuse_killed_between_its_two_writes_leaves_a_pair_that_is_refused(qa, tmp_path, monkeypatch):
    beir = tmp_path / "beir.trec"
    result = seedr("search", "--bm25", "--corpus", qa / "passages.jsonl", "--questions", qa / "A.jsonl", "--k", 20,
                   "--k1", 1.2, "--b", 0.75, "--out", beir)
    assert result.exit_code == 0, result.output
    out = tmp_path / "fused.trec"
    assert seedr("fuse", qa / "A.trec", beir, "--out", out).exit_code == 0
    evaluate = ["evaluate", out, "--qa-answers", qa / "A.jsonl", "--corpus", qa / "passages.jsonl", "--ks", "5",
                "--resamples", 100]
    assert seedr(*evaluate).exit_code == 0
    _kill_at_second_rename(monkeypatch)
    with pytest.raises(_Killed):  # another fusion of the same runs, cut short
        seedr("fuse", qa / "A.trec", beir, "--method", "minmax", "--weight", 1, "--weight", 3, "--k", 5, "--out", out,
              "--overwrite")
    monkeypatch.undo()
    refused(seedr(*evaluate), "the run file changed since its record")


# ------------------------------------------------------------------ 9: a corpus edited under its embeddings

@pytest.fixture(scope="module")
def tiny_model(tokenizer, tmp_path_factory) -> Path:
    import torch

    from seedr.modeling.encoder import save_encoder

    torch.manual_seed(0)
    return save_encoder(tiny_bert(tokenizer, intermediate_size=64), tokenizer,
                        tmp_path_factory.mktemp("model") / "tiny", max_seq_length=16)


def _scifact_head(shared_data: Path, folder: Path, count: int) -> Path:
    lines = (shared_data / "scifact" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:count]
    return write(folder / "corpus.jsonl", "\n".join(lines) + "\n")


def test_encoding_again_over_an_edited_corpus_is_refused(tiny_model, shared_data, tmp_path):
    corpus = _scifact_head(shared_data, tmp_path, 25)
    out = tmp_path / "emb"
    encode = ["encode", "--model", tiny_model, "--corpus", corpus, "--out", out, "--shard-size", 10,
              "--max-length", 16]
    assert seedr(*encode).exit_code == 0
    before = {path.name: path.read_bytes() for path in out.iterdir()}
    edited = [{**record, "text": record["text"][::-1]} for record in map(json.loads, corpus.read_text().splitlines())]
    corpus.write_text("".join(json.dumps(record) + "\n" for record in edited))
    refused(seedr(*encode), "the corpus changed since these embeddings were made", "new --out")
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before
    assert leftovers(tmp_path) == []

    # cut short after its first shard, then resumed over a corpus whose first shard was edited
    corpus.write_text("".join(json.dumps(record) + "\n" for record in edited))
    partial = tmp_path / "partial"
    assert seedr("encode", "--model", tiny_model, "--corpus", corpus, "--out", partial, "--shard-size", 10,
                 "--max-length", 16, "--limit", 10).exit_code == 0
    (partial / "manifest.json").unlink()  # as if killed after its first shard
    title = edited[3]["title"]
    edited[3]["title"] = "Another title"
    corpus.write_text("".join(json.dumps(record) + "\n" for record in edited))
    resume = ["encode", "--model", tiny_model, "--corpus", corpus, "--out", partial, "--shard-size", 10,
              "--max-length", 16]
    refused(seedr(*resume), "the corpus changed since these embeddings were made")
    assert not (partial / "manifest.json").exists() and leftovers(tmp_path) == []
    edited[3]["title"] = title  # the corpus the first shard was made from: resumed
    corpus.write_text("".join(json.dumps(record) + "\n" for record in edited))
    assert seedr(*resume).exit_code == 0 and (partial / "manifest.json").is_file()


# ------------------------------------------------------------------ 10: byte-order marks

BOM = b"\xef\xbb\xbf"


def _head(path: Path, lines: int) -> bytes:
    return b"".join(path.read_bytes().splitlines(keepends=True)[:lines])


def _bom_cases(shared_data: Path) -> dict[str, tuple[str, bytes, object]]:
    scifact = shared_data / "scifact"
    qrels = _head(scifact / "qrels" / "test.tsv", 8)
    trec_qrels = b"".join(b"%s 0 %s %s\n" % tuple(line.split(b"\t")) for line in qrels.splitlines()[1:])
    queries = [json.loads(line) for line in _head(scifact / "queries.jsonl", 5).splitlines()]
    tsv_queries = "".join(f"{q['_id']}\t{q['text']}\n" for q in queries).encode()
    run = b"".join(f"{qid} Q0 {doc} {rank} {10 - rank}.5 bm25\n".encode()
                   for qid in ("1", "3") for rank, doc in enumerate(("4983", "5836"), start=1))
    return {
        "JSONL corpus": ("corpus.jsonl", _head(scifact / "corpus.jsonl", 5), lambda p: list(read_corpus(p))),
        "JSONL queries": ("queries.jsonl", _head(scifact / "queries.jsonl", 5), read_queries),
        "TSV queries": ("queries.tsv", tsv_queries, read_queries),
        "BEIR qrels": ("qrels.tsv", qrels, read_qrels),
        "headerless BEIR qrels": ("qrels.tsv", b"".join(qrels.splitlines(keepends=True)[1:]), read_qrels),
        "TREC qrels": ("qrels.txt", trec_qrels, read_qrels),
        "TREC run": ("run.trec", run, read_trec_run),
        "JSON": ("index.json", b'{"metric": "ip", "dim": 4}', read_json),
    }


@pytest.mark.parametrize("kind", ["JSONL corpus", "JSONL queries", "TSV queries", "BEIR qrels", "headerless BEIR qrels",
                                  "TREC qrels", "TREC run", "JSON"])
@pytest.mark.parametrize("compression", ["", ".gz"])
def test_a_byte_order_mark_reads_as_if_it_were_not_there(shared_data, tmp_path, kind, compression):
    name, data, reader = _bom_cases(shared_data)[kind]
    pack = {"": lambda data: data, ".gz": gzip.compress}[compression]
    (tmp_path / "plain").mkdir()
    (tmp_path / "bom").mkdir()
    plain = write(tmp_path / "plain" / (name + compression), pack(data))
    marked = write(tmp_path / "bom" / (name + compression), pack(BOM + data))
    assert reader(marked) == reader(plain)


def test_a_byte_order_mark_keeps_every_judged_query(shared_data, tmp_path):
    """The issue's case: a BOM glued to the first query id of TREC qrels dropped R@100 silently."""
    scifact = shared_data / "scifact"
    qrels = read_qrels(scifact / "qrels" / "test.tsv")
    first = dict(itertools.islice(qrels.items(), 5))
    lines = "".join(f"{qid} 0 {doc} {rel}\n" for qid, judged in first.items() for doc, rel in judged.items())
    write(tmp_path / "qrels.txt", BOM + lines.encode())
    run = "".join(f"{qid} Q0 {doc} 1 1.0 x\n" for qid, judged in first.items() for doc in judged)
    write(tmp_path / "run.trec", BOM + run.encode())
    result = seedr("evaluate", tmp_path / "run.trec", "--qrels", tmp_path / "qrels.txt", "--metrics", "P@1",
                   "--json", tmp_path / "e.json")
    assert result.exit_code == 0, result.output
    evaluation = json.loads((tmp_path / "e.json").read_text())
    assert evaluation["metrics"]["P@1"] == 1.0
    assert evaluation["queries"]["run"]["missing_from_run"] == evaluation["queries"]["run"]["unjudged_in_run"] == 0


# ------------------------------------------------------------------ 11: fusion weights

@pytest.fixture(scope="module")
def two_runs(shared_data, tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("runs")
    queries = read_queries(shared_data / "scifact" / "queries.jsonl")
    (folder / "q.jsonl").write_text("".join(json.dumps({"_id": qid, "text": text}) + "\n"
                                            for qid, text in itertools.islice(queries.items(), 5)))
    corpus = _scifact_head(shared_data, folder, 60)
    paths = []
    for name, options in (("a", []), ("b", ["--k1", 1.2, "--b", 0.75])):
        paths.append(folder / f"{name}.trec")
        result = seedr("search", "--bm25", "--corpus", corpus, "--queries", folder / "q.jsonl", "--k", 10,
                       "--out", paths[-1], *options)
        assert result.exit_code == 0, result.output
    return paths[0], paths[1]


@pytest.mark.parametrize("weights", [("0", "0"), ("inf", "1")])
def test_fusion_weights_that_vanish_or_are_not_numbers_are_refused(two_runs, tmp_path, weights):
    options = [part for weight in weights for part in ("--weight", weight)]
    refused(seedr("fuse", *two_runs, *options, "--out", tmp_path / "fused.trec"), "fusion weights")
    assert not (tmp_path / "fused.trec").exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize(("weights", "same_as"), [(("1e308", "1e308"), ("1", "1")), (("1e308", "3e307"), ("10", "3")),
                                                  (("5e-324", "1e-323"), ("1", "2"))])
def test_weights_at_the_ends_of_the_floats_fuse_as_their_ratios_say(two_runs, tmp_path, weights, same_as):
    """1e308 twice used to sum to inf and normalise to [0, 0]: every fused score 0.0, ties by id."""
    fused = {}
    for name, given in (("given", weights), ("ratio", same_as)):
        options = [part for weight in given for part in ("--weight", weight)]
        result = seedr("fuse", *two_runs, "--method", "minmax", *options, "--out", tmp_path / f"{name}.trec")
        assert result.exit_code == 0, result.output
        fused[name] = read_trec_run(tmp_path / f"{name}.trec")
    assert fused["given"] == fused["ratio"]
    assert len({score for scores in fused["given"].values() for score in scores.values()}) > 1


# ------------------------------------------------------------------ 12: faiss factory strings

@pytest.fixture(scope="module")
def embeddings(tiny_model, shared_data, tmp_path_factory) -> Path:
    """50 SciFact abstracts encoded by a tiny (32-dimensional) model."""
    folder = tmp_path_factory.mktemp("embeddings")
    corpus = _scifact_head(shared_data, folder, 50)
    result = seedr("encode", "--model", tiny_model, "--corpus", corpus, "--out", folder / "emb", "--max-length", 16)
    assert result.exit_code == 0, result.output
    return folder / "emb"


@pytest.mark.parametrize(("factory", "words"), [
    ("IVF0,Flat", ["IVF0", "at least 1"]),
    ("IVF51,Flat", ["IVF51", "at least 51 training vectors, got 50"]),
    ("PCA512,Flat", ["PCA512", "32"]),
    ("PCA0,Flat", ["PCA0", "at least 1"]),
    ("IDMap2,Flat", ["IDMap2", "seedr keeps the document ids"]),
    ("IDMap,Flat", ["IDMap", "seedr keeps the document ids"]),
    ("HNSW1,Flat", ["HNSW1", "at least 2"]),
    ("IVF4_HNSW1,Flat", ["HNSW1", "at least 2"]),
    ("RR0,Flat", ["RR0", "at least 1"]),
    ("NSG2,Flat", ["NSG2", "at least"]),
    ("PQ5", ["PQ5"]),  # faiss's own refusal, made one line
    ("NSG32,Flat", ["NSG32"]),  # faiss refuses a graph of under 100 vectors while building it
    ("Flat,Flat", ["Flat,Flat"]),
])
def test_a_factory_that_faiss_cannot_build_on_these_vectors_is_one_line(embeddings, tmp_path, factory, words):
    result = seedr("index", "--embeddings", embeddings, "--out", tmp_path / "index", "--factory", factory)
    refused(result, *words)
    assert not (tmp_path / "index").exists() and leftovers(tmp_path) == []


def test_a_factory_that_aborts_faiss_is_refused_before_faiss_sees_it(embeddings, tmp_path):
    """``HNSW0`` fails an assertion inside faiss, which aborts the process (SIGABRT, exit 134) and leaves
    the output's lock behind: a separate process, so that the test survives the old behaviour."""
    out = tmp_path / "index"
    result = subprocess.run([sys.executable, "-m", "seedr", "index", "--embeddings", str(embeddings), "--out", str(out),
                             "--factory", "HNSW0,Flat"], check=False, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    output = result.stdout + result.stderr
    assert "Traceback" not in output and "HNSW0" in output and "at least 2" in output
    assert not out.exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("factory", ["PQ8x0", "RQ0x0", "PQ8x0np", "IVF4,RQ0x0", "OPQ4_0,Flat", "PRQ1x0x1"])
def test_a_factory_that_crashes_faiss_is_refused_by_a_probe(embeddings, tmp_path, factory):
    """Issue 58: ``PQ8x0`` died of SIGFPE (exit 136) while training, ``RQ0x0`` of SIGSEGV (139) while adding,
    ``PQ8x0np`` while searching, with no message and the lock left behind: each is now built first in a
    child process, whose death refuses the string. A separate process, so that the test survives the old
    behaviour."""
    out = tmp_path / "index"
    result = subprocess.run([sys.executable, "-m", "seedr", "index", "--embeddings", str(embeddings), "--out",
                             str(out), "--factory", factory], check=False, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: faiss factory {factory!r} crashes faiss"), lines
    assert not out.exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("factory", ["Flat", "HNSW2,Flat", "IVF4,Flat", "PCA16,Flat", "IVF50,Flat", "PQ4x4",
                                     "RQ2x4"])
def test_factories_within_bounds_still_build(embeddings, tmp_path, factory):
    result = seedr("index", "--embeddings", embeddings, "--out", tmp_path / "index", "--factory", factory)
    assert result.exit_code == 0, result.output


# ------------------------------------------------------------------ 14: nesting past the recursion limit

DEEP = 200_000


def test_a_queries_line_nested_too_deep_is_one_line(shared_data, tmp_path):
    queries = shared_data / "scifact" / "queries.jsonl"
    lines = queries.read_text().splitlines()[:3]
    nested = "[" * DEEP + "]" * DEEP
    write(tmp_path / "queries.jsonl", "\n".join([lines[0], lines[1], nested, lines[2]]) + "\n")
    with pytest.raises(DataError) as info:
        read_queries(tmp_path / "queries.jsonl")
    assert (info.value.path, info.value.line) == (str(tmp_path / "queries.jsonl"), 3)
    assert info.value.reason.startswith("JSON nested too deeply")
    first = '{"_id": "1", "text": ' + "[" * DEEP + "]" * DEEP + "}"  # the line the format is told from
    write(tmp_path / "corpus.jsonl", first + "\n")
    for format in ("auto", "beir"):
        with pytest.raises(DataError) as info:
            list(read_corpus(tmp_path / "corpus.jsonl", format))
        assert info.value.line == 1 and info.value.reason.startswith("JSON nested too deeply")
    result = seedr("search", "--bm25", "--corpus", _scifact_head(shared_data, tmp_path, 10), "--queries",
                   tmp_path / "queries.jsonl", "--out", tmp_path / "run.trec")
    refused(result, "queries.jsonl, line 3: JSON nested too deeply")


def test_an_index_json_nested_too_deep_is_one_line(embeddings, tmp_path):
    index = tmp_path / "index"
    assert seedr("index", "--embeddings", embeddings, "--out", index).exit_code == 0
    write(index / "index.json", '{"metric": "ip", "dim": ' + "[" * DEEP + "]" * DEEP + "}")
    with pytest.raises(DataError) as info:
        from seedr.retrieval.faiss_index import DenseIndex

        DenseIndex.load(index)
    assert (info.value.path, info.value.line) == (str(index / "index.json"), 1)
    assert info.value.reason.startswith("JSON nested too deeply")


# ------------------------------------------------------------------ 15: upper-case suffixes, BM25 ids

@pytest.mark.parametrize("suffix", [".XZ", ".GZ", ".Bz2", ".gZ"])
def test_compression_suffixes_are_read_whatever_their_case(shared_data, tmp_path, suffix):
    data = b"".join((shared_data / "scifact" / "corpus.jsonl").read_bytes().splitlines(keepends=True)[:5])
    pack = {".xz": lzma.compress, ".gz": gzip.compress, ".bz2": bz2.compress}[suffix.lower()]
    path = write(tmp_path / f"corpus.JSONL{suffix}", pack(data))
    assert list(read_corpus(path)) == list(read_corpus(write(tmp_path / "corpus.jsonl", data)))
    cut = write(tmp_path / f"cut.jsonl{suffix}", pack(data)[:-20])
    with pytest.raises(DataError, match=f"truncated or corrupt {suffix} file"):
        list(read_corpus(cut))


def test_bm25_checks_document_ids_before_saving_its_index(shared_data, tmp_path):
    records = [json.loads(line) for line in (shared_data / "scifact" / "corpus.jsonl").read_text().splitlines()[:5]]
    records[2]["_id"] = "12 34"  # a TREC run cannot hold it
    write(tmp_path / "corpus.jsonl", "".join(json.dumps(record) + "\n" for record in records))
    queries = write(tmp_path / "q.jsonl", '{"_id": "1", "text": "what causes tides"}\n')
    result = seedr("search", "--bm25", "--corpus", tmp_path / "corpus.jsonl", "--queries", queries,
                   "--bm25-index", tmp_path / "bm25", "--out", tmp_path / "run.trec")
    refused(result, "'12 34'")
    assert not (tmp_path / "bm25").exists() and not (tmp_path / "run.trec").exists()
    assert leftovers(tmp_path) == []
