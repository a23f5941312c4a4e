"""`seedr pretrain`: pre-train an encoder with one objective (mlm, seed, cpdae, ict, bfs, wlp, ...)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from seedr.stages.common import clear_errors, console, listing_settings, locks_output


def _config_class() -> type[Any]:
    from seedr.settings import PretrainConfig  # torch-free: the help answers at once

    return PretrainConfig


#: ``seedr pretrain --help`` ends with every key of PretrainConfig, with its default or a recipe's value.
COMMAND_CLASS = listing_settings(
    _config_class, "pretrain",
    note="objective.* are the options of the objective's own config class; the help shows those the recipe "
         "or --set gives, and `seedr config pretrain --config NAME --describe` lists them all, described.")


@clear_errors
@locks_output("out")
def command(
    out: Annotated[Path, typer.Option(
        "--out", help="Run folder: encoder/, checkpoints/, metrics.jsonl, config.yaml.")],
    objective: Annotated[str | None, typer.Option(
        "--objective", help="Objective name (mlm, seed, cpdae, ict, bfs, wlp, ict_bfs_wlp, ...); "
                            "default: the recipe's objective_name, else mlm.")] = None,
    corpus: Annotated[list[Path] | None, typer.Option(
        "--corpus", help="Corpus: a file, a folder (of shards, or made by `seedr prepare`) or a quoted glob "
                         "(repeatable); default: the recipe's, else the embedded Wikipedia leads (token "
                         "objectives).")] = None,
    config: Annotated[str | None, typer.Option(
        "--config", help="Recipe: a name shipped with seedr (seedr/recipes/pretrain/NAME.yaml, e.g. seed) or "
                         "a YAML file.")] = None,
    overrides: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a recipe option: key=value, e.g. train.max_steps=200 or "
                      "objective.attention_span=all (repeatable).")] = None,
    model: Annotated[str | None, typer.Option(
        "--model", help="Continue from a local HF folder, a seedr run folder, or 'minilm'.")] = None,
    size: Annotated[str | None, typer.Option(
        "--size", help="From scratch: tiny, mini, small, medium or base.")] = None,
    tokenizer: Annotated[str | None, typer.Option(
        "--tokenizer", help="Tokenizer folder (from `seedr prepare`) for from-scratch pre-training.")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue from the newest checkpoint in --out.")] = False,
) -> None:
    """Pre-train an encoder; writes a Hugging Face + sentence-transformers encoder to OUT/encoder.

    Single-text objectives tokenise the corpus once into memory-mapped shards (cached beside OUT);
    two-tower objectives draw pairs from structured articles. Runs on one process as is; under
    `accelerate launch` (DDP, FSDP, DeepSpeed, bf16) with the same arguments.

    Example: seedr pretrain --config seed --corpus ../shared/data/wiki --model minilm --out runs/seed --set train.max_steps=200
    """
    from seedr.config import load_config
    from seedr.data.io import check_output_folder
    from seedr.recipes import recipe_path
    from seedr.training.pretrain import PretrainConfig, pretrain
    from seedr.training.trainer import process_state

    if model is not None and size is not None:
        raise ValueError("--model (continue from a checkpoint) and --size (from scratch) exclude each other")
    flags = {"objective_name": objective, "model.init": model, "model.size": size, "model.tokenizer": tokenizer,
             "data.corpus": [str(path) for path in corpus] if corpus else None}
    # Flags first, so that an explicit --set of the same key wins.
    given = [f"{key}={json.dumps(value)}" for key, value in flags.items() if value is not None]
    recipe = recipe_path(config, "pretrain") if config is not None else None
    settings = load_config(PretrainConfig, recipe, given + list(overrides or []))
    check_output_folder(out, "training run", replaces=False)
    speaks = process_state().is_main_process  # under accelerate launch / torchrun, one process reports
    if speaks:
        console.print(f"pre-training [bold]{settings.objective_name}[/] → {escape(str(out))}")
    metrics = pretrain(settings, out, resume=resume)
    if speaks:
        shown = {key: round(value, 4) if isinstance(value, float) else value for key, value in metrics.items()}
        console.print(f"done: {shown}\nencoder: [bold]{escape(str(out / 'encoder'))}[/]")