"""Render run folders into a report: tables of their evaluations and their training curves as Markdown and
one self-contained HTML page; or, given one written report folder, only its HTML page. ``seedr report`` and
``seedr.report`` run this."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

from seedr.io import check_output
from seedr.pipeline.common import input_paths, locked
from seedr.pipeline.options import check_options, option
from seedr.reporting.html import is_report_folder, render_report_html


@dataclasses.dataclass(kw_only=True)
class ReportConfig:
    """What ``report`` runs with."""

    runs: Sequence[str | os.PathLike] | str | os.PathLike = option(
        help="Run folders (pretrain, finetune, evaluate outputs), or one written report folder (report.md: an "
             "experiment's, or a recorded one in docs/results/NAME), whose HTML page is made again.",
        cli_type=list[Path], positional=True, argument=True)
    out: str | os.PathLike = option("report", help="Folder for report.md, plots/ and report.html.", cli_type=Path,
                                    positional=True)
    title: str = option("seedr report", help="Report title.")
    overwrite: bool = option(False, help="Replace the report.md and report.html seedr wrote in OUT before "
                                         "(nothing else).")

    def __post_init__(self) -> None:
        check_options(self)
        given = self.runs
        self.runs = [Path(os.fspath(given))] if isinstance(given, str | os.PathLike) else \
            [Path(os.fspath(run)) for run in given]
        self.out = Path(self.out)


def run(config: ReportConfig) -> tuple[Path | None, Path]:
    """Write the report into ``config.out``; return its ``report.md`` (None when only a written report's page
    was made) and its ``report.html``."""
    with locked(config.out):
        read = input_paths(config.runs)
        html_only = len(config.runs) == 1 and is_report_folder(config.runs[0])
        if not html_only:
            check_output(config.out / "report.md", "report", overwrite=config.overwrite, inputs=read)
        check_output(config.out / "report.html", "report page", overwrite=config.overwrite, inputs=read)
        if html_only:
            return None, render_report_html(config.runs[0], config.out)
        from seedr.reporting.report import render_report  # matplotlib

        target = render_report(config.runs, config.out, title=config.title)
        return target, target.with_suffix(".html")


__all__ = ["ReportConfig", "run"]
