"""``average`` from Python: encoders whose weights are averaged into one (``seedr average``)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from seedr.api.keywords import keywords_of
from seedr.pipeline import average as averaging
from seedr.pipeline.average import AverageConfig


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


@keywords_of(AverageConfig)
def average(config: AverageConfig) -> AveragedEncoder:
    """Average the weights of encoders into one (``seedr average``; no cost at inference): a uniform soup of
    runs (Wortsman et al. 2022, Model soups), the newest checkpoints of one run (LAWA, SWA) or a fine-tuned
    model with its starting point (WiSE-FT, weights 1 − α and α). Every floating-point weight is averaged;
    the models must share architecture and vocabulary, and the first is the template whose tokenizer,
    pooling and settings the result keeps. A model may be a run folder (a ``TrainingRun``: its encoder).

    Example:
        >>> soup = seedr.average(["runs/ft-seed1", "runs/ft-seed2"], "runs/soup")
        >>> seedr.encode(soup, "my-docs.jsonl", "runs/soup-embeddings")
    """
    members, record = averaging.run(config)
    return AveragedEncoder(config.out, members, record)


__all__ = ["AveragedEncoder", "average"]
