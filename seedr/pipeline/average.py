"""Average the weights of encoders into one: a uniform soup of runs (Wortsman et al. 2022, Model soups), the
newest checkpoints of one run (LAWA, SWA) or a fine-tuned model with its starting point (WiSE-FT). ``seedr
average`` and ``seedr.average`` run this."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seedr.pipeline.options import AT_LEAST_ONE, Bound, check_options, option


@dataclasses.dataclass(kw_only=True)
class AverageConfig:
    """What ``average`` runs with."""

    models: Sequence[str | os.PathLike] = option(
        help="Model folders, seedr run folders or built-in names (minilm), of one architecture and vocabulary; "
             "the first is the template whose tokenizer, pooling and settings the result keeps.",
        cli_type=list[str], positional=True, argument=True)
    out: Path = option(help="Folder of the averaged encoder (written once complete).", positional=True)
    weight: Sequence[float] | None = option(
        None, help="One per model, in their order (normalised to sum to 1). Default: equal (a uniform soup).",
        bound=Bound(float, 0, many=True), cli_type=list[float])
    checkpoints: int | None = option(
        None, help="Average a run's newest N checkpoints instead of its final encoder (the run folder then stands "
                   "for N models, oldest first): latest weight averaging. The run must have kept them "
                   "(train.keep_checkpoints, train.save_every).", bound=AT_LEAST_ONE)
    overwrite: bool = option(False, help="Replace OUT when it already holds an averaged encoder (nothing else is "
                                         "replaced).")

    def __post_init__(self) -> None:
        check_options(self)
        self.out = Path(self.out)


def run(config: AverageConfig) -> tuple[list[str], dict[str, Any]]:
    """Average ``config.models`` into ``config.out``; return the members averaged (a run's checkpoints, oldest
    first, for ``checkpoints``) and the record written (``seedr_average.json``)."""
    from seedr.modeling.averaging import average_encoders

    members: list[str] = []
    for model in config.models:
        if config.checkpoints is None:
            members.append(os.fspath(model))
            continue
        run_folder = Path(os.fspath(model))
        if not (run_folder / "checkpoints").is_dir():
            raise ValueError(f"--checkpoints: {os.fspath(model)} is not a seedr run folder (no checkpoints/ in it)")
        members += checkpoint_members(run_folder, config.checkpoints)
    # average_encoders asks check_output and takes the output's lock itself, once it has refused an output
    # inside a model: a lock taken first would be written into that model
    record = average_encoders(members, config.out, config.weight, overwrite=config.overwrite)
    return members, record


def checkpoint_members(run_folder: Path, count: int) -> list[str]:
    """The encoders of the ``count`` newest checkpoints of ``run_folder``, oldest first."""
    from seedr.modeling.averaging import checkpoint_encoders

    return [str(path) for path in checkpoint_encoders(run_folder, count)]


__all__ = ["AverageConfig", "checkpoint_members", "run"]
