"""`seedr average`: one encoder whose weights are the weighted mean of several fine-tuned ones (a model
soup of runs, the latest checkpoints of one run, or a fine-tuned model with the one it started from)."""

from __future__ import annotations

from seedr.pipeline import average as averaging
from seedr.pipeline.average import AverageConfig
from seedr.stages.common import console
from seedr.stages.options import options_of


@options_of(AverageConfig)
def command(config: AverageConfig) -> None:
    """Average the weights of fine-tuned encoders into one (no cost at inference).

    Uniform soups of runs (Wortsman et al. 2022, Model soups), the newest checkpoints of one run (LAWA,
    SWA) or a fine-tuned model with its starting point (WiSE-FT, weights 1 − α and α). Every
    floating-point weight is averaged; the models must share architecture and vocabulary. The folder
    records its members, their fingerprints and weights (seedr_average.json).

    Example: seedr average runs/ft-seed1 runs/ft-seed2 runs/ft-seed3 --out soup

    Example: seedr average runs/ft --checkpoints 3 --out lawa

    Example: seedr average runs/ft minilm --weight 0.5 --weight 0.5 --out wise-ft
    """
    members, record = averaging.run(config)
    console.print(f"averaged {record['weights_averaged']} weights of {len(members)} models into "
                  f"[bold]{config.out}[/]", highlight=False)
