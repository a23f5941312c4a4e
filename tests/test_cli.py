"""The ``seedr`` command itself: stages listed in data-flow order, every stage's help ending with an
example, a start-up that loads none of the heavy libraries, and option help that names exactly what the
registries hold."""

from __future__ import annotations

import re
import subprocess
import sys
import typing

import pytest
import typer
from typer.testing import CliRunner

from seedr.cli import app
from seedr.stages import STAGES

runner = CliRunner()

#: What a stage needs only once it runs; `seedr --help` must not wait for any of them.
HEAVY_PACKAGES = ("torch", "transformers", "accelerate", "sentence_transformers", "faiss", "bm25s",
                  "ir_measures", "numpy")


def stage_option(stage: str, option: str):
    """The parsed option ``--name`` of a stage, as the command line holds it."""
    command = typer.main.get_command(app).commands[stage]
    (parameter,) = [parameter for parameter in command.params if option in parameter.opts]
    return parameter


def test_help_lists_the_stages_in_data_flow_order():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0, result.output
    commands = result.output.split("Commands", 1)[1]
    # a command's row starts at the panel's edge; its wrapped description lines are indented
    listed = re.findall(r"^\W?\s{0,2}([a-z]+)\s", commands, flags=re.MULTILINE)
    assert listed == STAGES


@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_help_ends_with_an_example(stage):
    result = runner.invoke(app, [stage, "--help"])
    assert result.exit_code == 0, result.output
    assert f"Example: seedr {stage}" in result.output


def test_importing_the_cli_loads_no_heavy_library():
    probe = f"import sys, seedr.cli; print(sorted(set({HEAVY_PACKAGES!r}) & set(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_registry_names_written_into_option_help_match_the_registries():
    from seedr.data.corpus import CORPUS_FORMATS
    from seedr.losses import LOSSES
    from seedr.negatives import NEGATIVES

    assert f"auto, {', '.join(CORPUS_FORMATS.names())}." in stage_option("prepare", "--format").help
    assert f"Negative strategy: {', '.join(NEGATIVES.names())} " in stage_option("finetune", "--negatives").help
    assert f"Loss: {', '.join(LOSSES.names())} " in stage_option("finetune", "--loss").help


def test_evaluate_defaults_to_the_library_metrics():
    from seedr.evaluation.metrics import DEFAULT_METRICS

    assert stage_option("evaluate", "--metrics").default == ",".join(DEFAULT_METRICS)


@pytest.mark.parametrize("stage", ["finetune", "pretrain"])
def test_training_stage_help_lists_every_train_key_with_its_default(stage):
    import dataclasses

    from seedr.training.finetune import FinetuneConfig
    from seedr.training.pretrain import PretrainConfig

    defaults = (FinetuneConfig if stage == "finetune" else PretrainConfig)().train
    result = runner.invoke(app, [stage, "--help"])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())  # the help is wrapped to the terminal's width
    for field in dataclasses.fields(defaults):
        value = getattr(defaults, field.name)
        shown = "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
        assert re.search(rf"train\.{field.name} = {re.escape(shown)}: \w", output), field.name
    # each command shows its own defaults: fine-tuning's learning rate is not pre-training's
    assert ("train.learning_rate = 2e-05" in output) == (stage == "finetune")
    assert "train.scheduler = linear: " in output and "0 or null = no clipping" in output


# ------------------------------------------------------------------ issue 25: numeric options are range-checked


def numeric_options(stage: str) -> list:
    """The stage's options that take numbers (ints or floats, one or a list)."""
    command = typer.main.get_command(app).commands[stage]
    found = []
    for parameter in command.params:
        annotation = parameter.type_descriptor.annotation
        if typing.get_origin(annotation) is list:
            (annotation,) = typing.get_args(annotation)
        if annotation in (int, float):
            found.append((parameter, annotation))
    return found


def shown_range(low, high) -> str:
    """How --help shows an option's range."""
    return f"{low}<=x<={high}" if low is not None and high is not None else f"x>={low}" if high is None else f"x<={high}"


@pytest.mark.parametrize("stage", STAGES)
def test_every_numeric_option_shows_its_range_and_refuses_values_outside_it_at_parse_time(stage):
    help_text = runner.invoke(app, [stage, "--help"], env={"COLUMNS": "250"}).output
    for parameter, kind in numeric_options(stage):
        option = parameter.opts[0]
        assert parameter.min is not None or parameter.max is not None, f"seedr {stage} {option} takes any number"
        shown = re.escape(shown_range(parameter.min, parameter.max))
        assert re.search(rf"{re.escape(option)}\s+<[^>]+> \[{shown}\]", help_text), (option, help_text)
        outside = [*([parameter.min - (1 if kind is int else 0.5)] if parameter.min is not None else []),
                   *([parameter.max + 1] if parameter.max is not None else []), *(["nan"] if kind is float else [])]
        for value in outside:  # refused by the parser: before any work, and nothing written
            result = runner.invoke(app, [stage, option, str(value)])
            assert result.exit_code == 2, (option, value, result.output)
            assert f"Invalid value for '{option}'" in " ".join(result.output.split()), (option, value, result.output)


def test_the_issues_impossible_options_are_refused():
    for arguments in (("evaluate", "x.trec", "--qrels", "q.tsv", "--resamples", "-5"),
                      ("evaluate", "x.trec", "--qrels", "q.tsv", "--alpha", "7"),
                      ("encode", "--model", "minilm", "--corpus", "c.jsonl", "--out", "e", "--max-length", "-5"),
                      ("encode", "--model", "minilm", "--corpus", "c.jsonl", "--out", "e", "--max-length", "0"),
                      ("encode", "--model", "minilm", "--corpus", "c.jsonl", "--out", "e", "--limit", "0"),
                      ("search", "--bm25", "--corpus", "c.jsonl", "--queries", "q.jsonl", "--out", "r", "--k1", "-1")):
        result = runner.invoke(app, list(arguments))
        assert result.exit_code == 2 and "Invalid value for" in result.output, (arguments, result.output)
        assert "Traceback" not in result.output
