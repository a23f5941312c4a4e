"""`seedr config`: print the settings a pretrain or finetune run would use, resolved, and exit."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer

from seedr.api import resolve_settings
from seedr.config.loading import attribute_descriptions, describe_settings, parse_overrides
from seedr.objectives import OBJECTIVES
from seedr.stages.common import clear_errors, console


@clear_errors
def command(
    stage: Annotated[str, typer.Argument(help="The stage whose settings to resolve: pretrain or finetune.")],
    config: Annotated[str | None, typer.Option(
        "--config", help="Recipe: a name shipped with seedr (seedr/recipes/STAGE/NAME.yaml, e.g. seed) or a "
                         "YAML file.")] = None,
    overrides: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a setting: key=value, e.g. train.batch_size=8 (repeatable).")] = None,
    describe: Annotated[bool, typer.Option(
        "--describe", help="Each key on a line with its description, instead of YAML.")] = False,
) -> None:
    """Resolve a stage's settings as a run would (defaults, then the recipe, then --set) and print them as
    YAML (the run's config.yaml), with the batch they make; nothing runs. Unknown keys are refused, listing
    the valid ones.

    Example: seedr config pretrain --config seed --set train.batch_size=8
    """
    import yaml

    resolved = resolve_settings(stage, config, parse_overrides(overrides), processes=1)  # as config.yaml records it
    if describe:
        descriptions = None
        if stage == "pretrain":  # the objective's options are documented by its own config class
            descriptions = attribute_descriptions(OBJECTIVES.options(resolved.objective_name), "objective")
        typer.echo("\n".join(describe_settings(resolved, descriptions)))
    else:
        typer.echo(yaml.safe_dump(dataclasses.asdict(resolved), sort_keys=False), nl=False)
    console.print(f"on one process, {resolved.train.describe_batch(processes=1)}; under a launcher, the "
                  "accumulation follows the number of processes", highlight=False, soft_wrap=True)
