"""Progress in the long stages: per-batch bars with passages/s and an ETA (encode, BM25, answer coverage,
significance tests), and errors that start a line of their own after an interrupted bar."""

from __future__ import annotations

import functools
import itertools
import os
import re
from pathlib import Path

import pytest
from tqdm.auto import tqdm
from typer.testing import CliRunner

from seedr.cli import app
from seedr.data.articles import read_articles
from seedr.data.corpus import count_documents, read_corpus, write_corpus
from seedr.data.passages import split_passages

runner = CliRunner()


def seedr(*args: str | Path):
    return runner.invoke(app, [str(arg) for arg in args])


@pytest.fixture(scope="module")
def scifact_head(shared_data: Path, tmp_path_factory) -> Path:
    """The first 21 SciFact abstracts as BEIR corpus.jsonl, the 22nd line broken JSON."""
    path = tmp_path_factory.mktemp("progress") / "corpus.jsonl"
    lines = (shared_data / "scifact" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:21]
    path.write_text("\n".join(lines) + '\n{"_id": "broken", "text": \n', encoding="utf-8")
    return path


def test_encoding_reports_every_batch(scifact_head):
    from seedr.retrieval.encode import TextEncoder

    documents = list(itertools.islice(read_corpus(scifact_head), 10))
    batches: list[int] = []
    TextEncoder("minilm", max_length=32).encode_documents(documents, batch_size=4, on_batch=batches.append)
    assert batches == [4, 4, 2]


def test_counting_documents_for_an_eta(shared_data, scifact_head):
    assert count_documents(scifact_head) == 22  # every line, the broken one too: an upper bound
    assert count_documents(shared_data / "scifact") == 5_183
    assert count_documents(shared_data / "foldoc" / "foldoc.jsonl.gz") is None  # a glossary: not counted


def test_encode_shows_passages_per_second_and_an_error_starts_its_own_line(scifact_head, tmp_path, monkeypatch):
    from seedr.retrieval import encode

    # draw every update, however fast the batches (tqdm skips redraws within 0.1 s)
    monkeypatch.setattr(encode, "tqdm", functools.partial(tqdm, mininterval=0, miniters=1))
    result = seedr("encode", "--model", "minilm", "--corpus", scifact_head, "--max-length", 32,
                   "--batch-size", 4, "--shard-size", 8, "--out", tmp_path / "emb")
    assert result.exit_code == 1
    # a bar that moves every batch of 4 (of 22 lines counted), two shards of 8 done, then the bad line
    assert re.search(r"encode corpus: .*\| 4/22 \[", result.output), result.output
    eta_and_rate = r"\[\d\d:\d\d<\d\d:\d\d, +[\d.]+(passage/s|s/passage)\]"  # elapsed<remaining, rate
    assert re.search(r"encode corpus: .*\| 12/22 " + eta_and_rate, result.output)
    # tqdm pads a redraw shorter than the one before with spaces ("96.55passage/s] " after "108.73...")
    assert re.search(r"\| 16/22 \[[^\n]*\] *\nerror: .*corpus\.jsonl, line 22: malformed JSON", result.output)


def test_bm25_answer_coverage_and_significance_show_progress(wiki_shard, shared_data, tmp_path):
    write_corpus(tmp_path / "passages.jsonl", split_passages(itertools.islice(read_articles(wiki_shard), 20)))
    lines = (shared_data / "nq-open" / "NQ-open.dev.jsonl").read_text().splitlines()[:30]
    (tmp_path / "nq.jsonl").write_text("\n".join(lines) + "\n")
    for name, k1 in (("a", 0.9), ("b", 1.2)):
        result = seedr("search", "--bm25", "--corpus", tmp_path / "passages.jsonl", "--questions",
                       tmp_path / "nq.jsonl", "--k1", k1, "--k", 5, "--out", tmp_path / f"{name}.trec")
        assert result.exit_code == 0, result.output
        passages = count_documents(tmp_path / "passages.jsonl")
        assert re.search(rf"bm25 read: 100%.*\| {passages}/{passages} \[.*passage", result.output)
        assert re.search(r"bm25: 100%.*\| 30/30 \[.*query", result.output)
    result = seedr("evaluate", tmp_path / "a.trec", tmp_path / "b.trec", "--qa-answers", tmp_path / "nq.jsonl",
                   "--corpus", tmp_path / "passages.jsonl", "--ks", "1,5", "--resamples", 200)
    assert result.exit_code == 0, result.output
    assert re.search(r"read passages: 100%.*passage", result.output)
    assert re.search(r"answer coverage: 100%.*\| 30/30 \[.*question", result.output)
    assert re.search(r"significance: 100%.*\| 2/2 \[.*metric", result.output)
    assert "Top-5" in result.output


# ------------------------------------------------------------------ issue 25: output that is not a terminal


def test_redraws_become_lines_of_their_own():
    import io

    from seedr.progress import LineProgress

    captured = io.StringIO()
    stream = LineProgress(captured)
    for _ in tqdm(range(40), desc="bm25", unit="query", file=stream, mininterval=0, miniters=1):
        pass
    stream.write("error: one line\n")
    text = captured.getvalue()
    assert "\r" not in text and "\n\n" not in text
    lines = text.splitlines()
    assert len(lines) >= 42 and lines[-1] == "error: one line"  # 0/40 … 40/40 (drawn again on close), the error
    assert re.fullmatch(r"bm25: 100%\|\S+\| 40/40 \[\d\d:\d\d<\d\d:\d\d, +[\d.]+\w*query/s\]", lines[-2]), lines[-2]


def test_a_command_whose_output_is_a_file_prints_progress_lines_at_an_interval(tmp_path):
    import subprocess
    import sys

    script = ("from seedr.progress import plain_progress; plain_progress()\n"
              "import time; from tqdm.auto import tqdm\n"
              "bar = tqdm(range(30), desc='encode corpus', unit='passage')\n"
              "assert bar.mininterval == 0.1, bar.mininterval\n"
              "for _ in bar: time.sleep(0.02)\n"
              "from transformers.utils import logging; assert not logging.is_progress_bar_enabled()\n")
    with open(tmp_path / "log.txt", "w") as log:  # a file, as under nohup or on a cluster
        subprocess.run([sys.executable, "-c", script], stderr=log, check=True,
                       env={**os.environ, "SEEDR_PROGRESS_INTERVAL": "0.1"})
    text = (tmp_path / "log.txt").read_text()
    assert "\r" not in text, repr(text)
    lines = text.splitlines()
    assert 3 <= len(lines) <= 12, lines  # about one a 0.1 s over 0.6 s, not one a passage
    assert all(line.startswith("encode corpus: ") for line in lines) and "30/30" in lines[-1]
    assert all(re.search(r"<\d\d:\d\d", line) for line in lines[1:])  # the ETA on every line after the first
