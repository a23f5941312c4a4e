"""The API's numeric arguments are checked as the command line's options are (issue 58, item 9): each stage's
config declares its options' bounds once (``seedr.pipeline.options``), and making the config refuses a bad value
with one line naming the argument and what it takes, before anything is loaded or any output (or its lock) is
touched; the typer options take their ranges from the same declaration (#64).
"""

from __future__ import annotations

import math

import pytest
import typer
from typer.testing import CliRunner

import seedr
from seedr.cli import app
from seedr.pipeline.options import declared
from seedr.stages.options import option_range
from tests.test_options_declared_once import STAGE_CONFIGS

runner = CliRunner()


def _evaluate(tmp_path, **arguments):
    return seedr.evaluate([tmp_path / "run.trec"], qrels=tmp_path / "qrels.tsv", **arguments)


def _search(tmp_path, **arguments):
    return seedr.search(tmp_path / "out.trec", bm25=True, corpus=tmp_path / "corpus.jsonl",
                        queries=tmp_path / "queries.jsonl", **arguments)


def _encode(tmp_path, **arguments):
    return seedr.encode("minilm", tmp_path / "corpus.jsonl", tmp_path / "out", **arguments)


def _index(tmp_path, **arguments):
    return seedr.index(tmp_path / "embeddings", tmp_path / "out", **arguments)


def _index_search(tmp_path, **arguments):
    return seedr.Index(tmp_path / "index").search("what causes tides?", **arguments)


def _finetune(tmp_path, **arguments):
    return seedr.finetune(tmp_path / "out", train=tmp_path / "scifact", **arguments)


def _adapt(tmp_path, **arguments):
    return seedr.adapt(tmp_path / "out", corpus=tmp_path / "corpus.jsonl", **arguments)


def _fuse(tmp_path, **arguments):
    return seedr.fuse([tmp_path / "a.trec", tmp_path / "b.trec"], tmp_path / "out.trec", **arguments)


def _average(tmp_path, **arguments):
    return seedr.average(["minilm", "minilm"], tmp_path / "out", **arguments)


def _prepare(tmp_path, **arguments):
    return seedr.prepare(tmp_path / "out", corpus=tmp_path / "corpus.jsonl", **arguments)


def _diagnose(tmp_path, **arguments):
    return seedr.diagnose("minilm", tmp_path / "out", corpus=tmp_path / "corpus.jsonl", **arguments)


