"""`seedr demo`: the main job — the whole pipeline, small, on the embedded default data
(the experiment ``seedr/experiments/demo.yaml``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seedr.api import demo
from seedr.stages.common import clear_errors, console


@clear_errors
def command(
    out: Annotated[Path, typer.Option("--out", help="Run folder (finished steps are reused).")] = Path("runs/demo"),
    data: Annotated[Path | None, typer.Option(
        "--data", help="A BEIR folder (corpus, queries, qrels/train.tsv, qrels/test.tsv) instead of the "
                       "embedded corpus, e.g. ../shared/data/scifact.")] = None,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a size, e.g. pretrain_steps=300 (repeatable; the variables of "
                      "seedr/experiments/demo.yaml).")] = None,
) -> None:
    """Prepare the embedded Wikipedia leads; fine-tune MiniLM with seedr's best recipe and fuse it with
    BM25; continue pre-training the seedr base with MLM and with SEED-Encoder and fine-tune both; compare
    all with BM25 and MiniLM as shipped on held-out queries (significance-tested), and write a report
    (Markdown, HTML) with tables and training curves into OUT/reports/demo.

    Example: seedr demo --out runs/demo-scifact --data ../shared/data/scifact --set pretrain_steps=300
    """
    demo(out, data=data, settings=set_ or [], console=console)
