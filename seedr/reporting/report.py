"""Render a report (Markdown + PNG plots + one self-contained HTML page) from run folders.

A run folder is whatever a seedr stage wrote: ``config.yaml`` and ``run.json`` (``record_run``),
``metrics.jsonl`` (one JSON object per logged training step: ``step``, ``loss``, the objective's
named parts, ``lr``, dev metrics), and evaluation results (``*.json`` files holding a flat
``{metric: value}`` mapping, or ``{"metrics": {...}}``). The report reads only those files, so a
result can be re-rendered at any time from the folders alone.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from seedr.config.loading import read_recipe
from seedr.data.training_log import read_metrics
from seedr.io import REPORT_MARKER, DataError, atomic_write
from seedr.reporting.figures import save_plot
from seedr.reporting.html import write_html

#: Logged quantities that are bookkeeping, not curves worth plotting.
_NOT_CURVES = {"step", "epoch", "seconds"}

#: Files in a run folder that are not evaluation results.
_NOT_RESULTS = {"run.json", "index.json", "manifest.json", "provenance.json", "trainer_state.json"}


@dataclass
class RunSummary:
    """What a report needs to know about one run folder."""

    name: str
    path: Path
    config: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    results: dict[str, dict[str, float]] = field(default_factory=dict)


def _flat_metrics(data: Any) -> dict[str, float] | None:
    """``{metric: number}`` from an evaluation JSON, or None if the file is something else."""
    if isinstance(data, dict) and isinstance(data.get("metrics"), dict):
        data = data["metrics"]
    if not isinstance(data, dict) or not data:
        return None
    numbers = {k: float(v) for k, v in data.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    return numbers if len(numbers) == len(data) else None


def load_run(path: str | Path, name: str | None = None) -> RunSummary:
    """Read a run folder (see module docstring); missing pieces are simply absent."""
    path = Path(path)
    if not path.is_dir():
        raise DataError(path, "not a run folder (no such directory)")
    summary = RunSummary(name=name or path.name, path=path)
    if (path / "config.yaml").exists():
        summary.config = read_recipe(path / "config.yaml")  # bounded YAML: a crafted file cannot expand
    if (path / "run.json").exists():
        summary.info = json.loads((path / "run.json").read_text(encoding="utf-8"))
    summary.history = read_metrics(path)  # [] without one; a killed run's torn last line left out
    for result in sorted(path.glob("*.json")):
        if result.name in _NOT_RESULTS:
            continue
        metrics = _flat_metrics(json.loads(result.read_text(encoding="utf-8")))
        if metrics:
            summary.results[result.stem] = metrics
    return summary


def _format(value: float) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4f}"


def results_table(runs: list[RunSummary]) -> str:
    """One Markdown table per evaluation (file stem), runs as rows and metrics as columns."""
    evaluations = sorted({stem for run in runs for stem in run.results})
    blocks = []
    for evaluation in evaluations:
        rows = [(run.name, run.results[evaluation]) for run in runs if evaluation in run.results]
        metrics = sorted({metric for _, values in rows for metric in values})
        lines = [f"### {evaluation}", "", "| run | " + " | ".join(metrics) + " |",
                 "|---|" + "---:|" * len(metrics)]
        for name, values in rows:
            lines.append(f"| {name} | " + " | ".join(_format(values.get(m)) for m in metrics) + " |")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


#: Logged keys with this prefix are the parts' gradient norms on the encoder
#: (``seedr.engine.part_gradients``): drawn together in one plot, on a log scale.
_PART_GRADIENTS = "grad_norm/"


def plot_history(runs: list[RunSummary], out_dir: Path) -> list[Path]:
    """One PNG per logged quantity (loss, each named part, lr, dev metrics) over steps, all runs overlaid;
    the parts' gradient norms (``grad_norm/<part>``) share one PNG, ``grad_norm_parts.png``, log scale."""
    keys = sorted({key for run in runs for record in run.history for key, value in record.items()
                   if key not in _NOT_CURVES and isinstance(value, int | float) and not isinstance(value, bool)})
    figures: dict[str, list[str]] = {}  # file stem → keys drawn in it
    for key in keys:
        stem = "grad_norm_parts" if key.startswith(_PART_GRADIENTS) else key.replace("/", "_")
        figures.setdefault(stem, []).append(key)
    written = []
    many = sum(bool(run.history) for run in runs) > 10  # then the legend goes below, in columns
    for stem, figure_keys in figures.items():
        figure = Figure(figsize=(6, 5.5 if many else 3.5))
        axis = figure.subplots()
        for run in runs:
            for key in figure_keys:
                points = [(r["step"], r[key]) for r in run.history
                          if "step" in r and isinstance(r.get(key), int | float)]
                if points:
                    steps, values = zip(*points)
                    label = run.name if len(figure_keys) == 1 else f"{run.name}: {key.removeprefix(_PART_GRADIENTS)}"
                    axis.plot(steps, values, label=label, marker="." if len(points) < 30 else None)
        axis.set_xlabel("step")
        if len(figure_keys) == 1:
            axis.set_ylabel(figure_keys[0])
        else:
            axis.set_ylabel("gradient norm of each loss part on the encoder")
            axis.set_yscale("log")  # parts differ by orders of magnitude (CPDAE: REC vs λ·CL)
        axis.grid(alpha=0.3)
        if many:
            axis.legend(fontsize="xx-small", ncols=3, loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
        else:
            axis.legend(fontsize="small")
        figure.tight_layout()
        written.append(save_plot(figure, out_dir / f"{stem}.png"))
    return written


def plot_comparison(table: Any, path: str | Path, title: str = "", systems: list[str] | None = None) -> Path:
    """A grouped bar chart of a ``ComparisonTable``: one group per metric, one bar per system (all, or
    ``systems``), the baseline hatched and significance marks (``†``/``‡``) above the bars; written to
    ``path``."""
    systems, metrics = systems or table.systems, table.metrics
    width = 0.8 / len(systems)
    figure = Figure(figsize=(max(5.0, 1.2 + 0.3 * len(systems) * len(metrics)), 4.2))
    axis = figure.subplots()
    for index, system in enumerate(systems):
        positions = np.arange(len(metrics)) + (index - (len(systems) - 1) / 2) * width
        means = [table.comparisons[metric].systems[system].mean for metric in metrics]
        bars = axis.bar(positions, means, width, label=table.label(system),
                        hatch="//" if system == table.baseline else None)
        for bar, metric in zip(bars, metrics):
            mark = table.mark(system, metric)
            if mark:
                axis.annotate(mark, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                              va="bottom", fontsize="small")
    axis.set_xticks(np.arange(len(metrics)), metrics)
    axis.set_ylim(0, 1.05)
    axis.set_title(title, fontsize="medium")
    axis.grid(axis="y", alpha=0.3)
    axis.legend(fontsize="x-small", ncols=min(4, len(systems)), loc="upper center", bbox_to_anchor=(0.5, -0.08),
                frameon=False)
    figure.tight_layout()
    return save_plot(figure, path)


def render_report(run_dirs: list[str | Path], out_dir: str | Path, title: str = "seedr report",
                  preamble: str = "", results_markdown: str = "", figures: list[Path] | None = None,
                  names: list[str] | None = None) -> Path:
    """Write ``out_dir/report.md`` (+ ``plots/*.png``) and the same report as one self-contained
    ``out_dir/report.html`` (``seedr.reporting.html``) from run folders; returns the Markdown path.

    ``preamble`` (what was run) and ``results_markdown`` (e.g. a significance-marked comparison from
    ``seedr.evaluation.compare``) are placed before the per-run tables when given; ``figures`` (PNG
    files inside ``out_dir``) after them. ``names`` name the runs (default: their folder names).
    """

    out_dir = Path(out_dir)
    runs = [load_run(path, name) for path, name in zip(run_dirs, names or [None] * len(run_dirs))]
    names = [run.name for run in runs]
    for index, run in enumerate(runs):  # disambiguate folders of the same name
        if names.count(run.name) > 1:
            run.name = f"{run.path.parent.name}/{run.name}#{index}"
    plots_dir = out_dir / "plots"
    plots_dir.mkdir(parents=True, exist_ok=True)
    plots = plot_history(runs, plots_dir)
    sections = [f"# {title}", "", REPORT_MARKER, ""]
    if preamble:
        sections += [preamble.strip(), ""]
    if results_markdown:
        sections += ["## Comparison", "", results_markdown.strip(), ""]
    if figures:
        sections += [f"![{figure.stem}]({figure.relative_to(out_dir).as_posix()})" for figure in figures] + [""]
    sections += ["## Runs", "", "| run | folder | seed | started | seedr |", "|---|---|---|---|---|"]
    for run in runs:
        versions = run.info.get("versions", {})
        sections.append(f"| {run.name} | `{run.path}` | {run.info.get('seed', '–')} | "
                        f"{run.info.get('started', '–')} | {versions.get('seedr', '–')} |")
    table = results_table(runs)
    if table:
        sections += ["", "## Results", "", table]
    if plots:
        sections += ["", "## Training curves", ""]
        sections += [f"![{plot.stem}](plots/{plot.name})" for plot in plots]
    target = out_dir / "report.md"
    markdown = "\n".join(sections) + "\n"
    with atomic_write(target) as stream:
        stream.write(markdown)
    write_html(markdown, out_dir / "report.html", base=out_dir, title=title)
    return target