BAD = [  # (call, argument, value, error, message): the cases first
    (_evaluate, "alpha", 5, ValueError, "alpha must be a number in (0, 1), got 5"),
    (_evaluate, "alpha", -1, ValueError, "alpha must be a number in (0, 1), got -1"),
    (_evaluate, "alpha", 1, ValueError, "got 1"),
    (_evaluate, "alpha", 0.0, ValueError, "got 0.0"),
    (_evaluate, "alpha", math.nan, ValueError, "got nan"),
    (_evaluate, "alpha", "0.05", TypeError, "alpha must be a number in (0, 1), got '0.05' (str)"),
    (_evaluate, "resamples", 0, ValueError, "resamples must be an integer at least 1, got 0"),
    (_evaluate, "resamples", 100.5, TypeError, "resamples must be an integer at least 1, got 100.5 (float)"),
    (_evaluate, "ks", [0, 5], ValueError, "ks must be a non-empty list of integers at least 1, got 0"),
    (_evaluate, "ks", [], ValueError, "ks must be a non-empty list of integers at least 1, got []"),
    (_evaluate, "ks", "1,5", TypeError, "ks must be a non-empty list of integers at least 1, got '1,5' (str)"),
    (_search, "k", "5", TypeError, "k must be an integer at least 1, got '5' (str)"),
    (_search, "k", 0, ValueError, "k must be an integer at least 1, got 0"),
    (_search, "k", True, TypeError, "got True (bool)"),
    (_search, "b", 10**400, ValueError, "b must be a number in [0, 1], got 1000"),
    (_search, "batch_size", 0, ValueError, "batch_size must be an integer at least 1"),
    (_search, "k1", -1, ValueError, "k1 must be a number at least 0, got -1"),
    (_search, "b", 2, ValueError, "b must be a number in [0, 1], got 2"),
    (_search, "nprobe", 0, ValueError, "nprobe must be an integer at least 1"),
    (_search, "ef_search", "wide", TypeError, "ef_search must be an integer at least 1"),
    (_index_search, "k", "5", TypeError, "k must be an integer at least 1, got '5' (str)"),
    (_index_search, "k", -2, ValueError, "k must be an integer at least 1, got -2"),
    (_encode, "max_length", "abc", TypeError, "max_length must be an integer at least 1, got 'abc' (str)"),
    (_encode, "max_length", 0, ValueError, "max_length must be an integer at least 1, got 0"),
    (_encode, "batch_size", 0, ValueError, "batch_size must be an integer at least 1, got 0"),
    (_encode, "batch_size", None, TypeError, "batch_size must be an integer at least 1, got None"),
    (_encode, "shard_size", -1, ValueError, "shard_size must be an integer at least 1"),
    (_encode, "limit", 0, ValueError, "limit must be an integer at least 1, got 0"),
    (_index, "train_sample", 0, ValueError, "train_sample must be an integer at least 1, got 0"),
    (_index, "seed", -1, ValueError, "seed must be an integer at least 0, got -1"),
    (_index, "seed", 1.5, TypeError, "seed must be an integer at least 0, got 1.5 (float)"),
    (_finetune, "rounds", 0, ValueError, "rounds must be an integer at least 1, got 0"),
    (_adapt, "validation", 0, ValueError, "validation must be a number above 0, got 0"),
    (_adapt, "max_documents", 0, ValueError, "max_documents must be an integer at least 1, got 0"),
    (_adapt, "patience", -1, ValueError, "patience must be an integer at least 0, got -1"),
    (_finetune, "dev_every", -1, ValueError, "dev_every must be an integer at least 0, got -1"),
    (_finetune, "few_shot", 0, ValueError, "few_shot must be a number above 0, got 0"),
    (_finetune, "seeds", [1, -2], ValueError, "seeds must be a non-empty list of integers at least 0, got -2"),
    (_fuse, "weight", [1, -1], ValueError, "weight must be a non-empty list of numbers at least 0, got -1"),
    (_fuse, "rrf_k", 60, TypeError, "rrf_k must be a non-empty list of integers at least 1, got 60 (int)"),
    (_fuse, "k", 0, ValueError, "k must be an integer at least 1, got 0"),
    (_fuse, "grid_step", 0, ValueError, "grid_step must be a number in [0.01, 1], got 0"),
    (_average, "checkpoints", 0, ValueError, "checkpoints must be an integer at least 1, got 0"),
    (_average, "weight", [0.5, "1"], TypeError, "weight must be a non-empty list of numbers at least 0, got '1'"),
    (_prepare, "passage_words", -1, ValueError, "passage_words must be an integer at least 0, got -1"),
    (_prepare, "test_fraction", 1.5, ValueError, "test_fraction must be a number in [0, 1], got 1.5"),
    (_prepare, "max_articles", 0, ValueError, "max_articles must be an integer at least 1, got 0"),
    (_diagnose, "pairs", 0, ValueError, "pairs must be an integer at least 1, got 0"),
    (_diagnose, "batch_size", 2.5, TypeError, "batch_size must be an integer at least 1, got 2.5 (float)"),
]


@pytest.mark.parametrize(("call", "argument", "value", "error", "message"), BAD,
                         ids=[f"{call.__name__[1:]}-{argument}={value!r}" for call, argument, value, *_ in BAD])
