"""`seedr finetune`: fine-tune a pre-trained encoder into a dense retriever (dual encoder)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from seedr.config.settings import FinetuneConfig
from seedr.pipeline import finetune as finetuning
from seedr.pipeline.finetune import FinetuneStageConfig
from seedr.stages.common import listing_settings
from seedr.stages.options import options_of

console = Console()  # the summary table goes to stdout; progress and errors to stderr


def _config_class() -> type[Any]:
    return FinetuneConfig


#: ``seedr finetune --help`` ends with every key of FinetuneConfig, with its default or a recipe's value.
COMMAND_CLASS = listing_settings(_config_class, "finetune")


@options_of(FinetuneStageConfig)
def command(config: FinetuneStageConfig) -> None:
    """Fine-tune an encoder for dense retrieval: a dual encoder trained with a loss (triplet, nll) on
    labelled queries and negatives from a strategy (bm25, in_batch, static, ance), evaluated on a dev set
    during training. The product (--out/encoder) loads with AutoModel and SentenceTransformer.

    An epoch (--set epochs=N) passes once over every labelled (query, positive) pair by default
    (epoch_over=pairs; epoch_over=queries: over queries, as DPR), keeping the last partial batch
    (drop_last=false). The warm-up is a share of the run (train.warmup_ratio, default 0.1).

    Example: seedr finetune --model minilm --train ../shared/data/scifact --negatives bm25 --loss nll
    --dev-qrels ../shared/data/scifact/qrels/test.tsv --set train.max_steps=200 --out runs/scifact
    """

    if config.ance_refresh_only:
        mined = finetuning.ance_refresh(config.refresh())
        console.print(f"ANCE negatives mined with {mined.model}: [bold]{mined.path}[/]")
        return
    _print_summary(finetuning.run(config).summary)


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
