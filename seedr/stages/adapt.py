"""`seedr adapt`: from a corpus without labelled queries to a retriever adapted to it."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from seedr.config.settings import FinetuneConfig
from seedr.pipeline import adapt as adaptation
from seedr.pipeline.adapt import AdaptStageConfig
from seedr.stages.common import listing_settings
from seedr.stages.options import options_of

console = Console()  # the summary table goes to stdout; progress and errors to stderr


def _config_class() -> type[Any]:
    return FinetuneConfig


#: ``seedr adapt --help`` ends with every fine-tuning key (--set), with its default or a recipe's value.
COMMAND_CLASS = listing_settings(
    _config_class, "finetune",
    note="Without --config, adapt fine-tunes with the adapt recipe (`seedr config finetune --config adapt`); it "
         "sets train_data, the dev_* files and positive_grade itself.", recipe="adapt")


@options_of(AdaptStageConfig)
def command(config: AdaptStageConfig) -> None:
    """Adapt an encoder to a corpus that has no labelled queries: mine training pairs from the documents
    alone (a sentence against the rest of its passage, a title against its text, lead sentences against the
    body or a linking article where the corpus has sections or links, two crops of a text), fine-tune
    contrastively on them (in-batch and BM25 negatives, never a pseudo-query's own document), and validate on
    the pairs of held-out documents (MRR@10, R@1, R@10: metrics.jsonl, validation.png), stopping when they
    no longer improve and keeping the best model in OUT/encoder. No query or qrels file is read.

    Example: seedr adapt --model minilm --corpus ../shared/data/scifact --out runs/adapted
    --max-documents 1000 --validation 100 --set train.max_steps=50
    """
    _print_summary(adaptation.run(config).summary)


def _print_summary(summary: dict) -> None:
    for warning in summary["warnings"]:
        console.print(f"[yellow]warning[/]: {escape(warning)}", soft_wrap=True, highlight=False)
    table = Table(title=f"seedr adapt → {summary['run']}")
    table.add_column("")
    table.add_column("value", justify="right")
    table.add_row("encoder", summary["encoder"])
    for name, count in summary["pairs"]["pairs"]["train"].items():
        table.add_row(f"{name} pairs (train / validation)",
                      f"{count} / {summary['pairs']['pairs']['validation'].get(name, 0)}")
    table.add_row("steps", str(summary["steps"]))
    best = summary.get("best") or {}
    if best.get("step") is not None:
        table.add_row(f"best {best['metric']}", f"{best['value']:.4f} (step {best['step']})")
    for name, value in summary["dev"].items():
        table.add_row(f"last {name}", f"{value:.4f}")
    if summary.get("stopped"):
        table.add_row("stopped early", summary["stopped"])
    table.add_row("validation plot", summary["validation_plot"])
    console.print(table)
