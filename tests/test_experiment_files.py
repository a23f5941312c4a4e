"""Experiment files share blocks instead of copying them (``extends:``, ``seedr.experiments.files``): the
shared files merge in order under the experiment's own keys and may extend each other; a cycle, a missing
or malformed shared file and a name that is a path are refused in one line naming the file; and no block of
ten lines is written twice among the shipped experiment files and their shared files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seedr.cli import app
from seedr.config.loading import parse_yaml
from seedr.experiments.files import SHARED_FOLDER, experiment_path, read_experiment_file
from seedr.experiments.spec import experiment_names, experiments_dir, load_experiment
from seedr.io import DataError

SHARED = experiments_dir() / SHARED_FOLDER
SHIPPED = [*sorted(experiments_dir().glob("*.yaml")), *sorted(SHARED.glob("*.yaml"))]
#: The longest run of lines two files (or two places of one) may have in common: a longer one is a copy.
BLOCK_LINES = 10

runner = CliRunner()


def _normalised_lines(path: Path) -> list[tuple[int, str]]:
    """``(line number, text)`` of the lines that say something: stripped (a block copied at another
    indentation is still a copy), without blank and comment-only lines (a comment between copied lines
    does not make them different); a comment at the end of a line stays part of it."""
    text = path.read_text(encoding="utf-8")
    lines = [(number, line.strip()) for number, line in enumerate(text.splitlines(), 1)]
    return [(number, text) for number, text in lines if text and not text.startswith("#")]


def test_no_block_of_ten_lines_is_written_twice():
    """Ten consecutive lines (as ``_normalised_lines`` reads them) that occur twice — in two experiment
    files, two shared files, or twice in one — are a block that belongs in a shared file, named by
    ``extends:`` wherever it is used."""
    first_seen: dict[tuple[str, ...], str] = {}
    copies = []
    for path in SHIPPED:
        lines = _normalised_lines(path)
        in_copy = False  # a copy of more than ten lines is reported once, where it starts
        for start in range(len(lines) - BLOCK_LINES + 1):
            block = tuple(text for _, text in lines[start:start + BLOCK_LINES])
            where = f"{path.relative_to(experiments_dir())}:{lines[start][0]}"
            if block in first_seen and not in_copy:
                copies.append(f"{where} repeats {first_seen[block]}")
            first_seen.setdefault(block, where)
            in_copy = block in first_seen and first_seen[block] != where
    assert not copies, (f"blocks of {BLOCK_LINES} lines written twice (move each into a file of "
                        f"seedr/experiments/{SHARED_FOLDER}/ named in extends:):\n" + "\n".join(copies[:20]))


def test_shared_files_are_no_experiments_and_each_is_extended():
    shared = {path.stem for path in SHARED.glob("*.yaml")}
    assert shared and not shared & set(experiment_names())
    with pytest.raises(FileNotFoundError, match="no experiment 'shared/scifact'"):
        experiment_path(f"{SHARED_FOLDER}/scifact")
    extended = set()
    for path in SHIPPED:
        names = parse_yaml(path.read_text(encoding="utf-8")).get("extends") or []
        extended.update([names] if isinstance(names, str) else names)
    assert extended == shared, f"shared files no file extends: {sorted(shared - extended)}"


# ------------------------------------------------------------------ extends: how files merge


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


#: The rest of an experiment file whose blocks come from shared files.
EXPERIMENT_REST = """\
title: mine
conditions:
  bm25: {retrieve: bm25}
  dense: {retrieve: {model: minilm}}
baseline: bm25
"""


def test_shared_files_merge_in_order_under_the_experiments_own_keys(tmp_path):
    """Mappings merge key by key, in the order of ``extends`` and then the file's own keys; anything else
    (a list, a string) is replaced whole; the merged file resolves as one, ``--set`` and scales included."""
    _write(tmp_path / SHARED_FOLDER / "first.yaml", """\
variables: {data: from-first, seeds: [1, 2], depth: 10}
tasks:
  first: {kind: qrels, corpus: "{data}/a", queries: q, qrels: r, metrics: [nDCG@10]}
defaults:
  retrieve: {pooling: cls, normalize: false, batch_size: 64}
scales:
  paper: {variables: {data: paper-data}}
""")
    _write(tmp_path / SHARED_FOLDER / "second.yaml", """\
variables: {depth: 20, seeds: [3]}
tasks:
  second: {kind: qrels, corpus: "{data}/b", queries: q, qrels: r, metrics: [nDCG@10]}
defaults:
  retrieve: {pooling: mean}
""")
    path = _write(tmp_path / "mine.yaml", """\
extends: [first, second]
variables: {depth: 30}
tasks:
  first: {metrics: [R@100]}
scales:
  paper: {skip: [dense]}
