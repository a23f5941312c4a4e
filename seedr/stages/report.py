"""`seedr report`: a Markdown report with tables and plots, and the same as one self-contained HTML page,
generated from run folders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seedr.stages.common import clear_errors, console, locks_output


@clear_errors
@locks_output("out")
def command(
    runs: Annotated[list[Path], typer.Argument(help="Run folders (pretrain, finetune, evaluate outputs).")],
    out: Annotated[Path, typer.Option("--out", help="Folder for report.md, plots/ and report.html.")] = Path("report"),
    title: Annotated[str, typer.Option("--title", help="Report title.")] = "seedr report",
) -> None:
    """Render tables (evaluation JSONs) and training curves (metrics.jsonl) of run folders into Markdown
    (report.md + plots/) and one self-contained HTML page (report.html, plots embedded).

    Example: seedr report runs/pretrain-seed runs/finetune-seed --out runs/report
    """
    from seedr.reporting.report import render_report

    target = render_report(runs, out, title=title)
    console.print(f"report written to [bold]{target}[/] and {target.with_suffix('.html').name}")
