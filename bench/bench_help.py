"""Instant answers: every ``seedr STAGE --help``, every form of ``seedr config``, and the refusal of a bad setting
or a missing input, against the goal of 2 s.

Each runs as a user runs it: ``python -m seedr ...`` (the ``seedr`` command's entry point) in a fresh process,
so the interpreter's start, every import the command makes and its output are counted; nothing is preloaded
(``common.PRELOADED`` would hide exactly what is measured). The training stages' help lists every settable key
with its default, read from their config dataclasses (``seedr.config.settings``, which imports no torch), and is also
timed with a recipe, whose values the help then shows (``--config NAME``). ``seedr config`` resolves a run's
settings as the run would, the objective's options included (``seedr/objectives/<name>/options.py``), and prints them as
YAML or described (``--describe``). The refusals are those of issue 59: an unknown key (``--set
train.batchsize=8``) given to ``seedr config`` and to a training command, a value out of range, a missing
corpus, model, tokenizer, training data, dev qrels or queries (encoding and searching too), and an output that
is a file; each must exit 1 with its
one line, which it says before torch is imported (``tests/test_instant_answers.py``). Each command is timed
``repeats`` times after one untimed run (the Python files' bytecode and the page cache warm, as for a user's
second call); the median is reported, with the slowest, and each goal is met when every median is under 2 s.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import SCIFACT, Goal, Section, Table, main, number, ratio

#: The goal: each of these answers within this (seconds) on this CPU.
GOAL_SECONDS = 2.0
#: The training stages' help with a recipe's values, timed besides the plain helps.
WITH_RECIPES = (("pretrain", "--config", "seed"), ("finetune", "--config", "dpr"))
#: Every form of ``seedr config``: the resolved settings as YAML, described, and under ``--set``.
CONFIG_FORMS = (("config", "pretrain", "--config", "seed"),
                ("config", "pretrain", "--config", "seed", "--describe"),
                ("config", "pretrain", "--config", "seed", "--set", "train.batch_size=8"),
                ("config", "finetune", "--config", "dpr"),
                ("config", "finetune", "--config", "dpr", "--describe"))


def refusals() -> list[tuple[tuple[str, ...], str]]:
    """``(arguments, what the one line says)`` of each refusal, its paths relative to a folder that holds only
    ``a-file`` and ``scifact`` (a link to the shared SciFact folder)."""
    scifact, qrels = "scifact", "scifact/qrels/test.tsv"
    return [
        (("config", "pretrain", "--config", "seed", "--set", "train.batchsize=8"), "did you mean `train.batch_size`"),
        (("config", "pretrain", "--config", "seed", "--set", "objective.attention_span=0"), "attention_span must be"),
        (("pretrain", "--config", "seed", "--set", "train.batchsize=8", "--out", "runs/bad"),
         "did you mean `train.batch_size`"),
        (("pretrain", "--config", "seed", "--model", "minilm", "--corpus", "missing.jsonl", "--out", "runs/bad"),
         "no such corpus file"),
        (("pretrain", "--config", "seed", "--model", "missing-model", "--out", "runs/bad"), "not a local model folder"),
        (("pretrain", "--config", "seed", "--out", "runs/bad"), "from scratch needs a tokenizer"),
        (("pretrain", "--config", "seed", "--model", "minilm", "--out", "a-file"), "exists and is a file"),
        (("finetune", "--config", "dpr", "--set", "train.batchsize=8", "--out", "runs/bad"),
         "did you mean `train.batch_size`"),
        (("finetune", "--train", "missing-beir", "--out", "runs/bad"), "no such file or folder"),
        (("finetune", "--train", scifact, "--dev-qrels", "missing.tsv", "--out", "runs/bad"), "no such qrels file"),
        (("finetune", "--train", scifact, "--dev-qrels", qrels, "--set", "dev_metrics=[R@1000]", "--out", "runs/bad"),
         "go deeper than"),
        (("encode", "--model", "minilm", "--corpus", "missing.jsonl", "--out", "runs/bad"), "no such corpus file"),
        (("search", "--bm25", "--corpus", "scifact", "--queries", "missing.jsonl", "--out", "bad.trec"),
         "no such queries file"),
    ]


def command_seconds(arguments: tuple[str, ...], code: int, said: str, folder: Path) -> float:
    """Wall time of ``python -m seedr ARGUMENTS`` in a new process run in ``folder``, which must exit with
    ``code`` and say ``said`` (a refusal: on one line)."""
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "seedr", *arguments], capture_output=True, text=True, check=False,
                            cwd=folder)
    seconds = time.perf_counter() - start
    output = result.stdout + result.stderr
    lines = [line for line in output.splitlines() if line.strip()]
    if result.returncode != code or said not in output or (code and len(lines) != 1):
        raise RuntimeError(f"seedr {' '.join(arguments)}: exit {result.returncode}, expected {code} and "
                           f"{said!r}: {output[-2000:]}")
    return seconds


def run(tiny: bool, threads: int) -> Section:
    from seedr.stages import STAGES

    repeats = 1 if tiny else 5
    groups = {
        "help": [((stage, "--help"), 0, "Usage: seedr") for stage in STAGES]
        + [((*arguments, "--help"), 0, "Usage: seedr") for arguments in WITH_RECIPES],
        "config": [(arguments, 0, "accumulation") for arguments in CONFIG_FORMS],
        "refusal": [(arguments, 1, said) for arguments, said in refusals()],
    }
    measured: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="seedr-bench-help-") as folder:
        (Path(folder) / "a-file").write_text("a user's file\n")
        (Path(folder) / "scifact").symlink_to(SCIFACT.resolve())
        for group, cases in groups.items():
            measured[group] = {}
            for arguments, code, said in cases:
                command_seconds(arguments, code, said, Path(folder))  # untimed: bytecode and page cache warm
                times = [command_seconds(arguments, code, said, Path(folder)) for _ in range(repeats)]
                measured[group][" ".join(arguments)] = {"median": statistics.median(times), "max": max(times)}
    section = Section(
        key="help", title="Instant answers: help, configuration and refusals",
        setup=[(f"`python -m seedr ...` in a fresh process (nothing preloaded), median of {repeats} after one untimed "
                f"run: every stage's --help ({len(STAGES)} stages, and the training stages with a recipe), every form "
                "of `seedr config`, and the refusal of a bad setting or a missing input (exit 1, one line)"),
               ("help, configuration and refusals read seedr.config.settings and the objectives' options.py (no torch); a "
                "training command checks its output and inputs before it imports torch")],
        data={"goal_seconds": GOAL_SECONDS, "repeats": repeats, "seconds": measured})
    captions = {"help": "`seedr ... --help`", "config": "`seedr config ...`", "refusal": "a refused command"}
    goals = {"help": "every `seedr STAGE --help`", "config": "every form of `seedr config`",
             "refusal": "every refusal of a bad setting or missing input"}
    for group, commands in measured.items():
        section.tables.append(Table(
            f"Wall time of {captions[group]} (s), against the 2 s goal", ["command", "median", "slowest", "of the goal"],
            [[f"seedr {command}", number(times["median"]), number(times["max"]), ratio(times["median"] / GOAL_SECONDS)]
             for command, times in commands.items()]))
        slowest = max(commands, key=lambda command: commands[command]["median"])
        section.goals.append(Goal(f"{goals[group]} < {GOAL_SECONDS:g} s",
                                  f"slowest: seedr {slowest} {number(commands[slowest]['median'])} s",
                                  all(times["median"] < GOAL_SECONDS for times in commands.values())))
    return section


if __name__ == "__main__":
    main(run, __doc__.split("\n\n")[0])
