"""seedr as a user installs it (issue 22.1): its wheel, built from this checkout and installed without
its dependencies into a scratch folder (the suite's environment provides them, so this stays fast), run
from a folder outside any checkout, finds the experiment files (with the shared files they extend) and
recipes it ships by name, validates them, and refuses ``--record`` there in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints.txt"  # every pip call: it pins this machine's CPU build of torch


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The folder the wheel is installed into (``pip install --target``)."""
    scratch = tmp_path_factory.mktemp("wheel")
    source = scratch / "source"  # a copy: an in-tree build would write build/ and the egg-info into the checkout
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(ROOT / name, source / name)
    shutil.copytree(ROOT / "seedr", source / "seedr", ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-c", CONSTRAINTS, "--wheel-dir",
                    scratch / "dist", source], check=True)
    (wheel,) = (scratch / "dist").glob("seedr-*.whl")
    target = scratch / "target"
    subprocess.run([*pip, "install", "--no-deps", "--no-compile", "--target", target, "-c", CONSTRAINTS, wheel],
                   check=True)
    return target


def test_the_wheel_runs_from_any_folder(installed: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert not elsewhere.resolve().is_relative_to(ROOT)
    environment = {**os.environ, "PYTHONPATH": str(installed), "COLUMNS": "250"}  # the wheel's code first

    def run(*command: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(part) for part in command], cwd=elsewhere, env=environment,
                              capture_output=True, text=True, timeout=300)

    seedr = installed / "bin" / "seedr"
    # the wheel's own code and files, not the checkout's; a recipe by name is a valid configuration
    probe = run(sys.executable, "-c", "import seedr; from seedr.config.loading import load_config; "
                "from seedr.recipes import recipe_path; from seedr.config.settings import PretrainConfig; "
                "print(seedr.__file__); print(recipe_path('seed', 'pretrain')); "
                "print(load_config(PretrainConfig, recipe_path('seed', 'pretrain')).objective_name)")
    assert probe.returncode == 0, probe.stderr
    module, recipe, objective = probe.stdout.split()
    assert Path(module) == installed / "seedr" / "__init__.py"
    assert Path(recipe) == installed / "seedr" / "recipes" / "pretrain" / "seed.yaml" and objective == "seed"

    listing = run(seedr, "experiment", "--list")
    assert listing.returncode == 0, listing.stderr
    listed = {line.split()[0] for line in listing.stdout.splitlines()}
    assert {"demo", "domain_adaptation", "from_scratch"} <= listed
    assert not {"scifact", "minilm_calibrated"} & listed  # shared files, not experiments

    extending = run(seedr, "experiment", "headline", "--scale", "paper")  # finds the shared files it extends
    assert extending.returncode == 0, extending.stderr

    unknown = run(seedr, "pretrain", "--config", "nope", "--out", "run")  # the CLI's lookup, from the wheel
    assert unknown.returncode == 1 and "no pretrain recipe 'nope'; known: " in unknown.stderr
    assert str(installed / "seedr" / "recipes" / "pretrain") in unknown.stderr and "seed_strong" in unknown.stderr

    paper = run(seedr, "experiment", "demo", "--scale", "paper")  # validated, nothing run
    assert paper.returncode == 0, paper.stderr
    text = " ".join(paper.stderr.split())
    assert f"{installed / 'seedr' / 'experiments' / 'demo.yaml'}: paper scale is valid" in text
    assert "nothing was run" in text

    record = run(seedr, "experiment", "demo", "--record")  # no checkout here, nor above the wheel's files
    assert record.returncode == 1 and "demo.yaml: not in a seedr checkout" in record.stderr
    assert len(record.stderr.strip().splitlines()) == 1 and list(elsewhere.iterdir()) == []


def test_the_wheel_carries_the_seedr_base_and_the_python_api(installed: Path, tmp_path: Path,
                                                             scifact_slice: Path) -> None:
    """From the wheel, outside any checkout: ``--model seedr-base`` is the packaged base (files inside the
    install, not a link back into the checkout), ``help(seedr.pretrain)`` documents the API, and the
    your-corpus command of the README pre-trains on a folder of the user's documents."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    environment = {**os.environ, "PYTHONPATH": str(installed), "COLUMNS": "250"}

    def run(*command: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(part) for part in command], cwd=elsewhere, env=environment,
                              capture_output=True, text=True, timeout=600)

    probe = run(sys.executable, "-c", "from seedr.modeling.encoder import resolve_model_path; "
                "print(resolve_model_path('seedr-base').resolve())")
    assert probe.returncode == 0, probe.stderr
    base = Path(probe.stdout.strip())
    assert base.is_relative_to(installed.resolve()) and (base / "model.safetensors").is_file()
    assert not base.is_relative_to(ROOT)

    documented = run(sys.executable, "-c", "import seedr; help(seedr.pretrain)")
    assert documented.returncode == 0 and "Pre-train an encoder" in documented.stdout
    assert "settings" in documented.stdout and "Example" in documented.stdout

    mydir = elsewhere / "mydir"  # a user's corpus: a folder of JSONL shards
    mydir.mkdir()
    shutil.copyfile(scifact_slice / "corpus.jsonl", mydir / "part-0.jsonl")
    pretrained = run(installed / "bin" / "seedr", "pretrain", "--config", "seed", "--model", "seedr-base",
                     "--corpus", "mydir", "--out", "runs/seed-mydomain", "--set", "train.max_steps=2",
                     "--set", "train.batch_size=4", "--set", "train.global_batch_size=4",
                     "--set", "data.max_seq_length=64")
    assert pretrained.returncode == 0, pretrained.stderr
    encoder = elsewhere / "runs" / "seed-mydomain" / "encoder"
    assert (encoder / "model.safetensors").is_file()
    card = (encoder / "README.md").read_text(encoding="utf-8")
    assert ".tmp" not in card and str(elsewhere) not in card and "seedr-base" in card
