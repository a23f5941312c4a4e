"""What `seedr search`, `fuse`, `evaluate` and `index` leave behind when they fail (issue #65, items 3, 4, 5
and 10): a full disk at a command's second file leaves none of its files (a run's record without its run
refused every later attempt), an index faiss cannot read back is never moved into `--out`, a qrels file
that judges none of a run's queries is an error rather than a table of zeros, and a refusal names the
option the user gave."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seedr.cli import app
from tests.helpers import first_lines, save_tiny_bert, snapshot

runner = CliRunner()


def seedr(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def refused(result, *words: str) -> str:
    """The one ``error:`` line of a command that exited 1 (after its progress bars) without a traceback; it
    holds every one of ``words``."""
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output, result.output
    assert len([line for line in result.output.splitlines() if line.startswith("error:")]) == 1, result.output
    message = " ".join(result.output[result.output.index("error:"):].split())
    for word in words:
        assert word in message, message
    return message


def full_disk_at_file(monkeypatch: pytest.MonkeyPatch, number: int) -> None:
    """The ``number``-th file synced from now on finds the disk full (``ENOSPC``, as a full tmpfs gives)."""
    real_fsync, calls = os.fsync, []

    def fsync(descriptor: int) -> None:
        calls.append(descriptor)
        if len(calls) == number:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", fsync)


@pytest.fixture(scope="module")
def bm25_search(shared_data: Path, tmp_path_factory) -> list[object]:
    """`seedr search --bm25` over 40 SciFact abstracts for 5 of its queries, without its --out."""
    folder = tmp_path_factory.mktemp("scifact")
    corpus = first_lines(shared_data / "scifact" / "corpus.jsonl", 40, folder)
    queries = first_lines(shared_data / "scifact" / "queries.jsonl", 5, folder)
    return ["search", "--bm25", "--corpus", corpus, "--queries", queries, "--k", 10]


@pytest.fixture(scope="module")
def searched(bm25_search: list[object], tmp_path_factory) -> Path:
    """The BM25 run of ``bm25_search`` (with its record, run.trec.json)."""
    run = tmp_path_factory.mktemp("searched") / "run.trec"
    assert seedr(*bm25_search, "--out", run).exit_code == 0
    return run


def judgements_of(run: Path, folder: Path, prefix: str = "", extra: int = 0) -> Path:
    """A BEIR qrels file judging each query of ``run`` (its ids prefixed by ``prefix``) and ``extra`` more."""
    qids = sorted({line.split()[0] for line in run.read_text().splitlines()})
    lines = [f"{prefix}{qid}\tdoc-{qid}\t1" for qid in qids] + [f"other-{n}\tdoc\t1" for n in range(extra)]
    path = folder / "qrels.tsv"
    path.write_text("query-id\tcorpus-id\tscore\n" + "\n".join(lines) + "\n")
    return path


# ------------------------------------------------------------------ 4. a full disk leaves nothing


def test_a_full_disk_at_the_run_leaves_no_record_and_the_same_command_then_succeeds(bm25_search, tmp_path,
                                                                                   monkeypatch):
    out = tmp_path / "full" / "run.trec"
    out.parent.mkdir()
    full_disk_at_file(monkeypatch, 2)  # the record is synced first, the run second
    refused(seedr(*bm25_search, "--out", out), "full/run.trec", "no space left")
    assert snapshot(out.parent) == {}  # no run.trec.json, no temporary, no lock
    monkeypatch.undo()  # space freed: the same command, with or without --overwrite, writes both
    for extra in ([], ["--overwrite"]):
        result = seedr(*bm25_search, "--out", out, *extra)
        assert result.exit_code == 0, result.output
        assert sorted(snapshot(out.parent)) == ["run.trec", "run.trec.json"]
        out.unlink()
        Path(f"{out}.json").unlink()


def test_a_full_disk_at_the_run_leaves_no_bm25_index_either(bm25_search, tmp_path, monkeypatch):
    search = [*bm25_search, "--bm25-index", tmp_path / "bm25", "--out", tmp_path / "run.trec"]
    full_disk_at_file(monkeypatch, 2)
    refused(seedr(*search), "run.trec", "no space left")
    assert snapshot(tmp_path) == {}  # the index, whole as it was, goes with the run it was built for
    monkeypatch.undo()
    assert seedr(*search).exit_code == 0
    assert (tmp_path / "bm25" / "seedr_bm25.json").is_file() and (tmp_path / "run.trec.json").is_file()


def test_a_full_disk_while_replacing_a_run_keeps_the_old_run_and_record(bm25_search, searched, tmp_path,
                                                                        monkeypatch):
    out = tmp_path / "run.trec"
    for source in (searched, Path(f"{searched}.json")):
        (tmp_path / source.name).write_bytes(source.read_bytes())
    before = snapshot(tmp_path)
    full_disk_at_file(monkeypatch, 2)
    refused(seedr(*bm25_search, "--k", 3, "--out", out, "--overwrite"), "run.trec", "no space left")
    assert snapshot(tmp_path) == before  # the old pair, whole and consistent


def test_a_full_disk_at_the_fused_run_leaves_no_record(searched, tmp_path, monkeypatch):
    other = tmp_path / "other.trec"
    other.write_text("".join(line.replace(" bm25", " other") + "\n"
                             for line in searched.read_text().splitlines()[::2]))
    out = tmp_path / "fused" / "fused.trec"
    out.parent.mkdir()
    full_disk_at_file(monkeypatch, 2)
    refused(seedr("fuse", searched, other, "--out", out), "fused/fused.trec", "no space left")
    assert snapshot(out.parent) == {}
    monkeypatch.undo()
    result = seedr("fuse", searched, other, "--out", out)
    assert result.exit_code == 0, result.output
    assert sorted(snapshot(out.parent)) == ["fused.trec", "fused.trec.json"]


def test_a_full_disk_at_the_markdown_keeps_no_json(searched, tmp_path, monkeypatch):
    qrels = judgements_of(searched, tmp_path)
    results = tmp_path / "results"
    results.mkdir()
    evaluate = ["evaluate", searched, "--qrels", qrels, "--json", results / "scores.json",
                "--markdown", results / "scores.md"]
    full_disk_at_file(monkeypatch, 2)  # the JSON is written first
    refused(seedr(*evaluate), "results/scores.md", "no space left")
    assert snapshot(results) == {}
    monkeypatch.undo()
    result = seedr(*evaluate)
    assert result.exit_code == 0, result.output
    assert json.loads((results / "scores.json").read_text())["mode"] == "qrels"
    assert (results / "scores.md").read_text().startswith("<!-- seedr evaluate -->")


# ------------------------------------------------------------------ 3. judgements of other queries


def test_qrels_judging_none_of_the_runs_queries_is_an_error_naming_both_files(searched, tmp_path):
    qrels = judgements_of(searched, tmp_path, prefix="test-")  # every id prefixed: no query in common
    line = refused(seedr("evaluate", searched, "--qrels", qrels, "--json", tmp_path / "scores.json"),
                   f"{qrels}:", str(searched), "none of its 5 judged queries")
    assert "0.0000" not in line and not (tmp_path / "scores.json").exists()


def test_qrels_judging_few_of_the_runs_queries_warn_with_the_counts(searched, tmp_path):
    qrels = judgements_of(searched, tmp_path, extra=6)  # 5 of 11 judged queries in the run
    result = seedr("evaluate", searched, "--qrels", qrels)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "warning: run: only 5 of the 11 judged queries" in text and "6 judged queries missing" in text
    qrels = judgements_of(searched, tmp_path, extra=4)  # 5 of 9: a majority, only the counts
    text = " ".join(seedr("evaluate", searched, "--qrels", qrels).output.split())
    assert "warning" not in text and "run: 4 judged queries missing from the run (scored 0)" in text


# ------------------------------------------------------------------ 10. the option named is the one given


@pytest.mark.parametrize("option", ["--json", "--markdown"])
def test_evaluate_refusing_its_output_names_the_option_given(searched, tmp_path, option):
    notes = tmp_path / "notes.txt"
    notes.write_text("precious\n")
    qrels = judgements_of(searched, tmp_path)
    line = refused(seedr("evaluate", searched, "--qrels", qrels, option, notes), "notes.txt",
                   f"choose a new {option}")
    assert "--out" not in line and notes.read_text() == "precious\n"


# ------------------------------------------------------------------ 5. an index faiss cannot read back


@pytest.fixture(scope="module")
def embeddings(shared_data: Path, tmp_path_factory) -> Path:
    """40 SciFact abstracts encoded by a tiny (32-dimensional) BERT."""
    folder = tmp_path_factory.mktemp("embeddings")
    model = save_tiny_bert(folder / "tiny", "cls")
    corpus = first_lines(shared_data / "scifact" / "corpus.jsonl", 40, folder)
    result = seedr("encode", "--model", model, "--corpus", corpus, "--out", folder / "emb",
                   "--max-length", 16)
    assert result.exit_code == 0, result.output
    return folder / "emb"


def test_an_index_faiss_cannot_read_back_is_refused_and_never_written(embeddings, tmp_path):
    out = tmp_path / "ix"
    # faiss builds, searches and writes a PRQ of 0 codebooks, then fails reading it ('aq.M > 0' failed)
    refused(seedr("index", "--embeddings", embeddings, "--out", out, "--factory", "PRQ0x2x4"),
            "faiss factory 'PRQ0x2x4'", "cannot read back")
    assert snapshot(tmp_path) == {}  # no ix/, no temporary, no lock
    result = seedr("index", "--embeddings", embeddings, "--out", out, "--factory", "PRQ1x2x4")
    assert result.exit_code == 0, result.output  # the corrected factory, with no --overwrite
    assert sorted(snapshot(out)) == ["ids.txt", "index.faiss", "index.json"]
