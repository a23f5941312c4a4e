"""``seedr config`` in every form, and every refusal of a bad setting or a missing input, answer before torch
is imported: each runs here as the ``seedr`` command runs (``seedr.cli.run``) in a fresh interpreter, which then
says which of the libraries that take seconds to import it loaded. Their wall time is measured in
``bench/bench_help.py`` (under 2 s); this keeps the reason they are fast. Errors are one line, a warning one
line without the source text that raised it, and an unknown key names the nearest valid one."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from seedr.stages import STAGES

#: What a configuration or a refusal must not wait for (seconds each; ``tests/test_import_graph.py``).
MODEL_PACKAGES = ("torch", "transformers", "accelerate", "sentence_transformers", "faiss", "bm25s")

#: Runs the ``seedr`` command on ``sys.argv[1:]``, then prints, last on stderr, the MODEL_PACKAGES it loaded.
PROBE = f"""
import sys
from seedr.cli import run
sys.argv = ["seedr", *sys.argv[1:]]
try:
    run()
    code = 0
except SystemExit as exit:
    code = exit.code or 0
print(sorted(set({MODEL_PACKAGES!r}) & set(sys.modules)), file=sys.stderr)
sys.exit(code)
"""


def seedr(*arguments: str, cwd=None) -> tuple[int, list[str], list[str]]:
    """``(exit code, output lines, heavy libraries loaded)`` of ``seedr ARGUMENTS`` in a fresh process."""
    result = subprocess.run([sys.executable, "-c", PROBE, *map(str, arguments)], capture_output=True, text=True,
                            cwd=cwd, check=False)
    *errors, loaded = result.stderr.splitlines() or [""]
    assert loaded.startswith("["), result.stderr[-2000:]
    lines = [line for line in [*result.stdout.splitlines(), *errors] if line.strip()]
    return result.returncode, lines, ast.literal_eval(loaded)


@pytest.mark.parametrize("stage", STAGES)
def test_every_help_answers_without_torch(stage):
    code, lines, loaded = seedr(stage, "--help")
    assert code == 0 and loaded == [] and any(f"Example: seedr {stage}" in line for line in lines)


@pytest.mark.parametrize("arguments", [
    ["pretrain", "--config", "seed"],
    ["pretrain", "--config", "seed", "--describe"],
    ["pretrain", "--config", "seed", "--set", "train.batch_size=8"],
    ["pretrain", "--config", "cpdae", "--set", "objective.contrastive_weight=0.2", "--describe"],
    ["pretrain", "--config", "ict_bfs_wlp"],
    ["finetune", "--config", "dpr"],
    ["finetune", "--config", "dpr", "--describe"],
    ["finetune", "--set", "model=seedr-base", "--set", "train.batch_size=8"],
])
def test_every_form_of_seedr_config_answers_without_torch(arguments):
    code, lines, loaded = seedr("config", *arguments)
    assert code == 0, lines
    assert loaded == []
    assert "accumulation" in lines[-1]  # the batch the settings make, last
    if "--describe" in arguments and arguments[0] == "pretrain":
        # the objective's options are described by its own class, read without torch
        assert any(line.startswith("objective.mask_probability = ") and "BERT: 0.15" in line for line in lines)


@pytest.mark.parametrize(("arguments", "nearest"), [
    (["config", "pretrain", "--config", "seed", "--set", "train.batchsize=8"], "`train.batch_size`"),
    (["config", "pretrain", "--config", "seed", "--set", "objective.attention_spam=3"], "`objective.attention_span`"),
    (["config", "finetune", "--config", "dpr", "--set", "train.learning_rat=1e-5"], "`train.learning_rate`"),
    (["pretrain", "--config", "seed", "--set", "train.batchsize=8", "--out", "runs/bad"], "`train.batch_size`"),
    (["finetune", "--config", "dpr", "--set", "negative_option.depth=5", "--out", "runs/bad"],
     "`negative_options`"),
])
def test_an_unknown_key_is_one_line_naming_the_nearest_without_torch(tmp_path, arguments, nearest):
    code, lines, loaded = seedr(*arguments, cwd=tmp_path)
    assert code == 1 and loaded == []
    assert len(lines) == 1 and lines[0].startswith("error: ") and f"did you mean {nearest}?" in lines[0], lines
    assert list(tmp_path.iterdir()) == []  # nothing written, not even a lock


def test_a_bad_value_and_a_too_deep_dev_metric_are_refused_without_torch(tmp_path, shared_data):
    code, lines, loaded = seedr("config", "pretrain", "--config", "seed", "--set", "objective.attention_span=0")
    assert code == 1 and loaded == [] and len(lines) == 1 and "attention_span must be ≥ 1" in lines[0], lines
    code, lines, loaded = seedr("finetune", "--train", shared_data / "scifact", "--set", "dev_metrics=[R@1000]",
                                "--out", tmp_path / "run")
    assert code == 1 and loaded == [] and len(lines) == 1 and "go deeper than the 100 documents" in lines[0], lines


def test_a_warning_is_one_line_without_its_source_text():
    code, lines, loaded = seedr("config", "finetune", "--config", "dpr", "--set", "train.warmup_ratio=0.5")
    assert code == 0 and loaded == []
    warnings = [line for line in lines if "warm-up" in line]
    assert len(warnings) == 1 and warnings[0].startswith("warning: warm-up takes 500 of 1000 steps"), lines
    assert not any("warnings.warn" in line or ".py:" in line for line in lines), lines


def missing_inputs(shared_data) -> list[tuple[list[str], str]]:
    """A command with one input missing, and what its one line says."""
    scifact = str(shared_data / "scifact")
    return [
        (["pretrain", "--config", "seed", "--model", "minilm", "--corpus", "missing.jsonl"],
         "missing.jsonl: no such corpus file or folder"),
        (["pretrain", "--config", "seed", "--corpus", "wiki/*.nothing"], "no corpus file matches this pattern"),
        (["pretrain", "--config", "seed", "--model", "missing-model"], "'missing-model' is not a local model folder"),
        (["pretrain", "--config", "seed", "--model", "minilm", "--tokenizer", "missing-tokenizer"],
         "'missing-tokenizer' is not a local model folder"),
        (["pretrain", "--config", "seed"], "pre-training from scratch needs a tokenizer"),
        (["finetune", "--train", "missing-beir"], "missing-beir: no such file or folder (expected a BEIR folder"),
        (["finetune", "--train", scifact, "--model", "missing-model"], "'missing-model' is not a local model folder"),
        (["finetune", "--train", scifact, "--dev-qrels", "missing.tsv"], "missing.tsv: no such qrels file"),
        (["finetune", "--train", scifact, "--dev-qrels", f"{scifact}/qrels/test.tsv", "--dev-queries", "missing.jsonl"],
         "missing.jsonl: no such queries file"),
        (["finetune", "--train", scifact, "--dev-qrels", f"{scifact}/qrels/test.tsv", "--dev-corpus", "missing.jsonl"],
         "missing.jsonl: no such corpus file"),
        (["encode", "--model", "minilm", "--corpus", "missing.jsonl"], "missing.jsonl: no such corpus file"),
        (["encode", "--model", "missing-model", "--corpus", f"{scifact}/corpus.jsonl"],
         "'missing-model' is not a local model folder"),
        (["search", "--bm25", "--corpus", "missing.jsonl", "--queries", f"{scifact}/queries.jsonl"],
         "missing.jsonl: no such corpus file"),
        (["search", "--bm25", "--corpus", f"{scifact}/corpus.jsonl", "--queries", "missing.jsonl"],
         "missing.jsonl: no such queries file"),
        (["search", "--index", "missing-index", "--model", "missing-model", "--queries", f"{scifact}/queries.jsonl"],
         "'missing-model' is not a local model folder"),
    ]


def test_a_missing_input_is_refused_in_one_line_before_torch_loads(tmp_path, shared_data):
    for arguments, said in missing_inputs(shared_data):
        code, lines, loaded = seedr(*arguments, "--out", "runs/new", cwd=tmp_path)
        assert code == 1 and loaded == [], (arguments, lines, loaded)
        assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], (arguments, lines)
        left = list((tmp_path / "runs").iterdir()) if (tmp_path / "runs").exists() else []
        assert left == [], arguments  # neither the output nor its lock


def test_an_output_is_refused_before_its_inputs_are_read_and_before_torch_loads(tmp_path):
    (tmp_path / "a-file").write_text("mine\n")
    code, lines, loaded = seedr("pretrain", "--config", "seed", "--corpus", "missing.jsonl", "--out", "a-file",
                                cwd=tmp_path)
    assert code == 1 and loaded == [] and len(lines) == 1 and "a-file: exists and is a file" in lines[0], lines
    assert (tmp_path / "a-file").read_text() == "mine\n"


def test_a_missing_run_is_refused_before_the_significance_tests_load(tmp_path, shared_data):
    code, lines, loaded = seedr("evaluate", "missing.trec", "--qrels", shared_data / "scifact" / "qrels" / "test.tsv",
                                cwd=tmp_path)
    assert code == 1 and loaded == [] and lines == ["error: missing.trec: no such file"], lines


def test_every_refusal_of_experiment_record_answers_before_torch_loads(tmp_path):
    # a checkout laid out like seedr's, whose docs/results/demo is a folder of the user's, not a record:
    # refused before the experiment runs (it was refused only once its report was made), and so are an
    # unknown name, a file of the same name elsewhere in the checkout, and any file outside a checkout
    checkout = tmp_path / "checkout"
    (checkout / "seedr" / "experiments").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("[project]\nname = 'seedr'\n")
    (checkout / "docs" / "results" / "demo").mkdir(parents=True)
    (checkout / "docs" / "results" / "demo" / "notes.md").write_text("mine\n")
    own = checkout / "seedr" / "experiments" / "demo.yaml"
    own.write_text("title: not validated before the refusals of --record\n")
    (checkout / "elsewhere").mkdir()
    (checkout / "elsewhere" / "demo.yaml").write_text(own.read_text())
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "demo.yaml").write_text(own.read_text())
    for name, said in [("unknown_experiment", "no experiment 'unknown_experiment'; known: "),
                       (own, "docs/results/demo: not a recorded report of experiment 'demo'"),
                       (checkout / "elsewhere" / "demo.yaml",
                        "--record records only the experiment's own file"),
                       (tmp_path / "outside" / "demo.yaml", "not in a seedr checkout")]:
        code, lines, loaded = seedr("experiment", name, "--record", "--out", "runs", cwd=tmp_path)
        assert code == 1 and loaded == [], (name, lines, loaded)
        assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], (name, lines)
    assert (checkout / "docs" / "results" / "demo" / "notes.md").read_text() == "mine\n"
    assert not (tmp_path / "runs").exists()


def test_a_pair_source_the_corpus_cannot_give_is_refused_before_torch_loads(tmp_path, shared_data):
    # SciFact's abstracts have no sections, so no BFS pair: refused after 24-32 s of imports, and now at once
    code, lines, loaded = seedr("adapt", "--model", "minilm", "--corpus", shared_data / "scifact",
                                "--pairs", "bfs", "--out", "runs/adapted", cwd=tmp_path)
    assert code == 1 and loaded == [], (lines, loaded)
    assert len(lines) == 1 and lines[0].startswith("error: ") and lines[0].endswith(
        "no bfs pair can be mined from these documents; pair sources they support: ict, title, crop"), lines
    assert not (tmp_path / "runs").exists() or list((tmp_path / "runs").iterdir()) == []  # no run, no lock
