"""Property-based bad input (issue 10): every reader, and the stages' file arguments, fed real files
damaged at random — truncated, bytes changed, lines dropped or doubled, a field given a value of
another type, compressed then cut, emptied, or replaced by a folder; tables too (parquet, Arrow, a
``datasets`` folder: issue 42). A reader either reads the file
or raises ``DataError``; a stage either succeeds or exits 1 with one ``error:`` line, no traceback,
and no output, lock or temporary left behind. The fast variants try a few dozen cases, the same at every
run (the ``repeatable`` profile of ``tests/conftest.py``, so that a failure is the change's and happens
again); the ``slow`` ones explore several hundred fresh ones (its ``explore`` profile). Each prints how many cases it tried."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from seedr.cli import app
from seedr.data.articles import read_articles
from seedr.data.corpus import load_corpus, read_corpus
from seedr.data.glossary import read_glossary
from seedr.data.links import read_links
from seedr.data.qa import read_nq_open, read_squad
from seedr.data.queries import read_qrels, read_queries
from seedr.data.runs import read_trec_run
from seedr.io import DataError, iter_jsonl, read_json
from seedr.negatives import NEGATIVES, NegativeTable
from seedr.retrieval.bm25 import BM25Index
from seedr.retrieval.embeddings import load_embeddings
from seedr.retrieval.encode import TextEncoder, encode_corpus_to_shards
from seedr.retrieval.faiss_index import DenseIndex

FAST, EXHAUSTIVE = 40, 400
_COMPRESS = {".gz": gzip.compress, ".xz": lzma.compress, ".bz2": bz2.compress}
_DECOMPRESS = {".gz": gzip.decompress, ".xz": lzma.decompress, ".bz2": bz2.decompress}


@dataclass(frozen=True)
class Sample:
    """A small real file (its first lines) and the name it is written under."""

    name: str
    data: bytes


def _head(path: Path, lines: int) -> bytes:
    data = path.read_bytes()
    if path.suffix in _DECOMPRESS:
        with {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}[path.suffix](path, "rb") as stream:
            return b"".join(islice(stream, lines))
    return b"".join(data.splitlines(keepends=True)[:lines])


def _table_sample(rows: list[dict], arrow: bool = False) -> bytes:
    """Rows as a parquet file, or (``arrow``) an Arrow IPC stream as ``datasets``' ``save_to_disk`` writes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table, sink = pa.Table.from_pylist(rows), pa.BufferOutputStream()
    if arrow:
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    else:
        pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def _json_rows(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.splitlines()]


def _qrels_rows(data: bytes) -> list[dict]:
    header, *lines = data.decode().splitlines()
    return [dict(zip(header.split("\t"), line.split("\t")[:2] + [int(line.split("\t")[2])], strict=True))
            for line in lines]


def _squad_sample(path: Path) -> bytes:
    data = json.loads(gzip.decompress(path.read_bytes()))
    article = data["data"][0]
    return json.dumps({"version": data.get("version", "1.1"),
                       "data": [{**article, "paragraphs": article["paragraphs"][:2]}]}).encode()


@pytest.fixture(scope="module")
def samples(shared_data: Path) -> dict[str, Sample]:
    scifact = shared_data / "scifact"
    corpus, queries = _head(scifact / "corpus.jsonl", 6), _head(scifact / "queries.jsonl", 6)
    qrels = _head(scifact / "qrels" / "test.tsv", 8)
    return {
        "corpus": Sample("corpus.jsonl", corpus),
        "queries": Sample("queries.jsonl", queries),
        "qrels": Sample("qrels.tsv", qrels),
        "corpus parquet": Sample("corpus.parquet", _table_sample(_json_rows(corpus))),
        "corpus arrow": Sample("data-00000-of-00001.arrow", _table_sample(_json_rows(corpus), arrow=True)),
        "queries parquet": Sample("queries.parquet", _table_sample(_json_rows(queries))),
        "qrels parquet": Sample("qrels.parquet", _table_sample(_qrels_rows(qrels))),
        "articles": Sample("articles.jsonl", _head(shared_data / "wiki" / "enwiki-2015-00.jsonl.xz", 3)),
        "glossary": Sample("jargon.jsonl", _head(shared_data / "foldoc" / "jargon.jsonl.gz", 4)),
        "nq": Sample("nq.jsonl", _head(shared_data / "nq-open" / "NQ-open.dev.jsonl", 5)),
        "squad": Sample("squad.json", _squad_sample(shared_data / "squad" / "squad-dev-v1.1.json.gz")),
        "run": Sample("run.trec", b"".join(
            f"{qid} Q0 {doc} {rank} {10 - rank}.5 bm25\n".encode()
            for qid in ("1", "3") for rank, doc in enumerate(("4983", "5836", "7912"), start=1))),
        "links": Sample("links.jsonl", b'{"id": "1", "title": "Anarchism", "links": ["Politics", "Society"]}\n'
                                       b'{"id": "2", "title": "Politics", "links": []}\n'),
    }


