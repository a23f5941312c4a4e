"""``report`` from Python: run folders rendered as a Markdown report and one HTML page (``seedr report``)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from seedr.api.keywords import keywords_of
from seedr.pipeline import report as reporting
from seedr.pipeline.report import ReportConfig


@dataclasses.dataclass(frozen=True)
class Report:
    """What ``report`` wrote.

    Attributes:
        folder: the report's folder.
        markdown: ``report.md`` (its plots in ``plots/``), or None when only a written report's page was made.
        html: ``report.html``, self-contained (plots embedded).
    """

    folder: Path
    markdown: Path | None
    html: Path

    def __fspath__(self) -> str:
        return os.fspath(self.html)


@keywords_of(ReportConfig)
def report(config: ReportConfig) -> Report:
    """Render run folders into a report (``seedr report``): tables of their evaluations (evaluation JSONs)
    and their training curves (``metrics.jsonl``) as Markdown (``out/report.md`` with ``out/plots/``) and one
    self-contained HTML page (``out/report.html``, plots embedded). Given one written report folder instead
    (an experiment's, or a recorded one in ``docs/results/NAME``: Markdown, plots and JSON), only its HTML
    page is made, into ``out``. Runs may be ``TrainingRun``s.

    Example:
        >>> written = seedr.report(["runs/seed", "runs/ft"], "runs/report", title="SEED vs MLM")
        >>> written.html
        PosixPath('runs/report/report.html')
    """
    markdown, html = reporting.run(config)
    return Report(config.out, markdown, html)


__all__ = ["Report", "report"]
