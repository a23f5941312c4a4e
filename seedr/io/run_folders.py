"""A training run's folder as its files say it, without torch: its checkpoints (``checkpoints/step-N``, each
complete once it holds ``trainer_state.json``; ``seedr.engine.checkpoint`` writes and reads them),
whether a run may start in it (``check_run_folder``), which ``seedr.api`` asks before anything loads, so that
a refused output answers at once, and the paths its records hold (``stored_paths``): those inside the run
relative to the folder of the record, so that a copied or moved run folder resumes."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from seedr.io.outputs import check_output

#: The folder of a run's product, the encoder (``out/encoder``; ``seedr.engine.checkpoint``).
PRODUCT = "encoder"
CHECKPOINTS = "checkpoints"
TRAINER_STATE = "trainer_state.json"
#: The folders of an adaptation (``seedr adapt``): its mined pairs' fine-tuning and its continued
#: pre-training.
PAIRS, PRETRAINING = "pairs", "pretrain"
_STEP_FOLDER = re.compile(r"^step-(\d+)$")


def checkpoint_path(out_dir: str | os.PathLike, step: int) -> Path:
    return Path(out_dir) / CHECKPOINTS / f"step-{step}"


def list_checkpoints(out_dir: str | os.PathLike) -> list[tuple[int, Path]]:
    """``(step, folder)`` of the complete checkpoints of a run, oldest first."""
    root = Path(out_dir) / CHECKPOINTS
    if not root.is_dir():
        return []
    found = []
    for folder in root.iterdir():
        match = _STEP_FOLDER.match(folder.name)
        if match and (folder / TRAINER_STATE).exists():
            found.append((int(match.group(1)), folder))
    return sorted(found)


def latest_checkpoint(out_dir: str | os.PathLike) -> Path | None:
    """The newest complete checkpoint of a run, or ``None``."""
    checkpoints = list_checkpoints(out_dir)
    return checkpoints[-1][1] if checkpoints else None


def already_a_run(out_dir: Path) -> ValueError:
    return ValueError(f"{out_dir} already holds checkpoints of a run; resume it (--resume) or choose another "
                      "output folder")


def check_run_folder(out_dir: str | Path, resume: bool) -> None:
    """Refuse, before anything is loaded or tokenised, an output that training would refuse only when it
    starts: a file, a folder that is not a training run (``seedr.io.check_output``) or — without
    ``resume`` — a run already there: one that holds checkpoints, in its own folder or in those of its
    rounds (``round-<r>/``) and few-shot seeds (``seed-<s>/``), and one stopped before its first
    checkpoint (its ``config.yaml`` and ``run.json`` only), which would otherwise start over without a
    word. ``pretrain`` and ``finetune`` call it first; ``Trainer.train`` checks its own folder again."""
    out_dir = Path(out_dir)
    existing = check_output(out_dir, "training run", replaces=False)
    if resume:
        return
    runs = [out_dir, *out_dir.glob("round-*"), *out_dir.glob("seed-*"), *out_dir.glob("seed-*/round-*")]
    if any(latest_checkpoint(run) is not None for run in runs):
        raise already_a_run(out_dir)
    if existing:
        raise ValueError(f"{out_dir} holds a run stopped before its first checkpoint; start it again there with "
                         "--resume, or choose another output folder")


def changed_settings(recorded: Mapping[str, Any], current: Mapping[str, Any], unchecked: Iterable[str] = ()
                     ) -> list[str]:
    """``key recorded → current`` for each key both hold with other values, but ``unchecked`` ones: what a
    resumed run refuses to mix into the run it continues (``Trainer``'s settings, an adaptation's inputs).
    A key only one holds — a setting an older seedr did not record — is not compared."""
    skipped = frozenset(unchecked)
    return [f"{key} {recorded[key]!r} → {current[key]!r}" for key in sorted(set(recorded) & set(current))
            if recorded[key] != current[key] and key not in skipped]


def run_root(folder: str | Path) -> Path:
    """The run ``folder`` belongs to (resolved): itself or, for a run inside another — an adaptation's
    ``pretrain/``, a fine-tuning's ``round-<r>/`` and ``seed-<s>/`` —, the outermost run folder around it
    (one holding the ``config.yaml`` and ``run.json`` that ``seedr.provenance.record_run`` writes)."""
    root = Path(folder).resolve()
    while root.parent != root and all((root.parent / name).is_file() for name in ("config.yaml", "run.json")):
        root = root.parent
    return root


def stored_paths(settings: Any, folder: str | Path) -> Any:
    """``settings`` (JSON-like: mappings, lists, strings ...) as the records of the run folder ``folder`` hold
    them (``config.yaml``, each checkpoint's settings): a string naming a file or folder that exists inside
    the run (``run_root``: an adaptation's ``pretrain/`` names its mined ``../pairs/documents.jsonl``) is
    made relative to ``folder``, and so resolves against it when read. A path as given (``out/pairs/train``)
    names the folder the run was started in: a run copied or moved elsewhere would record other settings,
    and its resume be refused as a change (``Trainer`` compares them). Paths outside the run stay as given."""
    folder = Path(folder).resolve()
    root = run_root(folder)

    def stored(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {key: stored(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(stored(item) for item in value)
        if isinstance(value, str) and value and os.path.exists(value):
            path = Path(value).resolve()
            if path == root or root in path.parents:
                return os.path.relpath(path, folder)
        return value

    return stored(settings)
