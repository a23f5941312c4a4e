"""Experiment steps are keyed on the code they run (``seedr/provenance.py``): what a change of the library's
sources re-keys, and what it leaves alone. Apart from ``test_experiments.py``, the suite's longest file:
``make test`` keeps each file on one of its two workers (``--dist loadfile``), and these take minutes."""

from __future__ import annotations

import shutil
from pathlib import Path

from rich.console import Console

from seedr.experiments.spec import load_experiment

ROOT = Path(__file__).resolve().parents[1]


def test_step_keys_ignore_comments_docstrings_and_layout_but_not_code(tmp_path):
    """The source fingerprint hashes what the library computes: a docstring, a comment or a re-wrapped line
    keeps it (and so every recorded step's key); a changed constant changes it."""
    from seedr.provenance import source_fingerprint

    library = tmp_path / "seedr"
    shutil.copytree(ROOT / "seedr", library, ignore=shutil.ignore_patterns("__pycache__", "builtin_models"))
    mlm = ["seedr.objectives.mlm.objective"]
    before, whole = source_fingerprint(mlm, library), source_fingerprint(None, library)
    objective = library / "objectives" / "mlm" / "objective.py"
    text = objective.read_text()
    edited = text.replace('"""', '"""Reworded. ', 1) + "\n# a comment at the end\n"
    edited = edited.replace("from __future__ import annotations\n", "from __future__ import annotations  # why\n\n", 1)
    objective.write_text(edited)
    assert source_fingerprint(mlm, library) == before and source_fingerprint(None, library) == whole
    (library / "stages" / "pretrain.py").write_text("x = 1\n")  # the command line computes nothing
    assert source_fingerprint(None, library) == whole
    masking = library / "objectives" / "masking.py"
    assert "0.8" in masking.read_text()
    masking.write_text(masking.read_text().replace("0.8", "0.7", 1))  # BERT's 80% [MASK] share changed
    assert source_fingerprint(mlm, library) != before and source_fingerprint(None, library) != whole


def test_an_edit_saved_while_an_experiment_runs_does_not_re_key_its_later_units(tmp_path):
    """Inside ``sources_as_first_read`` (``run_experiment``) the sources count as first read: a later unit's
    key (a fusion's members, looked up after they ran) is the one the plan gave it."""
    from seedr.provenance import source_fingerprint, sources_as_first_read

    library = tmp_path / "seedr"
    shutil.copytree(ROOT / "seedr", library, ignore=shutil.ignore_patterns("__pycache__", "builtin_models"))
    fusion = ["seedr.retrieval.fusion"]
    module = library / "retrieval" / "fusion.py"
    with sources_as_first_read():
        before = source_fingerprint(fusion, library)
        module.write_text(module.read_text() + "\nRRF_EDITED = 61\n")
        assert source_fingerprint(fusion, library) == before
    assert source_fingerprint(fusion, library) != before  # outside a run, the edit counts


def _step_keys(monkeypatch, library: Path, out: Path) -> dict[str, str]:
    """Every step and retrieval folder of from_scratch (cpu scale), keyed with the sources under ``library``."""
    from seedr.experiments import runner as runner_module
    from seedr.provenance import source_fingerprint

    monkeypatch.setattr(runner_module, "code_fingerprint",
                        lambda code=None: {"version": "0.1.0", "source": source_fingerprint(code, library)})
    experiment = load_experiment("from_scratch", "cpu")
    runner = runner_module._Runner(experiment, out, Console(quiet=True))
    plan = runner_module._plan(experiment, runner)
    folders = {f"setup {name}": folder for name, (_, folder) in plan.setup.items()}
    folders |= {f"{name} {step.kind}": folder for name, chain in plan.chains.items() for step, folder in chain}
    folders |= {f"{name} on {task}": folder for (task, name), folder in plan.retrievals.items()}
    return {what: folder.name for what, folder in folders.items()}


def test_a_change_to_one_objective_re_keys_only_the_steps_that_run_it(monkeypatch, tmp_path):
    """A step is keyed on the code it runs (``ExperimentStep.code``): a changed constant in CPDAE's file
    re-keys the CPDAE pre-training, and what starts from its product (through its model path), and nothing
    else; a docstring edit anywhere, or a README edit, re-keys nothing."""
    library = tmp_path / "seedr"
    shutil.copytree(ROOT / "seedr", library, ignore=shutil.ignore_patterns("__pycache__", "builtin_models"))
    out = tmp_path / "work"
    before = _step_keys(monkeypatch, library, out)
    assert {"cpdae pretrain", "mlm pretrain", "seed pretrain", "cpdae finetune", "mlm finetune"} <= set(before)

    engine = library / "engine" / "trainer.py"
    engine.write_text(engine.read_text().replace('"""', '"""Reworded. ', 1))
    (tmp_path / "README.md").write_text("a README edit\n")
    assert _step_keys(monkeypatch, library, out) == before

    cpdae = library / "objectives" / "cpdae" / "objective.py"
    cpdae.write_text(cpdae.read_text() + "\nUNUSED_CONSTANT = 1\n")  # any change of its code
    after = _step_keys(monkeypatch, library, out)
    changed = sorted(what for what in before if after[what] != before[what])
    assert changed == sorted(["cpdae finetune", "cpdae pretrain",
                              *(what for what in before if what.startswith("cpdae on "))])
