"""`seedr config`: print the settings a pretrain or finetune run would use, resolved, and exit."""

from __future__ import annotations

import dataclasses

import typer

from seedr.config.loading import attribute_descriptions, describe_settings
from seedr.objectives import OBJECTIVES
from seedr.pipeline import settings as resolution
from seedr.pipeline.settings import SettingsConfig
from seedr.stages.common import console
from seedr.stages.options import options_of


@options_of(SettingsConfig)
def command(config: SettingsConfig) -> None:
    """Resolve a stage's settings as a run would (defaults, then the recipe, then --set) and print them as
    YAML (the run's config.yaml), with the batch they make; nothing runs. Unknown keys are refused, listing
    the valid ones.

    Example: seedr config pretrain --config seed --set train.batch_size=8
    """
    import yaml

    resolved = resolution.run(config)  # as config.yaml records it, on one process
    if config.describe:
        descriptions = None
        if config.stage == "pretrain":  # the objective's options are documented by its own class
            descriptions = attribute_descriptions(OBJECTIVES.options(resolved.objective_name), "objective")
        typer.echo("\n".join(describe_settings(resolved, descriptions)))
    else:
        typer.echo(yaml.safe_dump(dataclasses.asdict(resolved), sort_keys=False), nl=False)
    console.print(f"on one process, {resolved.train.describe_batch(processes=1)}; under a launcher, the "
                  "accumulation follows the number of processes", highlight=False, soft_wrap=True)
