"""`seedr average`: one encoder whose weights are the weighted mean of several fine-tuned ones (a model
soup of runs, the latest checkpoints of one run, or a fine-tuned model with the one it started from)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seedr.stages.common import clear_errors, console


@clear_errors
def command(
    models: Annotated[list[str], typer.Argument(
        help="Model folders, seedr run folders or built-in names (minilm), of one architecture and "
             "vocabulary; the first is the template whose tokenizer, pooling and settings the result keeps."
    )],
    out: Annotated[Path, typer.Option("--out", help="Folder of the averaged encoder (written once complete).")],
    weight: Annotated[list[float] | None, typer.Option(
        "--weight", min=0.0, help="One per model, in their order (normalised to sum to 1). Default: equal "
                                  "(a uniform soup)."
    )] = None,
    checkpoints: Annotated[int | None, typer.Option(
        "--checkpoints", min=1, help="Average a run's newest N checkpoints instead of its final encoder (the "
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
    from seedr.engine.averaging import average_encoders, checkpoint_encoders

    members: list[str] = []
    for model in models:
        if checkpoints is None:
            members.append(model)
            continue
        run = Path(model)
        if not (run / "checkpoints").is_dir():
            raise ValueError(f"--checkpoints: {model} is not a seedr run folder (no checkpoints/ in it)")
        members += [str(path) for path in checkpoint_encoders(run, checkpoints)]
    # average_encoders takes the output's lock itself, once it has refused an output inside a model:
    # a lock taken first would be written into that model
    record = average_encoders(members, out, weight, overwrite=overwrite)
    console.print(f"averaged {record['weights_averaged']} weights of {len(members)} models into [bold]{out}[/]",
                  highlight=False)
