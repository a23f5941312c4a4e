"""`seedr finetune`: fine-tune a pre-trained encoder into a dense retriever (dual encoder)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from seedr.api import ance_refresh, finetune
from seedr.api.arguments import option_range
from seedr.config.loading import parse_overrides
from seedr.config.settings import FinetuneConfig
from seedr.stages.common import clear_errors, listing_settings, setting_option

console = Console()  # the summary table goes to stdout; progress and errors to stderr


def _config_class() -> type[Any]:
    return FinetuneConfig


#: ``seedr finetune --help`` ends with every key of FinetuneConfig, with its default or a recipe's value.
COMMAND_CLASS = listing_settings(_config_class, "finetune")


@clear_errors
def command(
    model: Annotated[str | None, setting_option("finetune", "model")] = None,
    train: Annotated[str | None, setting_option("finetune", "train")] = None,
    negatives: Annotated[str | None, setting_option("finetune", "negatives")] = None,
    loss: Annotated[str | None, setting_option("finetune", "loss")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Run folder (required unless --ance-refresh-only).")] = None,
    config: Annotated[str | None, typer.Option(
        "--config", help="Recipe: a name shipped with seedr (seedr/recipes/finetune/NAME.yaml, e.g. "
                         "seed_siamese_bm25) or a YAML file.")] = None,
    overrides: Annotated[list[str] | None, typer.Option(
        "--set", help="key=value override, e.g. train.max_steps=500 or negative_options.depth=50 "
                      "(repeatable).")] = None,
    dev_qrels: Annotated[str | None, setting_option("finetune", "dev_qrels")] = None,
    dev_queries: Annotated[str | None, setting_option("finetune", "dev_queries")] = None,
    dev_corpus: Annotated[str | None, setting_option("finetune", "dev_corpus")] = None,
    dev_every: Annotated[int | None, setting_option("finetune", "dev_every")] = None,
    rounds: Annotated[int | None, typer.Option(
        "--rounds", **option_range("finetune", "rounds"),
        help="static negatives: mine → fine-tune rounds, each mining with the last model "
                         "(CPDAE on documents: 2).")] = None,
    few_shot: Annotated[float | None, setting_option("finetune", "few_shot")] = None,
    seeds: Annotated[str | None, typer.Option(
        "--seeds", help="Few-shot: comma-separated seeds, one run each, averaged in few-shot.md.")] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue the run in --out from its newest checkpoint.")] = False,
    ance_refresh_only: Annotated[bool, typer.Option(
        "--ance-refresh-only", help="Only mine ANCE negatives with --model (a checkpoint folder such as "
                                    "RUN/checkpoints/step-N) for the --train queries, into --out (default: "
                                    "RUN/ance/refresh-N), for a run training elsewhere.")] = False,
) -> None:
    """Fine-tune an encoder for dense retrieval: a dual encoder trained with a loss (triplet, nll) on
    labelled queries and negatives from a strategy (bm25, in_batch, static, ance), evaluated on a dev set
    during training. The product (--out/encoder) loads with AutoModel and SentenceTransformer.

    An epoch (--set epochs=N) passes once over every labelled (query, positive) pair by default
    (epoch_over=pairs; epoch_over=queries: over queries, as DPR), keeping the last partial batch
    (drop_last=false). The warm-up is a share of the run (train.warmup_ratio, default 0.1).

    Example: seedr finetune --model minilm --train ../shared/data/scifact --negatives bm25 --loss nll
    --dev-qrels ../shared/data/scifact/qrels/test.tsv --set train.max_steps=200 --out runs/scifact
    """

    settings = parse_overrides(overrides)
    options = {"model": model, "train": train, "negatives": negatives, "loss": loss, "dev_qrels": dev_qrels,
               "dev_queries": dev_queries, "dev_corpus": dev_corpus, "dev_every": dev_every, "rounds": rounds,
               "few_shot": few_shot,
               "seeds": [int(seed) for seed in seeds.split(",") if seed.strip()] if seeds else None}
    if ance_refresh_only:
        mined = ance_refresh(out, model=model, train=train, config=config, settings=settings)
        console.print(f"ANCE negatives mined with {mined.model}: [bold]{mined.path}[/]")
        return
    if out is None:
        raise ValueError("give the run folder: --out DIR")
    run = finetune(out, config=config, settings=settings, resume=resume, **options)
    _print_summary(run.summary)


def _print_summary(summary: dict) -> None:
    table = Table(title=f"seedr finetune → {summary['run']}")
    table.add_column("")
    table.add_column("value", justify="right")
    if "few_shot" in summary:
        for run in summary["few_shot"]["runs"]:
            for name, value in run["dev"].items():
                table.add_row(f"seed {run['seed']} {name}", f"{value:.4f}")
        for name, value in summary["few_shot"]["mean"].items():
            table.add_row(f"mean {name}", f"{value:.4f} ± {summary['few_shot']['std'][name]:.4f}")
    else:
        table.add_row("encoder", summary["encoder"])
        table.add_row("steps", str(summary["steps"]))
        table.add_row("training queries", str(summary["queries"]))
        if "loss" in summary["last"]:
            table.add_row("last loss", f"{summary['last']['loss']:.4f}")
        for name, value in summary["dev"].items():
            table.add_row(name, f"{value:.4f}")
    console.print(table)