def test_the_api_refuses_a_bad_number_before_touching_anything(tmp_path, call, argument, value, error, message):
    with pytest.raises(error) as raised:
        call(tmp_path, **{argument: value})
    assert message in str(raised.value) and "\n" not in str(raised.value)
    assert list(tmp_path.iterdir()) == []  # no output, no lock, no temporary


CLI = [  # values the parser lets through (ks is one string): the API's check refuses
    (("evaluate", "run.trec", "--qa-answers", "qa.jsonl", "--corpus", "corpus.jsonl", "--ks", "0,20"),
     "ks must be a non-empty list of integers at least 1, got 0"),
]


@pytest.mark.parametrize(("arguments", "message"), CLI, ids=[" ".join(arguments[-2:]) for arguments, _ in CLI])
def test_the_command_line_gets_the_same_check_as_one_line(tmp_path, monkeypatch, arguments, message):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, list(arguments))
    assert result.exit_code == 1, result.output
    assert [line for line in result.output.splitlines() if line.strip()] == [f"error: {message}"], result.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("stage", ["encode", "index", "search", "evaluate", "finetune", "adapt", "fuse", "average",
                                   "prepare", "diagnose"])
def test_the_stages_numeric_options_take_their_range_from_the_apis_table(stage):
    """One rule for both doors: every numeric option of a stage the API covers is in the table, with the
    table's bounds (shown in --help and checked by the parser; an open bound shown as it is, checked by the
    API alone: typer's ranges are closed, and ``--validation`` showed ``x>=0`` for a 0 it refuses)."""
    command = typer.main.get_command(app).commands[stage]
    numeric = [parameter for parameter in command.params
               if getattr(parameter, "min", None) is not None or getattr(parameter, "max", None) is not None]
    assert numeric
    bounds = _bounds(stage)
    for parameter in numeric:
        bound = bounds[parameter.name]
        assert not bound.open and (parameter.min, parameter.max) == (bound.low, bound.high), parameter.name
    for name, bound in bounds.items():
        parameter = next((parameter for parameter in command.params if parameter.name == name), None)
        if bound.open and parameter is not None:
            assert (parameter.min, parameter.max) == (None, None), name
            assert parameter.metavar == option_range(bound, name)["metavar"], name


def _bounds(stage):
    """A stage's bounds, as its config declares them."""
    return {field.name: option.bound for field, option in declared(STAGE_CONFIGS[stage]) if option.bound}


@pytest.mark.parametrize(("arguments", "shown", "refused"), [
    (("adapt", "--corpus", "corpus.jsonl", "--out", "out", "--validation"), "[x>0]",
     {"0": "validation must be a number above 0, got 0.0"}),
    (("finetune", "--train", "scifact", "--out", "out", "--few-shot"), "[x>0]",
     {"0": "few_shot must be a number above 0, got 0.0"}),
    (("evaluate", "run.trec", "--qrels", "qrels.tsv", "--alpha"), "[0<x<1]",
     {"0": "alpha must be a number in (0, 1), got 0.0", "1": "alpha must be a number in (0, 1), got 1.0"})],
    ids=["validation", "few-shot", "alpha"])
def test_an_open_bound_is_shown_and_refused_as_it_is(tmp_path, monkeypatch, arguments, shown, refused):
    """``--help`` showed ``x>=0`` for ``--validation``, which refuses 0 (typer's ranges are closed): an open
    bound is shown open, and its option refuses its bounds when parsed, as a closed range's option does."""
    stage, option = arguments[0], arguments[-1]
    result = runner.invoke(app, [stage, "--help"], env={"COLUMNS": "250"})
    line = next(line for line in result.output.splitlines() if line.lstrip("│ ").startswith(f"{option} "))
    assert shown in line and "x>=" not in line and "<=x" not in line, line
    monkeypatch.chdir(tmp_path)
    for value, message in refused.items():
        result = runner.invoke(app, [*arguments, value], env={"COLUMNS": "250"})
        assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output
        assert f"Invalid value for '{option}'" in result.output and list(tmp_path.iterdir()) == []
