"""Every stage's input — a file, several files, a quoted glob, a folder of shards or one made by
`seedr prepare` — resolved by one rule (seedr.data.inputs), on real Wikipedia shards and NQ-open."""

from __future__ import annotations

import itertools
import json
import lzma
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from seedr.cli import app
from seedr.data.corpus import read_corpus
from seedr.data.inputs import input_files
from seedr.data.queries import read_queries
from seedr.evaluation.qa_coverage import read_qa_file
from seedr.io import DataError

runner = CliRunner()


def seedr(*args: str | Path):
    return runner.invoke(app, [str(arg) for arg in args])


@pytest.fixture(scope="module")
def shards(shared_data: Path, tmp_path_factory) -> Path:
    """A folder of two shards (the first 30 articles of wiki shards 00 and 01) with its LICENSE and README."""
    folder = tmp_path_factory.mktemp("inputs") / "wiki"
    folder.mkdir()
    for name in ("enwiki-2015-00.jsonl.xz", "enwiki-2015-01.jsonl.xz"):
        with lzma.open(shared_data / "wiki" / name, "rt", encoding="utf-8") as source, \
                lzma.open(folder / name, "wt", preset=0, encoding="utf-8") as target:
            target.writelines(itertools.islice(source, 30))
    shutil.copy(shared_data / "nq-open" / "LICENSE", folder / "LICENSE")
    (folder / "README.md").write_text("Two shards of the 2015 English Wikipedia bundle.\n")
    (folder / ".partial.jsonl").write_text("not a shard\n")
    return folder


@pytest.fixture(scope="module")
def prepared(shards: Path) -> Path:
    out = shards.parent / "passages"
    result = seedr("prepare", "--corpus", shards / "*.jsonl.xz", "--passage-words", "100", "--out", out)
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def questions(shared_data: Path, shards: Path) -> Path:
    """A folder holding NQ-open questions about the shards' articles, and NQ-open's LICENSE."""
    titles = {document.title.lower() for document in read_corpus(shards) if len(document.title) > 5}
    lines = [line for line in (shared_data / "nq-open" / "NQ-open.dev.jsonl").read_text().splitlines()
             if any(title in json.loads(line)["question"].lower() for title in titles)]
    folder = shards.parent / "nq"
    folder.mkdir()
    (folder / "questions.jsonl").write_text("\n".join(lines) + "\n")
    shutil.copy(shared_data / "nq-open" / "LICENSE", folder / "LICENSE")
    return folder


def test_one_rule_for_files_globs_and_folders(shards, prepared, shared_data):
    both = [shards / "enwiki-2015-00.jsonl.xz", shards / "enwiki-2015-01.jsonl.xz"]
    assert input_files(shards) == both  # documentation and hidden files are not shards
    assert input_files(str(shards / "*.xz")) == both
    assert input_files([both[1], both[0], both[1]]) == [both[1], both[0]]  # in the order given, once
    assert input_files(prepared) == [prepared / "corpus.jsonl"]
    scifact = shared_data / "scifact"
    assert input_files(scifact, "corpus") == [scifact / "corpus.jsonl"]
    assert input_files(scifact, "queries") == [scifact / "queries.jsonl"]
    assert input_files(shared_data / "nq-open", "questions") == [shared_data / "nq-open" / "NQ-open.dev.jsonl"]
    with pytest.raises(DataError, match="holds no queries.jsonl"):
        input_files(prepared, "queries")
    with pytest.raises(DataError, match="no corpus file matches"):
        input_files(str(shards / "*.tsv"))
    with pytest.raises(DataError, match="no such corpus file or folder"):
        input_files(shards / "missing.jsonl")


def test_readers_take_several_files(shards, shared_data, tmp_path):
    ids = [document.id for document in read_corpus(shards)]
    assert ids == [document.id for path in input_files(shards) for document in read_corpus(path)]
    assert len(ids) == 60
    shutil.copy(shards / "enwiki-2015-00.jsonl.xz", tmp_path / "copy-00.jsonl.xz")
    with pytest.raises(DataError, match="copy-00.jsonl.xz: field 'id': duplicate id"):
        list(read_corpus([shards, tmp_path / "copy-00.jsonl.xz"]))  # ids are unique across the files
    assert read_queries(shared_data / "scifact") == read_queries(shared_data / "scifact" / "queries.jsonl")
    nq = shared_data / "nq-open" / "NQ-open.dev.jsonl"
    copy = tmp_path / "copy.jsonl"
    shutil.copy(nq, copy)
    questions, answers = read_qa_file([nq, copy])  # line numbers repeat: ids name their file
    assert len(questions) == 2 * 3610 and questions["copy.jsonl:1"] == questions["NQ-open.dev.jsonl:1"]
    assert read_qa_file(nq)[0]["1"] == questions["copy.jsonl:1"]


