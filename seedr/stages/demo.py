"""`seedr demo`: the main job — the whole pipeline, small, on the embedded default data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seedr.stages.common import clear_errors, console, locks_output


@clear_errors
@locks_output("out")
def command(
    out: Annotated[Path, typer.Option("--out", help="Run folder (finished steps are reused).")] = Path("runs/demo"),
    data: Annotated[Path | None, typer.Option(
        "--data", help="A BEIR folder (corpus, queries, qrels/train.tsv, qrels/test.tsv) instead of the "
                       "embedded corpus, e.g. ../shared/data/scifact.")] = None,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a size, e.g. pretrain_steps=300 (repeatable).")] = None,
) -> None:
    """Prepare the embedded Wikipedia leads, continue pre-training MiniLM with MLM and with SEED-Encoder,
    fine-tune both into retrievers, compare them with BM25 on held-out queries (significance-tested),
    and write a report with tables and training curves.

    Example: seedr demo --out runs/demo-scifact --data ../shared/data/scifact --set pretrain_steps=300
    """
    from seedr.config import load_config
    from seedr.demo import DemoConfig, run_demo

    config = load_config(DemoConfig, None, set_ or [])
    if data is not None:
        config.data = str(data)
    run_demo(out, config, console)
