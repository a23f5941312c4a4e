"""`seedr adapt`: from a corpus without labelled queries to a retriever adapted to it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from seedr.api import adapt
from seedr.api.arguments import option_range
from seedr.config.loading import parse_overrides
from seedr.config.settings import FinetuneConfig
from seedr.stages.common import clear_errors, listing_settings, setting_option

console = Console()  # the summary table goes to stdout; progress and errors to stderr


def _config_class() -> type[Any]:
    return FinetuneConfig


#: ``seedr adapt --help`` ends with every fine-tuning key (--set), with its default or a recipe's value.
COMMAND_CLASS = listing_settings(
    _config_class, "finetune",
    note="Without --config, adapt fine-tunes with the adapt recipe (`seedr config finetune --config adapt`); it "
         "sets train_data, the dev_* files and positive_grade itself.", recipe="adapt")


@clear_errors
def command(
    corpus: Annotated[list[Path], typer.Option(
        "--corpus", help="The documents: a file (JSONL, TSV, parquet ...), a folder (of shards, a BEIR folder: its "
                         "corpus.jsonl alone is read) or a quoted glob (repeatable).")],
    out: Annotated[Path, typer.Option(
        "--out", help="Run folder: encoder/, pairs/, metrics.jsonl, validation.png, best/, config.yaml.")],
    model: Annotated[str | None, setting_option("adapt", "model")] = None,
    pairs: Annotated[str | None, typer.Option(
        "--pairs", help="Pair sources, comma-separated: ict, title, bfs, wlp, crop (default: every one the "
                        "corpus supports).")] = None,
    pretrain: Annotated[str | None, typer.Option(
        "--pretrain", help="Continue pre-training on the corpus first with this pre-training recipe (seed, "
                           "cpdae, mlm ...), in OUT/pretrain.")] = None,
    pretrain_overrides: Annotated[list[str] | None, typer.Option(
        "--pretrain-set", help="key=value for the pre-training, e.g. train.max_steps=50 (repeatable).")] = None,
    validation: Annotated[float | None, typer.Option(
        "--validation", **option_range("adapt", "validation"),
        help="Documents held out for validation (N ≥ 1) or their share (< 1); default 10%, at most 1000, at "
             "least 20 (fewer cannot rank: refused; the default widened).")] = None,
    max_documents: Annotated[int | None, typer.Option(
        "--max-documents", **option_range("adapt", "max_documents"),
        help="Read only the corpus's first N documents.")] = None,
    dev_every: Annotated[int | None, setting_option("adapt", "dev_every")] = None,
    patience: Annotated[int | None, setting_option("adapt", "patience")] = None,
    config: Annotated[str | None, typer.Option(
        "--config", help="Fine-tuning recipe: a name shipped with seedr or a YAML file (default: adapt).")] = None,
    overrides: Annotated[list[str] | None, typer.Option(
        "--set", help="Fine-tuning key=value, e.g. train.max_steps=500 or train.batch_size=64 (repeatable).")] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue the run in --out (its mined pairs are kept).")] = False,
) -> None:
    """Adapt an encoder to a corpus that has no labelled queries: mine training pairs from the documents
    alone (a sentence against the rest of its passage, a title against its text, lead sentences against the
    body or a linking article where the corpus has sections or links, two crops of a text), fine-tune
    contrastively on them (in-batch and BM25 negatives, never a pseudo-query's own document), and validate on
    the pairs of held-out documents (MRR@10, R@1, R@10: metrics.jsonl, validation.png), stopping when they
    no longer improve and keeping the best model in OUT/encoder. No query or qrels file is read.

    Example: seedr adapt --model minilm --corpus ../shared/data/scifact --out runs/adapted
    --max-documents 1000 --validation 100 --set train.max_steps=50
    """
    sources = [name.strip() for name in pairs.split(",") if name.strip()] if pairs else None
    run = adapt(out, corpus=[str(path) for path in corpus], model=model, pairs=sources, pretrain=pretrain,
                validation=validation, max_documents=max_documents, dev_every=dev_every, patience=patience,
                config=config, settings=parse_overrides(overrides),
                pretrain_settings=parse_overrides(pretrain_overrides), resume=resume)
    _print_summary(run.summary)


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
