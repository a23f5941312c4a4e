"""`seedr prepare` end to end on real corpora: outputs, counts, and clean failures on bad input."""

from __future__ import annotations

import itertools
import json
import lzma
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from seedr.cli import app
from seedr.data.corpus import load_corpus, read_corpus
from seedr.data.links import read_links

runner = CliRunner()


def prepare(*args: str | Path):
    return runner.invoke(app, ["prepare", *map(str, args)])


@pytest.fixture(scope="module")
def scifact_corpus(shared_data: Path) -> Path:
    return shared_data / "scifact" / "corpus.jsonl"


@pytest.fixture()
def wiki_head(wiki_shard: Path, tmp_path: Path) -> Path:
    """The first 150 articles of shard 00, as the same structured JSONL (xz-compressed)."""
    path = tmp_path / "wiki-head.jsonl.xz"
    with lzma.open(wiki_shard, "rt", encoding="utf-8") as source, lzma.open(path, "wt", preset=0, encoding="utf-8") as target:
        target.writelines(itertools.islice(source, 150))
    return path


def test_scifact_to_passages(tmp_path: Path, scifact_corpus: Path) -> None:
    out = tmp_path / "scifact"
    result = prepare("--corpus", scifact_corpus, "--passage-words", "100", "--out", out)
    assert result.exit_code == 0, result.output
    assert "5,183" in result.output and "passages written" in result.output
    passages = load_corpus(out / "corpus.jsonl")
    abstract = load_corpus(scifact_corpus)["4983"]
    own = [p for p in passages.values() if p.id.startswith("4983-")]
    assert " ".join(p.text for p in own).split() == abstract.text.split()
    assert all(p.title == abstract.title for p in own)
    config = yaml.safe_load((out / "config.yaml").read_text())
    assert config["passage_words"] == 100 and config["corpus"] == [str(scifact_corpus)]
    assert "seed" in json.loads((out / "run.json").read_text())
    counts = json.loads((out / "prepared.json").read_text())
    assert counts["articles"] == 5_183 and counts["documents"] == len(passages)
    # a prepared folder may be prepared again, replaced whole, when asked to
    result = prepare("--corpus", scifact_corpus, "--out", out)
    assert result.exit_code == 1 and "--overwrite" in result.output
    result = prepare("--corpus", scifact_corpus, "--out", out, "--overwrite")
    assert result.exit_code == 0, result.output
    assert len(load_corpus(out / "corpus.jsonl")) == 5_183


def test_wiki_links_and_tokenizer(tmp_path: Path, wiki_head: Path) -> None:
    out = tmp_path / "wiki"
    result = prepare("--corpus", wiki_head, "--links", "--tokenizer-vocab", "1500", "--out", out)
    assert result.exit_code == 0, result.output
    assert "links (recovered)" in result.output
    documents = list(read_corpus(out / "corpus.jsonl", "seedr"))
    assert len(documents) == 150 and documents[0].title == "Anarchism"
    graph = read_links(out / "links.jsonl")
    assert len(graph) == 150 and sum(map(len, graph.values())) > 0
    assert all(link in graph and link != title for title, links in graph.items() for link in links)
    assert json.loads((out / "tokenizer" / "tokenizer_config.json").read_text())["tokenizer_class"] == "BertTokenizer"


def test_glossary_links_are_read_not_recovered(tmp_path: Path, shared_data: Path) -> None:
    out = tmp_path / "jargon"
    result = prepare("--corpus", shared_data / "foldoc" / "jargon.jsonl.gz", "--links", "--out", out)
    assert result.exit_code == 0, result.output
    assert "links (read)" in result.output and "5,112" in result.output
    assert read_links(out / "links.jsonl")["sodium substrate"] == ["salt substrate"]


def test_default_corpus_and_its_queries(tmp_path: Path) -> None:
    out = tmp_path / "default"
    result = prepare("--out", out)
    assert result.exit_code == 0, result.output
    assert "10,033" in result.output and "9,290" in result.output
    assert len(load_corpus(out / "corpus.jsonl")) == 10_033
    queries = [json.loads(line) for line in (out / "queries.jsonl").read_text().splitlines()]
    assert len(queries) == 9_290 and set(queries[0]) == {"_id", "text"}
    qrels = (out / "qrels" / "test.tsv").read_text().splitlines()
    assert qrels[0] == "query-id\tcorpus-id\tscore" and len(qrels) == 1 + 9_862


def test_bad_input_exits_1_and_writes_nothing(tmp_path: Path, scifact_corpus: Path) -> None:
    with scifact_corpus.open(encoding="utf-8") as stream:
        lines = [line for line in itertools.islice(stream, 5)]
    record = json.loads(lines[3])
    del record["_id"]
    lines[3] = json.dumps(record) + "\n"
    bad = tmp_path / "corpus.jsonl"
    bad.write_text("".join(lines), encoding="utf-8")
    out = tmp_path / "out"
    result = prepare("--corpus", bad, "--format", "beir", "--out", out)
    assert result.exit_code == 1
    assert f"{bad}, line 4: field '_id': missing" in " ".join(result.output.split())
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl"]  # no temporary folder left either


def test_refuses_to_replace_a_folder_it_did_not_make(tmp_path: Path, scifact_corpus: Path) -> None:
    run = tmp_path / "pretrain-run"  # another stage's run folder: it has a run.json too
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"seed": 13}))
    result = prepare("--corpus", scifact_corpus, "--out", run)
    assert result.exit_code == 1 and "not a prepared corpus folder" in result.output
    assert [p.name for p in run.iterdir()] == ["run.json"]


def test_help_ends_with_an_example() -> None:
    result = runner.invoke(app, ["prepare", "--help"])
    assert result.exit_code == 0 and "Example: seedr prepare --corpus" in " ".join(result.output.split())
