"""`seedr average`: one encoder whose weights are the weighted mean of several fine-tuned ones (a model
soup of runs, the latest checkpoints of one run, or a fine-tuned model with the one it started from)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seedr.api import average
from seedr.api.arguments import option_range
from seedr.stages.common import clear_errors, console


@clear_errors
def command(
    models: Annotated[list[str], typer.Argument(
        help="Model folders, seedr run folders or built-in names (minilm), of one architecture and "
             "vocabulary; the first is the template whose tokenizer, pooling and settings the result keeps."
    )],
    out: Annotated[Path, typer.Option("--out", help="Folder of the averaged encoder (written once complete).")],
    weight: Annotated[list[float] | None, typer.Option(
        "--weight", **option_range("average", "weight"), help="One per model, in their order (normalised to sum to 1). Default: equal "
                                  "(a uniform soup)."
    )] = None,
    checkpoints: Annotated[int | None, typer.Option(
        "--checkpoints", **option_range("average", "checkpoints"), help="Average a run's newest N checkpoints instead of its final encoder (the "
                                     "run folder then stands for N models, oldest first): latest weight "
                                     "averaging. The run must have kept them (train.keep_checkpoints, "
                                     "train.save_every)."
    )] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Replace OUT when it already holds an averaged encoder (nothing else is replaced).")] = False,
) -> None:
    """Average the weights of fine-tuned encoders into one (no cost at inference).

    Uniform soups of runs (Wortsman et al. 2022, Model soups), the newest checkpoints of one run (LAWA,
    SWA) or a fine-tuned model with its starting point (WiSE-FT, weights 1 − α and α). Every
    floating-point weight is averaged; the models must share architecture and vocabulary. The folder
    records its members, their fingerprints and weights (seedr_average.json).

    Example: seedr average runs/ft-seed1 runs/ft-seed2 runs/ft-seed3 --out soup

    Example: seedr average runs/ft --checkpoints 3 --out lawa

    Example: seedr average runs/ft minilm --weight 0.5 --weight 0.5 --out wise-ft
    """
    averaged = average(models, out, weight=weight, checkpoints=checkpoints, overwrite=overwrite)
    console.print(f"averaged {averaged.record['weights_averaged']} weights of {len(averaged.members)} models into "
                  f"[bold]{out}[/]", highlight=False)
