"""``average`` from Python: encoders whose weights are averaged into one (``seedr average``)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seedr.api.arguments import checks_arguments


@dataclasses.dataclass(frozen=True)
class AveragedEncoder:
    """An averaged encoder's folder (``average``). Give it as ``model=`` to the next stage (``encode``,
    ``search``, ``finetune``): it is a model folder.

    Attributes:
        path: the encoder folder (Hugging Face + sentence-transformers files, ``seedr_average.json``).
        members: the models averaged, as given (a run's checkpoints, oldest first, for ``checkpoints``).
        record: ``seedr_average.json``: each member's path, fingerprint and weight, and ``weights_averaged``.
    """

    path: Path
    members: list[str]
    record: dict[str, Any]

    def __fspath__(self) -> str:
        return os.fspath(self.path)


@checks_arguments
def average(models: Sequence[str | os.PathLike], out: str | os.PathLike, *, weight: Sequence[float] | None = None,
            checkpoints: int | None = None, overwrite: bool = False) -> AveragedEncoder:
    """Average the weights of encoders into one (``seedr average``; no cost at inference): a uniform soup of
    runs (Wortsman et al. 2022, Model soups), the newest checkpoints of one run (LAWA, SWA) or a fine-tuned
    model with its starting point (WiSE-FT, weights 1 − α and α). Every floating-point weight is averaged;
    the models must share architecture and vocabulary, and the first is the template whose tokenizer,
    pooling and settings the result keeps.

    Args:
        models: model folders, run folders (a ``TrainingRun``: its encoder) or built-in names (``minilm``).
        out: the averaged encoder's folder (written once complete).
        weight: one per model, in their order (normalised to sum to 1); default equal.
        checkpoints: average each run's newest N checkpoints instead of its final encoder (the run then
            stands for N models, oldest first); the run must have kept them (``train.keep_checkpoints``).
        overwrite: replace ``out`` when it holds an averaged encoder (nothing else is replaced).

    Example:
        >>> soup = seedr.average(["runs/ft-seed1", "runs/ft-seed2"], "runs/soup")
        >>> seedr.encode(soup, "my-docs.jsonl", "runs/soup-embeddings")
    """
    from seedr.modeling.averaging import average_encoders, checkpoint_encoders

    members: list[str] = []
    for model in models:
        if checkpoints is None:
            members.append(os.fspath(model))
            continue
        run = Path(os.fspath(model))
        if not (run / "checkpoints").is_dir():
            raise ValueError(f"--checkpoints: {os.fspath(model)} is not a seedr run folder (no checkpoints/ in it)")
        members += [str(path) for path in checkpoint_encoders(run, checkpoints)]
    # average_encoders asks check_output and takes the output's lock itself, once it has refused an output
    # inside a model: a lock taken first would be written into that model
    record = average_encoders(members, out, weight, overwrite=overwrite)
    return AveragedEncoder(Path(out), members, record)


__all__ = ["AveragedEncoder", "average"]
