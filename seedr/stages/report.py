"""`seedr report`: a Markdown report with tables and plots, and the same as one self-contained HTML page,
generated from run folders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seedr.api import report
from seedr.stages.common import clear_errors, console


@clear_errors
def command(
    runs: Annotated[list[Path], typer.Argument(
        help="Run folders (pretrain, finetune, evaluate outputs), or one written report folder (report.md: an "
             "experiment's, or a recorded one in docs/results/NAME), whose HTML page is made again.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for report.md, plots/ and report.html.")] = Path("report"),
    title: Annotated[str, typer.Option("--title", help="Report title.")] = "seedr report",
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Replace the report.md and report.html seedr wrote in OUT before (nothing else).")] = False,
) -> None:
    """Render tables (evaluation JSONs) and training curves (metrics.jsonl) of run folders into Markdown
    (report.md + plots/) and one self-contained HTML page (report.html, plots embedded). Given a written
    report folder instead (a recorded experiment, docs/results/NAME: Markdown, plots and JSON), only its
    HTML page is made, into --out.

    Example: seedr report runs/pretrain-seed runs/finetune-seed --out runs/report
    """

    written = report(runs, out, title=title, overwrite=overwrite)
    if written.markdown is None:
        console.print(f"HTML page of {runs[0]} written to [bold]{written.html}[/]")
        return
    console.print(f"report written to [bold]{written.markdown}[/] and {written.html.name}")
