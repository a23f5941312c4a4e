"""`seedr pretrain`: pre-train an encoder with one objective (mlm, seed, cpdae, ict, bfs, wlp, ...)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from seedr.api import pretrain
from seedr.config.loading import parse_overrides
from seedr.config.settings import PretrainConfig
from seedr.stages.common import clear_errors, console, listing_settings, setting_option


def _config_class() -> type[Any]:
    return PretrainConfig


#: ``seedr pretrain --help`` ends with every key of PretrainConfig, with its default or a recipe's value.
COMMAND_CLASS = listing_settings(
    _config_class, "pretrain",
    note="objective.* are the options of the objective's own config class; the help shows those the recipe "
         "or --set gives, and `seedr config pretrain --config NAME --describe` lists them all, described.")


@clear_errors
def command(
    out: Annotated[Path, typer.Option(
        "--out", help="Run folder: encoder/, checkpoints/, metrics.jsonl, config.yaml.")],
    objective: Annotated[str | None, setting_option("pretrain", "objective")] = None,
    corpus: Annotated[list[Path] | None, typer.Option(
        "--corpus", help="Corpus: a file (JSONL, TSV, parquet ...), a folder (of shards, made by `seedr prepare`, or "
                         "a Hugging Face save_to_disk folder) or a quoted glob "
                         "(repeatable); default: the recipe's, else the embedded Wikipedia leads (token "
                         "objectives).")] = None,
    config: Annotated[str | None, typer.Option(
        "--config", help="Recipe: a name shipped with seedr (seedr/recipes/pretrain/NAME.yaml, e.g. seed) or "
                         "a YAML file.")] = None,
    overrides: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a recipe option: key=value, e.g. train.max_steps=200 or "
                      "objective.attention_span=all (repeatable).")] = None,
    model: Annotated[str | None, setting_option("pretrain", "model")] = None,
    size: Annotated[str | None, setting_option("pretrain", "size")] = None,
    tokenizer: Annotated[str | None, setting_option("pretrain", "tokenizer")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue from the newest checkpoint in --out.")] = False,
) -> None:
    """Pre-train an encoder; writes a Hugging Face + sentence-transformers encoder to OUT/encoder.

    Single-text objectives tokenise the corpus once into memory-mapped shards (cached beside OUT);
    two-tower objectives draw pairs from structured articles. Runs on one process as is; under
    `accelerate launch` (DDP, FSDP, DeepSpeed, bf16) with the same arguments.

    Example: seedr pretrain --config seed --corpus ../shared/data/wiki --model minilm --out runs/seed --set train.max_steps=200
    """
    run = pretrain(out, config=config, objective=objective, model=model, size=size, tokenizer=tokenizer,
                   corpus=corpus, settings=parse_overrides(overrides), resume=resume)
    # asked once the run has loaded torch, so that a refusal answers without it; under accelerate launch /
    # torchrun, one process reports (the run's own first lines say what it trains)
    from seedr.engine.run_state import process_state

    if process_state().is_main_process:
        shown = {key: round(value, 4) if isinstance(value, float) else value for key, value in run.summary.items()}
        console.print(f"done: {shown}\nencoder: [bold]{escape(str(run.encoder))}[/]")
