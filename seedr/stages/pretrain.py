"""`seedr pretrain`: pre-train an encoder with one objective (mlm, seed, cpdae, ict, bfs, wlp, ...)."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from seedr.config.settings import PretrainConfig
from seedr.pipeline import pretrain as pretraining
from seedr.pipeline.pretrain import PretrainStageConfig
from seedr.stages.common import console, listing_settings
from seedr.stages.options import options_of


def _config_class() -> type[Any]:
    return PretrainConfig


#: ``seedr pretrain --help`` ends with every key of PretrainConfig, with its default or a recipe's value.
COMMAND_CLASS = listing_settings(
    _config_class, "pretrain",
    note="objective.* are the options of the objective's own config class; the help shows those the recipe "
         "or --set gives, and `seedr config pretrain --config NAME --describe` lists them all, described.")


@options_of(PretrainStageConfig)
def command(config: PretrainStageConfig) -> None:
    """Pre-train an encoder; writes a Hugging Face + sentence-transformers encoder to OUT/encoder.

    Single-text objectives tokenise the corpus once into memory-mapped shards (cached beside OUT);
    two-tower objectives draw pairs from structured articles. Runs on one process as is; under
    `accelerate launch` (DDP, FSDP, DeepSpeed, bf16) with the same arguments.

    Example: seedr pretrain --config seed --corpus ../shared/data/wiki --model minilm --out runs/seed --set train.max_steps=200
    """
    run = pretraining.run(config)
    # asked once the run has loaded torch, so that a refusal answers without it; under accelerate launch /
    # torchrun, one process reports (the run's own first lines say what it trains)
    from seedr.engine.run_state import process_state

    if process_state().is_main_process:
        shown = {key: round(value, 4) if isinstance(value, float) else value for key, value in run.summary.items()}
        console.print(f"done: {shown}\nencoder: [bold]{escape(str(run.encoder))}[/]")
