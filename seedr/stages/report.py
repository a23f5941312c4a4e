"""`seedr report`: a Markdown report with tables and plots, and the same as one self-contained HTML page,
generated from run folders."""

from __future__ import annotations

from seedr.pipeline import report as reporting
from seedr.pipeline.report import ReportConfig
from seedr.stages.common import console
from seedr.stages.options import options_of


@options_of(ReportConfig)
def command(config: ReportConfig) -> None:
    """Render tables (evaluation JSONs) and training curves (metrics.jsonl) of run folders into Markdown
    (report.md + plots/) and one self-contained HTML page (report.html, plots embedded). Given a written
    report folder instead (a recorded experiment, docs/results/NAME: Markdown, plots and JSON), only its
    HTML page is made, into --out.

    Example: seedr report runs/pretrain-seed runs/finetune-seed --out runs/report
    """
    markdown, html = reporting.run(config)
    if markdown is None:
        console.print(f"HTML page of {config.runs[0]} written to [bold]{html}[/]")
        return
    console.print(f"report written to [bold]{markdown}[/] and {html.name}")