READERS: dict[str, Callable[[Path], object]] = {
    "corpus": lambda path: list(read_corpus(path)),
    "queries": read_queries,
    "qrels": read_qrels,
    "corpus parquet": lambda path: list(read_corpus(path)),
    "corpus arrow": lambda path: list(read_corpus(path)),
    "queries parquet": read_queries,
    "qrels parquet": read_qrels,
    "articles": lambda path: list(read_articles(path)),
    "glossary": lambda path: list(read_glossary(path)),
    "nq": read_nq_open,
    "squad": read_squad,
    "run": read_trec_run,
    "links": read_links,
}
GENERIC = {"json": read_json, "jsonl": lambda path: list(iter_jsonl(path))}

_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True), st.text(max_size=5),
                    st.lists(st.integers(0, 3), max_size=2), st.dictionaries(st.text(max_size=2), st.none(), max_size=1))


@st.composite
def damage(draw, sample: Sample) -> tuple[str, bytes | None]:
    """``(file name, bytes)`` of a damaged copy of ``sample``; bytes ``None`` means "a folder instead"."""
    data, name = sample.data, sample.name
    how = draw(st.sampled_from(["truncate", "bytes", "drop line", "double line", "field", "compressed",
                                "empty", "folder"]))
    lines = data.splitlines(keepends=True)
    if how == "truncate":
        data = data[: draw(st.integers(0, max(len(data) - 1, 0)))]
    elif how == "bytes":
        position = draw(st.integers(0, max(len(data) - 1, 0)))
        data = data[:position] + draw(st.binary(min_size=1, max_size=4)) + data[position + 1:]
    elif how in ("drop line", "double line") and lines:
        at = draw(st.integers(0, len(lines) - 1))
        lines[at:at + 1] = [] if how == "drop line" else [lines[at], lines[at]]
        data = b"".join(lines)
    elif how == "field" and lines:
        at = draw(st.integers(0, len(lines) - 1))
        try:
            record = json.loads(lines[at])
        except ValueError:
            record = None
        if isinstance(record, dict) and record:
            key = draw(st.sampled_from(sorted(record)))
            record[key] = draw(_VALUES)
            lines[at] = json.dumps(record).encode() + b"\n"
        else:  # a TSV line: one column loses its value
            columns = lines[at].rstrip(b"\n").split(b"\t")
            columns[draw(st.integers(0, len(columns) - 1))] = draw(st.sampled_from([b"", b"x y", b"-1", b"nan"]))
            lines[at] = b"\t".join(columns) + b"\n"
        data = b"".join(lines)
    elif how == "compressed":
        suffix = draw(st.sampled_from(sorted(_COMPRESS)))
        packed = _COMPRESS[suffix](data)
        name, data = name + suffix, packed[: draw(st.integers(0, len(packed) - 1))]
    elif how == "empty":
        data = b""
    elif how == "folder":
        return name, None
    return name, data


def write_damaged(folder: Path, name: str, data: bytes | None) -> Path:
    path = folder / name
    if data is None:
        path.mkdir()
    else:
        path.write_bytes(data)
    return path


def _readers_property(samples: dict[str, Sample], examples: int, explore: bool = False) -> tuple[int, int]:
    tried = refused = 0

    @settings(settings.get_profile("explore") if explore else None, max_examples=examples, deadline=None,
              database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=st.data())
    def check(data) -> None:
        nonlocal tried, refused
        kind = data.draw(st.sampled_from(sorted(READERS) + sorted(GENERIC)))
        sample = samples[data.draw(st.sampled_from(sorted(samples)))] if kind in GENERIC else samples[kind]
        name, content = data.draw(damage(sample))
        reader = READERS.get(kind) or GENERIC[kind]
        with tempfile.TemporaryDirectory() as folder:
            path = write_damaged(Path(folder), name, content)
            try:
                reader(path)
            except DataError as error:
                assert str(error).startswith(str(path)), error  # it names the file
                assert "\n" not in str(error)
                refused += 1
            else:
                assert content is not None, f"{kind}: a folder given for the file {name} was read"
            assert sorted(p.name for p in Path(folder).iterdir()) == [name]
        tried += 1

    check()
    return tried, refused


