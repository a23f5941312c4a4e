"""``report`` from Python: run folders rendered as a Markdown report and one HTML page (``seedr report``)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

from seedr.pipeline.common import input_paths, locked
from seedr.io import check_output
from seedr.reporting.html import is_report_folder, render_report_html


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


def report(runs: Sequence[str | os.PathLike] | str | os.PathLike, out: str | os.PathLike = "report", *,
           title: str = "seedr report", overwrite: bool = False) -> Report:
    """Render run folders into a report (``seedr report``): tables of their evaluations (evaluation JSONs)
    and their training curves (``metrics.jsonl``) as Markdown (``out/report.md`` with ``out/plots/``) and one
    self-contained HTML page (``out/report.html``, plots embedded). Given one written report folder instead
    (an experiment's, or a recorded one in ``docs/results/NAME``: Markdown, plots and JSON), only its HTML
    page is made, into ``out``.

    Args:
        runs: run folders (pre-training, fine-tuning, evaluation outputs; ``TrainingRun``s), or one written
            report folder.
        out: the report's folder.
        title: the report's title.
        overwrite: replace the ``report.md`` and ``report.html`` seedr wrote in ``out`` before (nothing else).

    Example:
        >>> written = seedr.report(["runs/seed", "runs/ft"], "runs/report", title="SEED vs MLM")
        >>> written.html
        PosixPath('runs/report/report.html')
    """
    from seedr.reporting.report import render_report  # matplotlib

    runs = [Path(os.fspath(runs))] if isinstance(runs, str | os.PathLike) else [Path(os.fspath(run)) for run in runs]
    out = Path(out)
    with locked(out):
        read = input_paths(runs)
        html_only = len(runs) == 1 and is_report_folder(runs[0])
        if not html_only:
            check_output(out / "report.md", "report", overwrite=overwrite, inputs=read)
        check_output(out / "report.html", "report page", overwrite=overwrite, inputs=read)
        if html_only:
            return Report(out, None, render_report_html(runs[0], out))
        target = render_report(runs, out, title=title)
        return Report(out, target, target.with_suffix(".html"))


__all__ = ["Report", "report"]
