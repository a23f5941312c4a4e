"""The README's examples run as written: its Python example (the your-corpus how-to) is executed verbatim in
a scratch folder laid out as the README assumes (``../shared/data`` beside the working folder, its SciFact
cut to the queries and abstracts the example's sizes use, so that encoding and searching the whole corpus
do not take most of the test's time), and what it promises is checked: a pre-trained seed, a retriever, hits
with ids, scores and texts, an evaluation table."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
import yaml
from helpers import scifact_cut

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The heading of the how-to whose Python example this test runs.
HOW_TO = "## Your corpus"


def readme_python_example() -> str:
    """The first ```python block under the how-to heading."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index(HOW_TO):]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, f"no python example under {HOW_TO!r}"
    return match.group(1)


def test_the_readme_python_example_runs_as_written(shared_data, tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    # SciFact as the example reads it, cut: 160 training queries (its 10 fine-tuning steps of 16), 40 test
    # queries, their judged abstracts and the first 500 others (pre-training reads 500 documents)
    scifact_cut(shared_data / "scifact", tmp_path / "shared" / "data" / "scifact", test=40, train=160,
                others=500)
    monkeypatch.chdir(work)
    namespace: dict = {}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(readme_python_example(), str(README), "exec"), namespace)  # noqa: S102 (our own README)
    import seedr

    seed, retriever, index = namespace["seed"], namespace["retriever"], namespace["index"]
    assert isinstance(seed, seedr.TrainingRun) and (seed.encoder / "model.safetensors").is_file()
    assert isinstance(retriever, seedr.TrainingRun) and (retriever.encoder / "config.json").is_file()
    # the recipe says mean pooling (MiniLM's), but the retriever is trained through the [CLS] bottleneck SEED trained
    for run in (seed, retriever):
        pooling = json.loads((run.encoder / "1_Pooling" / "config.json").read_text())
        assert pooling["pooling_mode_cls_token"] and not pooling["pooling_mode_mean_tokens"], run
    assert yaml.safe_load((retriever.path / "config.yaml").read_text())["pooling"] == "cls"
    hits = index.search("Vitamin D deficiency and multiple sclerosis", k=3)
    assert len(hits) == 3 and all(isinstance(hit, seedr.Hit) and hit.text for hit in hits)
    assert hits[0].score >= hits[1].score >= hits[2].score
    output = printed.getvalue()
    assert f"{hits[0].id}  {hits[0].text[:60]}" in output  # the example printed its hits, by what every corpus has
    assert "nDCG@10" in output and "bm25" in output  # and the evaluation table,
    assert re.search(r"[+-]\d\.\d{4} p=", output)  # with differences and p-values, as `seedr evaluate`


@pytest.mark.parametrize("phrase", ["make", "pip install", "seedr-base", "import seedr"])
def test_the_readme_front_page_says_how_to_start(phrase):
    head = "\n".join(README.read_text(encoding="utf-8").splitlines()[:120])
    assert phrase in head
