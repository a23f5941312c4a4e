"""No output replaces what the user had (#58 items 1-3, docs/safety.md): every stage asks the one rule,
``seedr.io.check_output``, before it writes; a user's file or folder at an output, or an input of the same
command, is refused in one line and left as it was; seedr's own output is replaced only with --overwrite."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seedr.cli import app
from seedr.io import DataError, check_output, outputs
from seedr.stages import STAGES
from tests.helpers import one_error_line, snapshot

runner = CliRunner()


def _user_folder(path: Path) -> Path:
    """A folder of the user's: ``thesis.txt`` inside."""
    path.mkdir(parents=True)
    (path / "thesis.txt").write_text("precious\n")
    return path


def _user_file(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("precious notes\n")
    return path


def _trec_run(path: Path) -> Path:
    path.write_text("q1 Q0 d1 1 2.0 x\nq1 Q0 d2 2 1.0 x\n")
    return path


#: For each stage that writes an output: (what the user had there, the command's arguments). Each
#: command is refused before it reads or loads anything heavy.
Case = tuple[Callable[[Path], Path], Callable[[Path, Path, Path], list]]
CASES: dict[str, Case] = {
    "prepare": (lambda user: _user_folder(user / "out"),
                lambda data, shared, out: ["--corpus", data / "corpus.jsonl", "--out", out]),
    "prepare --reqa-split": (lambda user: _user_folder(user / "out"),
                             lambda data, shared, out: ["--reqa-split", shared / "squad" / "squad-dev-v1.1.json.gz",
                                                        "--out", out]),
    "prepare --open-qa": (lambda user: _user_folder(user / "out"),
                          lambda data, shared, out: ["--open-qa", shared / "nq-open" / "NQ-open.dev.jsonl", "--corpus",
                                                     data / "corpus.jsonl", "--split", out.parent.parent / "split.json",
                                                     "--bm25-run", _trec_run(out.parent.parent / "bm25.trec"),
                                                     "--out", out]),
    "pretrain": (lambda user: _user_folder(user / "out"),
                 lambda data, shared, out: ["--config", "mlm", "--model", "seedr-base", "--corpus",
                                            data / "corpus.jsonl", "--out", out]),
    "finetune": (lambda user: _user_folder(user / "out"),
                 lambda data, shared, out: ["--model", "minilm", "--train", data, "--out", out]),
    "adapt": (lambda user: _user_folder(user / "out"),
              lambda data, shared, out: ["--model", "minilm", "--corpus", data, "--out", out]),
    "average": (lambda user: _user_folder(user / "out"),
                lambda data, shared, out: ["minilm", "minilm", "--out", out]),
    "encode": (lambda user: _user_folder(user / "out"),
               lambda data, shared, out: ["--model", "minilm", "--corpus", data / "corpus.jsonl", "--out", out]),
    "index": (lambda user: _user_folder(user / "out"),
              lambda data, shared, out: ["--embeddings", out.parent / "embeddings", "--out", out]),
    "search": (lambda user: _user_file(user / "notes.txt"),
               lambda data, shared, out: ["--bm25", "--corpus", data / "corpus.jsonl", "--queries",
                                          data / "queries.jsonl", "--out", out]),
    "fuse": (lambda user: _user_file(user / "notes.txt"),
             lambda data, shared, out: [out.parent / "a.trec", out.parent / "b.trec", "--out", out]),
    "evaluate": (lambda user: _user_file(user / "notes.json"),
                 lambda data, shared, out: [out.parent / "a.trec", "--qrels", data / "qrels" / "test.tsv",
                                            "--json", out]),
    "evaluate --markdown": (lambda user: _user_file(user / "notes.md"),
                            lambda data, shared, out: [out.parent / "a.trec", "--qrels", data / "qrels" / "test.tsv",
                                                       "--markdown", out]),
    "diagnose": (lambda user: _user_file(user / "run" / "diagnostics.json").parent,
                 lambda data, shared, out: ["minilm", "--out", out]),
    "report": (lambda user: _user_file(user / "report" / "report.md").parent,
               lambda data, shared, out: [out.parent / "run", "--out", out]),
}

#: Stages with no output that a run replaces: an experiment's and the demo's work folder is only added
#: to (each step in a folder of its own, keyed on its settings); config prints.
ADDS_ONLY = {"experiment", "demo", "config"}


@pytest.fixture
def asked(monkeypatch) -> list[str]:
    """The kinds of output ``check_output`` was asked about (a spy on ``OUTPUT_KINDS``, which it reads)."""
    kinds: list[str] = []

    class Spy(dict):
        def __getitem__(self, kind: str):
            kinds.append(kind)
            return super().__getitem__(kind)

    monkeypatch.setattr(outputs, "OUTPUT_KINDS", Spy(outputs.OUTPUT_KINDS))
    return kinds


def test_every_stage_is_walked():
    assert {case.split()[0] for case in CASES} | ADDS_ONLY == set(STAGES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_stage_replaces_what_the_user_had(case, tmp_path, scifact_slice, shared_data, asked):
    """Each stage, pointed at a user's file or folder, is refused in one line by the one rule (it asks
    ``check_output``: the spy on ``OUTPUT_KINDS`` sees it), and the user's files are as they were."""
    make, arguments = CASES[case]
    user = tmp_path / "user"
    user.mkdir()
    out = make(user)
    before = snapshot(user)
    command = case.split()[0]
    result = runner.invoke(app, [command, *[str(argument) for argument in arguments(scifact_slice, shared_data, out)]])
    assert result.exit_code == 1, result.output
    one_error_line(result.output)
    assert asked, f"seedr {case} did not ask seedr.io.check_output"
    assert snapshot(user) == before


def test_average_replaces_only_an_averaged_encoder_and_only_when_asked(tmp_path):
    """#58 item 1: ``seedr average m1 m2 --out userdata`` deleted ``userdata/thesis.txt``."""
    user = _user_folder(tmp_path / "userdata")
    result = runner.invoke(app, ["average", "minilm", "minilm", "--out", str(user)])
    assert result.exit_code == 1 and "not an averaged encoder folder" in one_error_line(result.output)
    assert (user / "thesis.txt").read_text() == "precious\n"
    soup = tmp_path / "soup"
    assert runner.invoke(app, ["average", "minilm", "minilm", "--out", str(soup)]).exit_code == 0
    result = runner.invoke(app, ["average", "minilm", "minilm", "--out", str(soup)])
    assert result.exit_code == 1 and "--overwrite" in one_error_line(result.output)
    (soup / "thesis.txt").write_text("precious\n")  # a user's file inside an averaged encoder is kept too
    result = runner.invoke(app, ["average", "minilm", "minilm", "--out", str(soup), "--overwrite"])
    assert result.exit_code == 1 and "thesis.txt" in one_error_line(result.output)
    (soup / "thesis.txt").unlink()
    result = runner.invoke(app, ["average", "minilm", "minilm", "--out", str(soup), "--overwrite"])
    assert result.exit_code == 0, result.output
    assert json.loads((soup / "seedr_average.json").read_text())["weights_averaged"] > 0


def test_search_never_writes_over_its_input_or_a_users_file(tmp_path, scifact_slice):
    """#58 item 2: ``seedr search --bm25 ... --out q.jsonl`` replaced the queries with a TREC run; any
    ``--out notes.txt`` was overwritten. A run seedr wrote is replaced with --overwrite only."""
    queries = tmp_path / "q.jsonl"
    queries.write_bytes((scifact_slice / "queries.jsonl").read_bytes())
    bm25 = ["search", "--bm25", "--corpus", str(scifact_slice / "corpus.jsonl"), "--queries", str(queries), "--k", "5"]
    result = runner.invoke(app, [*bm25, "--out", str(queries)])
    assert result.exit_code == 1 and "an input of this command" in one_error_line(result.output)
    assert queries.read_bytes() == (scifact_slice / "queries.jsonl").read_bytes()
    notes = _user_file(tmp_path / "notes.txt")
    result = runner.invoke(app, [*bm25, "--out", str(notes)])
    assert result.exit_code == 1 and "not a TREC run seedr wrote" in one_error_line(result.output)
    record = _user_file(tmp_path / "run.trec.json")  # the record a run would write beside it
    result = runner.invoke(app, [*bm25, "--out", str(tmp_path / "run.trec")])
    assert result.exit_code == 1 and "run.trec.json" in one_error_line(result.output)
    assert notes.read_text() == record.read_text() == "precious notes\n"
    record.unlink()
    assert runner.invoke(app, [*bm25, "--out", str(tmp_path / "run.trec")]).exit_code == 0
    result = runner.invoke(app, [*bm25, "--out", str(tmp_path / "run.trec")])
    assert result.exit_code == 1 and "--overwrite" in one_error_line(result.output)
    assert runner.invoke(app, [*bm25, "--out", str(tmp_path / "run.trec"), "--overwrite"]).exit_code == 0


def test_prepare_replaces_only_its_own_reqa_split(tmp_path, shared_data):
    """#58 item 3: ``seedr prepare --reqa-split ... --out DIR`` deleted ``DIR/thesis.txt``."""
    squad = shared_data / "squad" / "squad-dev-v1.1.json.gz"
    user = _user_folder(tmp_path / "userdata")
    result = runner.invoke(app, ["prepare", "--reqa-split", str(squad), "--out", str(user)])
    assert result.exit_code == 1 and "not a ReQA split folder" in one_error_line(result.output)
    assert (user / "thesis.txt").read_text() == "precious\n"
    split = tmp_path / "split"
    assert runner.invoke(app, ["prepare", "--reqa-split", str(squad), "--out", str(split)]).exit_code == 0
    result = runner.invoke(app, ["prepare", "--reqa-split", str(squad), "--out", str(split)])
    assert result.exit_code == 1 and "--overwrite" in one_error_line(result.output)
    assert runner.invoke(app, ["prepare", "--reqa-split", str(squad), "--out", str(split), "--overwrite"]).exit_code == 0


def test_the_rule_keeps_an_output_apart_from_its_inputs(tmp_path):
    model = _user_folder(tmp_path / "model")
    with pytest.raises(DataError, match="an input of this command"):
        check_output(model, "averaged encoder", inputs=[model])
    with pytest.raises(DataError, match="holds .* an input"):
        check_output(tmp_path, "averaged encoder", inputs=[model])
    with pytest.raises(DataError, match="is inside .* an input"):
        check_output(model / "soup", "averaged encoder", inputs=[model], inside_inputs=False)
    assert check_output(model / "diagnostics.json", "diagnostics", inputs=[model]) is False  # inside: allowed
    link = tmp_path / "link"
    link.symlink_to(model, target_is_directory=True)
    with pytest.raises(DataError, match="an input of this command"):  # no alias gets round it
        check_output(link, "averaged encoder", inputs=[model])


def test_no_api_function_replaces_what_the_user_had(tmp_path, scifact_slice, asked):
    """The Python API asks the same rule as the command line, before it loads anything."""
    import seedr

    corpus, queries = scifact_slice / "corpus.jsonl", scifact_slice / "queries.jsonl"
    calls = {
        "pretrain": lambda out: seedr.pretrain(out, config="mlm", model="seedr-base", corpus=corpus),
        "finetune": lambda out: seedr.finetune(out, model="minilm", train=scifact_slice),
        "adapt": lambda out: seedr.adapt(out, model="minilm", corpus=scifact_slice),
        "encode": lambda out: seedr.encode("minilm", corpus, out),
        "index": lambda out: seedr.index(tmp_path / "embeddings", out),
        "search": lambda out: seedr.search(out, bm25=True, corpus=corpus, queries=queries),
        "prepare": lambda out: seedr.prepare(out, corpus=corpus),
        "prepare reqa_split": lambda out: seedr.prepare(out, reqa_split=tmp_path / "squad.json"),
        "average": lambda out: seedr.average(["minilm", "minilm"], out),
        "fuse": lambda out: seedr.fuse([_trec_run(tmp_path / "a.trec"), _trec_run(tmp_path / "b.trec")], out),
        "diagnose": lambda out: seedr.diagnose("minilm", out, corpus=corpus),
        "report": lambda out: seedr.report([tmp_path / "run"], out),
        "ance_refresh": lambda out: seedr.ance_refresh(out, model="minilm", train=scifact_slice),
    }
    users = {"search": lambda user: _user_file(user / "notes.txt"), "fuse": lambda user: _user_file(user / "notes.txt"),
             "diagnose": lambda user: _user_file(user / "run" / "diagnostics.json").parent,
             "report": lambda user: _user_file(user / "report" / "report.md").parent}
    for name, call in calls.items():
        user = tmp_path / name
        out = users.get(name, lambda user: _user_folder(user / "out"))(user)
        before = snapshot(user)
        asked.clear()
        with pytest.raises(DataError):
            call(out)
        assert asked, f"seedr.{name} did not ask seedr.io.check_output"
        assert snapshot(user) == before, name
