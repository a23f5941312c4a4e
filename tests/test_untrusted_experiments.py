"""Experiment files, recipes and `seedr average` outputs from someone else: names that become paths are
plain names, checked when the file is read; `--record` replaces nothing but a recorded report of the
experiment; YAML alias bombs and grids that expand without end are refused before anything is written;
an average is never written inside one of its members (or over them)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from seedr.cli import app
from seedr.config.loading import parse_yaml, read_recipe
from seedr.experiments.record.docs_results import record
from seedr.experiments.spec import load_experiment
from seedr.io import DataError
from seedr.modeling.encoder import save_encoder
from tests.helpers import bm25_experiment, one_error_line, snapshot, tiny_bert

runner = CliRunner()

BM25_ONLY = bm25_experiment("BM25 alone")


@pytest.fixture
def fake_checkout(tmp_path: Path) -> Path:
    """A checkout laid out like seedr's (``seedr.experiments.spec.checkout``) with a recorded report and
    a claims page: what a bad name must not touch."""
    repo = tmp_path / "repo"
    (repo / "docs" / "results" / "recorded").mkdir(parents=True)
    (repo / "pyproject.toml").write_text("[project]\nname = 'fake'\n")
    (repo / "docs" / "index.md").write_text("# documentation\n")
    (repo / "docs" / "claims.md").write_text("# claims\n")
    (repo / "docs" / "results" / "recorded" / "results.json").write_text(json.dumps({"experiment": "recorded"}))
    (repo / "docs" / "results" / "recorded" / "report.md").write_text("# recorded\n")
    (repo / "experiments").mkdir()
    return repo


# ------------------------------------------------------------------ --record (item 3)


@pytest.mark.parametrize("file_name", ["..yaml", "...yaml", ".yaml", "two words.yaml", "-dash.yaml"])
def test_record_refuses_an_experiment_whose_name_is_not_plain(fake_checkout, scifact_slice, file_name):
    """The file's stem names docs/results/NAME: ``..yaml`` (stem ``.``) once wiped docs/results and
    ``...yaml`` (stem ``..``) all of docs/. Refused in one line before anything runs or is written."""
    path = fake_checkout / "experiments" / file_name
    path.write_text(BM25_ONLY)
    before = snapshot(fake_checkout / "docs")
    out = fake_checkout.parent / "work"
    result = runner.invoke(app, ["experiment", str(path), "--out", str(out), "--record",
                                 "--set", f"data={scifact_slice}"])
    assert result.exit_code == 1, result.output
    line = one_error_line(result.output)
    assert file_name in line and "experiment's name" in line
    assert snapshot(fake_checkout / "docs") == before and not out.exists()


def _results(experiment: str, file: str | None = None) -> str:
    """A results.json of ``experiment`` run from ``file`` (default: its own file in a checkout)."""
    return json.dumps({"experiment": experiment, "file": file or f"/repo/seedr/experiments/{experiment}.yaml"})


def _report(folder: Path, experiment: str, file: str | None = None) -> Path:
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(_results(experiment, file))
    (folder / "report.md").write_text(f"# {experiment}\n")
    (folder / "report.html").write_text("<html></html>")
    return folder


def test_record_replaces_only_a_recorded_report_of_that_experiment(fake_checkout, tmp_path):
    """``record`` removes nothing but ``docs/results/NAME`` holding a results.json of experiment NAME:
    not docs/results itself, not its parent, not a folder of something else, not where a link leads."""
    results = fake_checkout / "docs" / "results"
    report = _report(tmp_path / "run" / "reports" / "tiny", "tiny")
    (results / "tiny").mkdir()
    (results / "tiny" / "notes.md").write_text("not a report\n")  # a folder without results.json
    (results / "other").mkdir()
    (results / "other" / "results.json").write_text(_results("other"))
    elsewhere = _report(tmp_path / "elsewhere" / "linked", "linked")
    (results / "linked").symlink_to(elsewhere, target_is_directory=True)
    linked_report = _report(tmp_path / "run" / "reports" / "linked", "linked")
    before, outside = snapshot(fake_checkout), snapshot(elsewhere)
    for source, target, message in (
            (report, results / ".", "report of experiment 'tiny', not of 'results'"),  # "." is docs/results
            (report, results / "..", "experiment's name"),
            (report, results / "tiny", "not a recorded report of experiment 'tiny'"),
            (report, results / "other", "report of experiment 'tiny', not of 'other'"),
            (linked_report, results / "linked", "a link")):
        with pytest.raises(DataError, match=message) as refused:
            record(source, target)
        assert "\n" not in str(refused.value)
    assert snapshot(fake_checkout) == before and snapshot(elsewhere) == outside

    (results / "tiny" / "notes.md").unlink()
    (results / "tiny" / "results.json").write_text(_results("tiny"))
    (results / "tiny" / "plots").mkdir()
    (results / "tiny" / "plots" / "stale.png").write_bytes(b"old plot")
    (results / "tiny" / "PROVENANCE.md").write_text("how the record was made\n")
    (results / "tiny" / "trial").mkdir()
    (results / "tiny" / "trial" / "results.json").write_text("{}")
    (report / "plots").mkdir()
    (report / "plots" / "loss.png").write_bytes(b"new plot")
    assert record(report, results / "tiny") == results / "tiny"  # a recorded report of tiny is replaced
    # what the report writes is replaced whole (plots/ too); what it does not write is kept
    assert sorted(str(path.relative_to(results / "tiny")) for path in (results / "tiny").rglob("*")) == [
        "PROVENANCE.md", "plots", "plots/loss.png", "report.md", "results.json", "trial", "trial/results.json"]
    assert sorted(path.name for path in results.iterdir()) == ["linked", "other", "recorded", "tiny"]


def test_record_refuses_a_report_of_a_stray_file_of_the_experiments_name(fake_checkout, tmp_path):
    """#58 item 4: a 13-line BM25-only ``demo.yaml`` elsewhere in the checkout, run with ``--record``, once
    replaced docs/results/demo (PROVENANCE, trials, plots) and the claims page: only a report made by
    ``seedr/experiments/NAME.yaml`` is recorded, and the stage refuses the stray file before running."""
    results = fake_checkout / "docs" / "results"
    (results / "demo").mkdir()
    (results / "demo" / "results.json").write_text(_results("demo"))
    (results / "demo" / "PROVENANCE.md").write_text("how the record was made\n")
    stray = _report(tmp_path / "run" / "reports" / "demo", "demo", file=str(fake_checkout / "notes" / "demo.yaml"))
    before = snapshot(fake_checkout)
    with pytest.raises(DataError, match="not by experiment 'demo'.s own file"):
        record(stray, results / "demo")
    assert snapshot(fake_checkout) == before

    path = fake_checkout / "notes" / "demo.yaml"
    path.parent.mkdir()
    path.write_text(BM25_ONLY)
    out = fake_checkout.parent / "work"
    result = runner.invoke(app, ["experiment", str(path), "--out", str(out), "--record"])
    assert result.exit_code == 1, result.output
    assert "seedr/experiments/demo.yaml" in one_error_line(result.output)
    assert snapshot(fake_checkout) == {**before, "notes": None, "notes/demo.yaml": BM25_ONLY.encode()}
    assert not out.exists()


# ------------------------------------------------------------------ names that become paths (item 4)


@pytest.mark.parametrize(("edit", "entry"), [
    (lambda text: text.replace("  scifact:", "  ../../../escaped:"), "tasks.../../../escaped"),
    (lambda text: text.replace("  scifact:", "  /tmp/anywhere:"), "tasks./tmp/anywhere"),
    (lambda text: text.replace("  bm25: {retrieve", "  ../bm25: {retrieve").replace("baseline: bm25",
                                                                                      "baseline: ../bm25"),
     "conditions.../bm25"),
    (lambda text: text.replace("  bm25: {retrieve: bm25}", "  bm25: {retrieve: bm25}\n"
                                                           "  'x-{s}': {grid: {s: [1, ../up]}, retrieve: bm25}"),
     "conditions.x-../up"),
    (lambda text: text.replace("tasks:", "setup:\n  ../prepared: {kind: prepare, corpus: '{data}/corpus.jsonl'}\n"
                                         "tasks:"), "setup.../prepared"),
    (lambda text: text.replace("  scifact:", "  .hidden:"), "tasks..hidden"),
])
def test_names_that_become_paths_are_refused_when_the_file_is_read(tmp_path, edit, entry):
    """Tasks, conditions (grids expanded) and set-up steps name folders and files of the work folder:
    a name is one plain path component, checked by ``load_experiment`` with the file and the entry."""
    path = tmp_path / "named.yaml"
    path.write_text(edit(BM25_ONLY))
    with pytest.raises(DataError, match="may not") as refused:
        load_experiment(path, "cpu", ["data=data"])
    assert str(path) in str(refused.value) and entry in str(refused.value) and "\n" not in str(refused.value)


def test_a_task_named_out_of_the_work_folder_writes_nothing(tmp_path, scifact_slice):
    """The task ``../../../escaped`` with ``--out runs/a/b`` wrote ``runs/escaped-KEY/run.trec``."""
    path = tmp_path / "escape.yaml"
    path.write_text(BM25_ONLY.replace("  scifact:", "  ../../../escaped:"))
    result = runner.invoke(app, ["experiment", str(path), "--out", str(tmp_path / "runs" / "a" / "b"),
                                 "--set", f"data={scifact_slice}"])
    assert result.exit_code == 1, result.output
    assert "tasks.../../../escaped" in one_error_line(result.output)
    assert not (tmp_path / "runs").exists()


# ------------------------------------------------------------------ what a file may expand to (item 5)


def _billion_laughs(levels: int = 9) -> str:
    """Nested aliases: 10 strings, then each level ten aliases of the one before (10**levels strings)."""
    lines = ['  l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return "variables:\n" + "\n".join(lines) + "\n"


def test_a_retrieve_that_is_neither_bm25_nor_settings_is_refused_in_one_line(tmp_path):
    """Found by tests/test_fuzz_readers.py: ``retrieve: bm1e-999`` (a mistyped bm25) crashed with an
    AttributeError instead of naming the file and the field."""
    path = tmp_path / "typo.yaml"
    path.write_text(bm25_experiment("a typo", conditions="  bm25: {retrieve: bm1e-999}\n"))
    result = runner.invoke(app, ["experiment", str(path), "--out", str(tmp_path / "work"), "--scale", "paper"])
    assert result.exit_code == 1, result.output
    line = one_error_line(result.output)
    assert "typo.yaml" in line and "conditions.bm25.retrieve" in line and "bm1e-999" in line


@pytest.mark.timeout(60)
def test_an_alias_bomb_is_refused_in_an_experiment_file(tmp_path):
    """A ~750-byte experiment file expanding to 10**9 strings wrote a 1.9 GB temporary in two minutes:
    refused within a second, one line naming the file, nothing written."""
    path = tmp_path / "bomb.yaml"
    path.write_text(BM25_ONLY.replace('variables: {data: ""}\n', _billion_laughs() + '  data: ""\n'))
    assert len(path.read_bytes()) < 1000
    out = tmp_path / "work"
    started = time.perf_counter()
    result = runner.invoke(app, ["experiment", str(path), "--out", str(out), "--scale", "paper"])
    assert time.perf_counter() - started < 1.0
    assert result.exit_code == 1, result.output
    line = one_error_line(result.output)
    assert "bomb.yaml" in line and "alias" in line
    assert not out.exists() and sorted(path.name for path in tmp_path.iterdir()) == ["bomb.yaml"]


@pytest.mark.timeout(60)
def test_alias_bombs_and_recursive_aliases_are_refused_by_every_yaml_reader(tmp_path):
    """Recipes and every YAML seedr reads go through ``seedr.config.loading.parse_yaml``; aliases stay usable."""
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(_billion_laughs())
    with pytest.raises(DataError, match=r"recipe\.yaml: .*alias") as refused:
        read_recipe(recipe)
    assert "\n" not in str(refused.value)
    recipe.write_text("loop: &loop [1, *loop]\n")
    with pytest.raises(DataError, match=r"recipe\.yaml: .*line 1: an alias refers to itself"):
        read_recipe(recipe)
    level = parse_yaml(_billion_laughs(3))["variables"]["l3"]  # 10**3 strings through aliases are fine
    assert [len(level), len(level[0]), len(level[0][0]), len(level[0][0][0]), level[0][0][0][0]] == [10] * 4 + ["lol"]


@pytest.mark.timeout(60)
def test_a_grid_expanding_to_too_many_conditions_is_refused(tmp_path):
    """A grid multiplies: nine lists of ten values are 10**9 conditions from one line."""
    path = tmp_path / "grid.yaml"
    values = "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"
    grid = ", ".join(f"v{i}: {values}" for i in range(9))
    path.write_text(BM25_ONLY.replace("  bm25: {retrieve: bm25}", "  bm25: {retrieve: bm25}\n  'g-"
                                      + "-".join(f"{{v{i}}}" for i in range(9)) + f"': {{grid: {{{grid}}}, "
                                      "retrieve: bm25}"))
    started = time.perf_counter()
    with pytest.raises(ValueError, match=r"grid\.yaml: conditions\.g-.* makes 1000000000 conditions") as refused:
        load_experiment(path, "cpu", ["data=data"])
    assert time.perf_counter() - started < 1.0 and "\n" not in str(refused.value)


# ------------------------------------------------------------------ average --out inside a member (item 6)


def _saved_model(tokenizer, folder: Path, seed: int) -> Path:
    torch.manual_seed(seed)
    save_encoder(tiny_bert(tokenizer), tokenizer, folder, pooling="mean", similarity="cosine", normalize=True)
    return folder


def test_average_refuses_an_output_inside_a_member_or_holding_one(tokenizer, tmp_path):
    """``seedr average m1 m2 --out m1/soup`` left a copy and a lock inside m1, which could then no longer
    be averaged; ``--out`` the folder holding the members would replace them. Both refused in one line,
    nothing written; m1 still averages."""
    models = tmp_path / "models"
    first, second = _saved_model(tokenizer, models / "m1", 0), _saved_model(tokenizer, models / "m2", 1)
    before = snapshot(tmp_path)
    for out, message in ((first / "soup", "inside"), (first / "deeper" / "soup", "inside"),
                         (models, "holds"), (first, "an input of this command")):
        result = runner.invoke(app, ["average", str(first), str(second), "--out", str(out)])
        assert result.exit_code == 1, result.output
        assert message in one_error_line(result.output)
        assert snapshot(tmp_path) == before
    result = runner.invoke(app, ["average", str(first), str(second), "--out", str(tmp_path / "soup")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "soup" / "model.safetensors").is_file()
