"""The training loss beside the development evaluation, one figure per run: ``validation.png``.

``seedr adapt`` writes it into its run folder: the label-free validation (held-out pseudo-queries scored
as retrieval, ``dev/<metric>`` in ``metrics.jsonl``) under the loss, on the same steps, with the step of
the best evaluation marked — the model a run that keeps its best ships. Any run with a development
evaluation can be drawn so. Labelled queries watched beside it (``watch/<metric>``, ``FinetuneConfig.watch``)
are drawn dashed on the same axis, and ``track_validation`` says how well the validation followed them:
the answer to "when do I stop?" where labels exist to check it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from matplotlib.figure import Figure
from scipy.stats import spearmanr

from seedr.data.training_log import read_metrics
from seedr.io import DataError, atomic_write
from seedr.reporting.figures import save_plot

#: The figure's file in a run folder.
VALIDATION_PLOT = "validation.png"


def plot_validation(run_dir: str | os.PathLike, out: str | os.PathLike | None = None) -> Path:
    """Draw ``run_dir``'s loss (top) and its ``dev/*`` metrics (bottom) against the step, the best
    evaluation (``best/best.json``, else the step ``best_step`` last logged) marked; returns the PNG
    (default ``run_dir/validation.png``).

    Raises:
        DataError: the run logged no development evaluation.
    """
    run_dir = Path(run_dir)
    lines = read_metrics(run_dir)
    metrics = sorted({key for line in lines for key in line if key.startswith(("dev/", "watch/"))})
    if not any(metric.startswith("dev/") for metric in metrics):
        raise DataError(run_dir, "no development evaluation (dev/...) in metrics.jsonl to plot")
    best_step = _best_step(run_dir, lines)
    figure = Figure(figsize=(6, 5))
    loss_axis, dev_axis = figure.subplots(2, 1, sharex=True)
    losses = [(line["step"], line["loss"]) for line in lines if isinstance(line.get("loss"), int | float)]
    if losses:
        loss_axis.plot(*zip(*losses), color="tab:gray")
    loss_axis.set_ylabel("training loss")
    for metric in metrics:
        points = [(line["step"], line[metric]) for line in lines if isinstance(line.get(metric), int | float)]
        watched = metric.startswith("watch/")
        dev_axis.plot(*zip(*points), marker=".", linestyle="--" if watched else "-",
                      label=f"{metric.removeprefix('watch/')} (labelled)" if watched else metric.removeprefix("dev/"))
    dev_axis.set_ylabel("validation")
    dev_axis.set_xlabel("step")
    if best_step is not None:
        for axis in (loss_axis, dev_axis):
            axis.axvline(best_step, color="tab:green", linestyle="--", linewidth=1)
        dev_axis.annotate(f"best: step {best_step}", (best_step, 0.02), xycoords=("data", "axes fraction"),
                          fontsize="small", color="tab:green", xytext=(3, 0), textcoords="offset points")
    for axis in (loss_axis, dev_axis):
        axis.grid(alpha=0.3)
    dev_axis.legend(fontsize="small")
    figure.tight_layout()
    return save_plot(figure, Path(out) if out is not None else run_dir / VALIDATION_PLOT)


#: The file of a run's tracking (``track_validation``): the run's own diagnostics, which ``seedr report``
#: and an experiment's results read from any run or step folder.
TRACKING_FILE = "diagnostics.json"


def check_tracking_file(run_dir: str | os.PathLike) -> None:
    """Refuse to write a run's tracking over a ``diagnostics.json`` that is not one: ``seedr diagnose --out``
    the same folder writes the papers' diagnostics under that name, which a tracking would replace."""
    path = Path(run_dir) / TRACKING_FILE
    if not path.is_file():
        return
    try:
        details = json.loads(path.read_text(encoding="utf-8")).get("details", {})
    except (ValueError, AttributeError):
        details = None
    if not isinstance(details, dict) or "watched" not in details:
        raise DataError(path, "exists and is not a tracking of watched labels (seedr diagnose's output?): a "
                              "run with settings' watch would replace it; move it, or diagnose into another "
                              "folder")


def track_validation(run_dir: str | os.PathLike) -> dict[str, float] | None:
    """How well ``run_dir``'s development evaluation (the first ``dev/`` metric, what early stopping reads)
    followed the labelled queries it watched (the first ``watch/`` metric) over the evaluations both scored,
    or None when nothing was watched. Written to ``run_dir/diagnostics.json`` as ``{"metrics": ..., "details":
    {"validation", "watched", "evaluations": [[step, validation, watched], ...]}}``.

    The metrics: ``tracking/spearman``, the rank correlation of the two curves; ``tracking/start``,
    ``tracking/kept``, ``tracking/best`` and ``tracking/last``, the watched metric before training, at the
    step the validation chose (its best, the earliest of ties: the model kept), at its own best step and at
    the last evaluation; ``tracking/regret`` (best − kept: what stopping on the validation left) and
    ``tracking/gain_over_last`` (kept − last: what it saved over training to the end).
    """
    run_dir = Path(run_dir)
    lines = read_metrics(run_dir)
    first = next((line for line in lines if any(key.startswith("watch/") for key in line)), None)
    if first is None:
        return None
    watched = next(key for key in first if key.startswith("watch/"))
    validation = "dev/" + watched.removeprefix("watch/")
    if validation not in first:
        validation = next(key for key in first if key.startswith("dev/"))
    evaluations = [(int(line["step"]), float(line[validation]), float(line[watched])) for line in lines
                   if isinstance(line.get(validation), int | float) and isinstance(line.get(watched), int | float)]
    steps, scores, truths = zip(*evaluations)
    kept = scores.index(max(scores))
    correlation = float(spearmanr(scores, truths).statistic) if len(set(scores)) > 1 and len(set(truths)) > 1 \
        else float("nan")
    metrics = {"tracking/spearman": correlation, "tracking/start": truths[0], "tracking/kept": truths[kept],
               "tracking/best": max(truths), "tracking/last": truths[-1],
               "tracking/regret": max(truths) - truths[kept], "tracking/gain_over_last": truths[kept] - truths[-1]}
    details = {"validation": validation, "watched": watched, "kept_step": steps[kept],
               "evaluations": [list(evaluation) for evaluation in evaluations]}
    check_tracking_file(run_dir)
    with atomic_write(run_dir / TRACKING_FILE) as stream:
        json.dump({"metrics": metrics, "details": details}, stream, indent=2)
    return metrics


def _best_step(run_dir: Path, lines: list[dict]) -> int | None:
    record = run_dir / "best" / "best.json"  # seedr.training.early_stopping.BEST / BEST_RECORD
    if record.is_file():
        return json.loads(record.read_text(encoding="utf-8")).get("step")
    logged = [line["best_step"] for line in lines if isinstance(line.get("best_step"), int | float)]
    return int(logged[-1]) if logged else None


__all__ = ["TRACKING_FILE", "VALIDATION_PLOT", "check_tracking_file", "plot_validation", "track_validation"]
