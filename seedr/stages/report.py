"""`seedr report`: a Markdown report with tables and plots, and the same as one self-contained HTML page,
generated from run folders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seedr.io import check_output
from seedr.reporting.html import is_report_folder, render_report_html
from seedr.reporting.report import render_report
from seedr.stages.common import clear_errors, console, locks_output


@clear_errors
@locks_output("out")
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

    read = [path for path in runs if path.exists()]
    html_only = len(runs) == 1 and is_report_folder(runs[0])
    if not html_only:
        check_output(out / "report.md", "report", overwrite=overwrite, inputs=read)
    check_output(out / "report.html", "report page", overwrite=overwrite, inputs=read)
    if html_only:
        page = render_report_html(runs[0], out)
        console.print(f"HTML page of {runs[0]} written to [bold]{page}[/]")
        return

    target = render_report(runs, out, title=title)
    console.print(f"report written to [bold]{target}[/] and {target.with_suffix('.html').name}")