def test_every_reader_reads_or_says_what_is_wrong(samples, capsys) -> None:
    tried, refused = _readers_property(samples, FAST)
    assert 0 < refused <= tried  # the damage drawn includes some that must be refused (a folder for a file)
    with capsys.disabled():
        print(f"\n{tried} damaged files given to the readers, {refused} refused in one line")


@pytest.mark.slow
def test_every_reader_reads_or_says_what_is_wrong_exhaustive(samples, capsys) -> None:
    tried, refused = _readers_property(samples, EXHAUSTIVE, explore=True)
    assert 0 < refused <= tried  # the damage drawn includes some that must be refused (a folder for a file)
    with capsys.disabled():
        print(f"\n{tried} damaged files given to the readers, {refused} refused in one line")


# ------------------------------------------------------------------ folders: embeddings, indexes, negatives

#: Loaders of the folders seedr writes, and the files of each that are damaged (faiss's binary format
#: is left out: faiss reads what it is given and is trusted to fail on it).
FOLDER_READERS: dict[str, Callable[[Path], object]] = {
    "embeddings": load_embeddings,
    "faiss index": DenseIndex.load,
    "BM25 index": BM25Index.load,
    "negatives": NegativeTable.load,
    "datasets folder": lambda path: list(read_corpus(path)),  # Dataset.save_to_disk
}


@pytest.fixture(scope="module")
def folders(samples, tiny_model, shared_data, tmp_path_factory) -> dict[str, Path]:
    """Real folders written by seedr from the sample corpus: embeddings, a faiss index, a BM25 index and
    the BM25 negatives of the sample's judged queries; and by ``datasets``, the corpus saved to disk."""
    import datasets

    root = tmp_path_factory.mktemp("folders")
    corpus = load_corpus(write_damaged(root, samples["corpus"].name, samples["corpus"].data))
    encoder = TextEncoder(tiny_model, max_length=16, device="cpu")
    encode_corpus_to_shards(encoder, list(corpus.values()), root / "embeddings", shard_size=4, show_progress=False)
    ids, vectors = load_embeddings(root / "embeddings")
    DenseIndex.build(vectors, ids, encoder=encoder.settings()).save(root / "faiss index")
    BM25Index.build(corpus.values()).save(root / "BM25 index")
    qrels = read_qrels(write_damaged(root, samples["qrels"].name, samples["qrels"].data))
    queries = {qid: text for qid, text in read_queries(shared_data / "scifact" / "queries.jsonl").items()
               if qid in qrels}
    table = NEGATIVES.build("bm25", {"depth": 3}).mine(corpus, queries, qrels, None, "none")
    table.save(root / "negatives")
    datasets.disable_progress_bars()
    datasets.Dataset.from_list(_json_rows(samples["corpus"].data)).save_to_disk(root / "datasets folder")
    datasets.enable_progress_bars()
    return {name: root / name for name in FOLDER_READERS}


def _folders_property(folders: dict[str, Path], examples: int, explore: bool = False) -> tuple[int, int]:
    tried = refused = 0

    @settings(settings.get_profile("explore") if explore else None, max_examples=examples, deadline=None,
              database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=st.data())
    def check(data) -> None:
        nonlocal tried, refused
        kind = data.draw(st.sampled_from(sorted(FOLDER_READERS)))
        files = sorted(p.name for p in folders[kind].iterdir() if p.is_file() and p.name != "index.faiss")
        name = data.draw(st.sampled_from(files))
        _, content = data.draw(damage(Sample(name, (folders[kind] / name).read_bytes())))
        with tempfile.TemporaryDirectory() as folder:
            copy = Path(folder) / kind
            shutil.copytree(folders[kind], copy)
            (copy / name).unlink()
            write_damaged(copy, name, content)
            try:
                FOLDER_READERS[kind](copy)
            except DataError as error:
                assert str(error).startswith(str(copy)), error
                assert "\n" not in str(error)
                refused += 1
        tried += 1

    check()
    return tried, refused


def test_every_folder_loader_reads_or_says_what_is_wrong(folders, capsys) -> None:
    tried, refused = _folders_property(folders, FAST)
    assert 0 < refused <= tried  # damage to a file the loader reads is refused (one it does not read is not)
    with capsys.disabled():
        print(f"\n{tried} damaged folders given to the loaders, {refused} refused in one line")