""" + EXPERIMENT_REST)
    merged = read_experiment_file(path)
    assert "extends" not in merged
    assert merged["variables"] == {"data": "from-first", "seeds": [3], "depth": 30}
    assert list(merged["tasks"]) == ["first", "second"]
    assert merged["tasks"]["first"] == {"kind": "qrels", "corpus": "{data}/a", "queries": "q", "qrels": "r",
                                        "metrics": ["R@100"]}
    assert merged["defaults"]["retrieve"] == {"pooling": "mean", "normalize": False, "batch_size": 64}
    assert merged["scales"]["paper"] == {"variables": {"data": "paper-data"}, "skip": ["dense"]}

    experiment = load_experiment(path, "cpu")
    assert experiment.tasks["second"].settings["corpus"] == "from-first/b"
    dense = {"pooling": "mean", "normalize": False, "batch_size": 64, "model": "minilm"}
    assert experiment.conditions["dense"].retrieve == dense
    assert load_experiment(path, "cpu", ["data=elsewhere"]).tasks["first"].settings["corpus"] == "elsewhere/a"
    paper = load_experiment(path, "paper")
    assert paper.tasks["first"].settings["corpus"] == "paper-data/a" and paper.skipped == ["dense"]


def test_a_shared_file_extends_others_and_extends_takes_one_name(tmp_path):
    _write(tmp_path / SHARED_FOLDER / "base.yaml", "variables: {a: base, b: base}\n")
    _write(tmp_path / SHARED_FOLDER / "middle.yaml", "extends: base\nvariables: {b: middle, c: middle}\n")
    path = _write(tmp_path / "mine.yaml", "extends: middle\nvariables: {c: mine}\n")
    assert read_experiment_file(path)["variables"] == {"a": "base", "b": "middle", "c": "mine"}


# ------------------------------------------------------------------ extends: what is refused


def _refusal(path: Path) -> str:
    """The one-line message refusing ``path``."""
    with pytest.raises(DataError) as refused:
        read_experiment_file(path)
    message = str(refused.value)
    assert "\n" not in message, message
    return message


def test_a_cycle_of_shared_files_is_refused_naming_the_file(tmp_path):
    _write(tmp_path / SHARED_FOLDER / "a.yaml", "extends: b\n")
    _write(tmp_path / SHARED_FOLDER / "b.yaml", "extends: [a]\n")
    _write(tmp_path / SHARED_FOLDER / "itself.yaml", "extends: itself\n")
    message = _refusal(_write(tmp_path / "mine.yaml", "extends: a\n" + EXPERIMENT_REST))
    assert message.startswith(str(tmp_path / SHARED_FOLDER / "b.yaml")) and "a → b → a (a cycle)" in message
    message = _refusal(_write(tmp_path / "again.yaml", "extends: itself\n" + EXPERIMENT_REST))
    assert message.startswith(str(tmp_path / SHARED_FOLDER / "itself.yaml")) and "itself → itself" in message

    result = runner.invoke(app, ["experiment", str(tmp_path / "mine.yaml"), "--scale", "paper"])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 1 and len(lines) == 1, result.output
    assert "b.yaml" in lines[0] and "cycle" in lines[0], result.output


def test_a_missing_shared_file_is_refused_naming_the_file(tmp_path):
    """Both folders searched are named, and the shared files they hold."""
    _write(tmp_path / SHARED_FOLDER / "present.yaml", "variables: {a: 1}\n")
    path = _write(tmp_path / "mine.yaml", "extends: [nope]\n" + EXPERIMENT_REST)
    message = _refusal(path)
    assert message.startswith(f"{path}: field 'extends': no shared file 'nope': no nope.yaml in "
                              f"{tmp_path / SHARED_FOLDER} nor in {SHARED} (shared files: "), message
    assert "present" in message


def test_a_file_elsewhere_extends_the_shipped_shared_files_unless_its_own_folder_has_the_name(tmp_path):
    """A shipped experiment copied elsewhere, or a file of one's own, finds the shipped shared files by
    name; a shared file of the same name beside it comes first."""
    shipped = experiments_dir() / "headline.yaml"
    copy = _write(tmp_path / "headline.yaml", shipped.read_text(encoding="utf-8"))
    assert read_experiment_file(copy) == read_experiment_file(shipped)
    corpus = load_experiment(copy, "cpu").tasks["scifact"].settings["corpus"]
    assert corpus == "../shared/data/scifact/corpus.jsonl"
    _write(tmp_path / SHARED_FOLDER / "scifact.yaml", "tasks: {scifact: {kind: qrels, corpus: mine}}\n")
    assert load_experiment(copy, "cpu").tasks["scifact"].settings["corpus"] == "mine"


@pytest.mark.parametrize("entry", ['"../secret"', '"/etc/hostname"', '"sub/file"', '".."', '".hidden"',
                                   '"secret.yaml"', '""', '"a\\\\b"', "x" * 101, "3", "[nested]", "null"])
def test_extends_names_only_plain_names_of_the_shared_folder(tmp_path, entry):
    """A name is the stem of a file of the shared folder: nothing else is reached, not even a file that
    exists where a path would lead (``../secret`` from the shared folder is ``secret.yaml`` beside it)."""
    _write(tmp_path / "secret.yaml", "variables: {stolen: true}\n")
    _write(tmp_path / SHARED_FOLDER / "sub" / "file.yaml", "variables: {stolen: true}\n")
    path = _write(tmp_path / "mine.yaml", f"extends: [{entry}]\n" + EXPERIMENT_REST)
    message = _refusal(path)
    assert message.startswith(f"{path}: field 'extends': ") and "not a shared file's plain name" in message


def test_extends_is_a_name_or_a_list_of_names(tmp_path):
    message = _refusal(_write(tmp_path / "mine.yaml", "extends: {a: b}\n" + EXPERIMENT_REST))
    assert "takes a shared file's name or a list of them" in message


@pytest.mark.parametrize(("text", "reason"), [
    ("variables: [unclosed\n", r"line 2: malformed YAML"),
    ("- a list\n", "expected a mapping at the top level"),
    ("variables: {a: 1}\nrecipe: x\n", r"unknown key\(s\) \['recipe'\]"),
    ("a: &a [*a]\n", "an alias refers to itself"),
])
def test_a_bad_shared_file_is_refused_naming_it(tmp_path, text, reason):
    bad = _write(tmp_path / SHARED_FOLDER / "bad.yaml", text)
    message = _refusal(_write(tmp_path / "mine.yaml", "extends: bad\n" + EXPERIMENT_REST))
    assert message.startswith(str(bad)), message
    assert re.search(reason, message), message