def test_every_stage_reads_folders_and_globs(shards, prepared, questions, tmp_path):
    # prepare: a folder of shards is the same corpus as the quoted glob of its shards
    again = tmp_path / "again"
    assert seedr("prepare", "--corpus", shards, "--passage-words", "100", "--out", again).exit_code == 0
    assert (again / "corpus.jsonl").read_text() == (prepared / "corpus.jsonl").read_text()
    # --max-articles counts over all the files: 40 articles are shard 00's 30 and shard 01's first 10
    assert seedr("prepare", "--corpus", shards, "--max-articles", 40, "--out", again, "--overwrite").exit_code == 0
    titles = [document.title for document in read_corpus(again)]
    assert titles == [document.title for document in itertools.islice(read_corpus(shards), 40)]

    # search (BM25): a prepared folder as the corpus, a folder of question files; same run as with files
    for name, corpus, asked in (("folders", prepared, questions),
                                ("files", prepared / "corpus.jsonl", questions / "questions.jsonl")):
        result = seedr("search", "--bm25", "--corpus", corpus, "--questions", asked, "--k", 20,
                       "--out", tmp_path / f"{name}.trec")
        assert result.exit_code == 0, result.output
    assert (tmp_path / "folders.trec").read_text() == (tmp_path / "files.trec").read_text()

    # evaluate: answer coverage with the same folders
    result = seedr("evaluate", tmp_path / "folders.trec", "--qa-answers", questions, "--corpus", prepared,
                   "--ks", "5,20", "--json", tmp_path / "qa.json")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "qa.json").read_text())["questions"] == len(read_qa_file(questions)[0])

    # encode: a prepared folder
    result = seedr("encode", "--model", "minilm", "--corpus", prepared, "--limit", 6, "--max-length", 32,
                   "--out", tmp_path / "emb")
    assert result.exit_code == 0, result.output
    first = [document.id for document in itertools.islice(read_corpus(prepared / "corpus.jsonl"), 6)]
    assert (tmp_path / "emb" / "ids-00000.txt").read_text().split() == first

    # pretrain: a quoted glob of shards
    out = tmp_path / "runs" / "mlm"
    result = seedr("pretrain", "--objective", "mlm", "--corpus", shards / "enwiki-*.jsonl.xz", "--out", out,
                   "--size", "tiny", "--tokenizer", "minilm", "--set", "model.hidden_size=32",
                   "--set", "model.num_attention_heads=2", "--set", "model.intermediate_size=64",
                   "--set", "data.max_seq_length=32", "--set", "train.max_steps=1", "--set", "train.batch_size=4")
    assert result.exit_code == 0, result.output
    tokenised = Path(yaml.safe_load((out / "config.yaml").read_text())["data"]["shards"])
    assert json.loads((tokenised / "manifest.json").read_text())["documents"] == 60  # both shards

    # diagnose: a quoted glob
    result = seedr("diagnose", "minilm", "--corpus", shards / "*.xz", "--lengths", "16", "--pairs", 4,
                   "--word-texts", 0, "--out", tmp_path / "diagnostics")
    assert result.exit_code == 0, result.output


def test_a_missing_input_is_one_clear_line(tmp_path, questions):
    result = seedr("search", "--bm25", "--corpus", tmp_path / "nowhere" / "*.jsonl", "--questions", questions,
                   "--out", tmp_path / "run.trec")
    assert result.exit_code == 1
    assert "error" in result.output and "matches this pattern" in result.output


def test_an_unquoted_glob_is_explained(tmp_path):
    # what the shell makes of `--corpus wiki/*.jsonl.xz`: one value, then stray words
    result = seedr("prepare", "--corpus", tmp_path / "a.jsonl.xz", tmp_path / "b.jsonl.xz", "--out", tmp_path / "out")
    assert result.exit_code == 2
    message = " ".join(result.output.replace("│", " ").split())
    assert "unexpected extra argument" in message and "quote it" in message and "repeat the option" in message
    assert not (tmp_path / "out").exists()