@pytest.mark.slow
def test_every_folder_loader_reads_or_says_what_is_wrong_exhaustive(folders, capsys) -> None:
    tried, refused = _folders_property(folders, EXHAUSTIVE, explore=True)
    assert 0 < refused <= tried  # damage to a file the loader reads is refused (one it does not read is not)
    with capsys.disabled():
        print(f"\n{tried} damaged folders given to the loaders, {refused} refused in one line")


# ------------------------------------------------------------------ the stages

runner = CliRunner()

#: A stage command per file argument: the damaged file's kind, and the arguments with ``{file}``,
#: ``{out}`` and the undamaged samples ``{corpus}``, ``{queries}``, ``{qrels}``, ``{run}``.
STAGE_ARGUMENTS = [
    ("corpus", ["prepare", "--corpus", "{file}", "--out", "{out}"]),
    ("articles", ["prepare", "--corpus", "{file}", "--links", "--out", "{out}"]),
    ("corpus", ["search", "--bm25", "--corpus", "{file}", "--queries", "{queries}", "--out", "{out}"]),
    ("queries", ["search", "--bm25", "--corpus", "{corpus}", "--queries", "{file}", "--out", "{out}"]),
    ("nq", ["search", "--bm25", "--corpus", "{corpus}", "--questions", "{file}", "--out", "{out}"]),
    ("run", ["evaluate", "{file}", "--qrels", "{qrels}", "--json", "{out}"]),
    ("qrels", ["evaluate", "{run}", "--qrels", "{file}", "--json", "{out}"]),
    ("corpus parquet", ["search", "--bm25", "--corpus", "{file}", "--queries", "{queries}", "--out", "{out}"]),
    ("qrels parquet", ["evaluate", "{run}", "--qrels", "{file}", "--json", "{out}"]),
    ("corpus", ["encode", "--model", "{model}", "--corpus", "{file}", "--out", "{out}", "--max-length", "16"]),
]


@pytest.fixture(scope="module")
def tiny_model(tokenizer, tmp_path_factory) -> Path:
    import torch
    from helpers import tiny_bert

    from seedr.modeling.encoder import save_encoder

    torch.manual_seed(0)
    return save_encoder(tiny_bert(tokenizer, intermediate_size=64), tokenizer,
                        tmp_path_factory.mktemp("model") / "tiny", max_seq_length=16)


def _stages_property(samples: dict[str, Sample], model: Path, examples: int,
                     explore: bool = False) -> tuple[int, int]:
    tried = refused = 0

    @settings(settings.get_profile("explore") if explore else None, max_examples=examples, deadline=None,
              database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=st.data())
    def check(data) -> None:
        nonlocal tried, refused
        kind, template = data.draw(st.sampled_from(STAGE_ARGUMENTS))
        name, content = data.draw(damage(samples[kind]))
        with tempfile.TemporaryDirectory() as folder:
            folder = Path(folder)
            (folder / "good").mkdir()
            good = {key: write_damaged(folder / "good", samples[key].name, samples[key].data)
                    for key in ("corpus", "queries", "qrels", "run")}
            path = write_damaged(folder, name, content)
            out = folder / "out"
            values = {"file": path, "out": out, "model": model, **good}
            result = runner.invoke(app, [part.format(**{k: str(v) for k, v in values.items()})
                                         for part in template])
            if result.exit_code != 0:
                assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
                assert "Traceback" not in result.output
                errors = [line for line in result.output.splitlines() if line.startswith("error:")]
                assert len(errors) == 1, result.output
                assert not out.exists(), result.output
                refused += 1
            else:
                assert content is not None, f"{' '.join(template)}: a folder given for {name} was read"
            assert not [p.name for p in folder.iterdir() if p.name.startswith(".")]  # no lock, no temporary
        tried += 1

    check()
    return tried, refused


def test_every_stage_file_argument_succeeds_or_fails_in_one_line(samples, tiny_model, capsys) -> None:
    tried, refused = _stages_property(samples, tiny_model, FAST // 2)
    assert 0 < refused <= tried  # the damage drawn includes some that must be refused (a folder for a file)
    with capsys.disabled():
        print(f"\n{tried} damaged files given to the stages, {refused} refused in one line")


@pytest.mark.slow
def test_every_stage_file_argument_succeeds_or_fails_in_one_line_exhaustive(samples, tiny_model, capsys) -> None:
    tried, refused = _stages_property(samples, tiny_model, EXHAUSTIVE, explore=True)
    assert 0 < refused <= tried  # the damage drawn includes some that must be refused (a folder for a file)
    with capsys.disabled():
        print(f"\n{tried} damaged files given to the stages, {refused} refused in one line")
