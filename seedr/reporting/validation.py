"""The training loss beside the development evaluation, one figure per run: ``validation.png``.

``seedr adapt`` writes it into its run folder: the label-free validation (held-out pseudo-queries scored
as retrieval, ``dev/<metric>`` in ``metrics.jsonl``) under the loss, on the same steps, with the step of
the best evaluation marked — the model a run that keeps its best ships. Any run with a development
evaluation can be drawn so.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from seedr.data.training_log import read_metrics
from seedr.io import DataError
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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    lines = read_metrics(run_dir)
    metrics = sorted({key for line in lines for key in line if key.startswith("dev/")})
    if not metrics:
        raise DataError(run_dir, "no development evaluation (dev/...) in metrics.jsonl to plot")
    best_step = _best_step(run_dir, lines)
    figure, (loss_axis, dev_axis) = plt.subplots(2, 1, figsize=(6, 5), sharex=True)
    losses = [(line["step"], line["loss"]) for line in lines if isinstance(line.get("loss"), int | float)]
    if losses:
        loss_axis.plot(*zip(*losses), color="tab:gray")
    loss_axis.set_ylabel("training loss")
    for metric in metrics:
        points = [(line["step"], line[metric]) for line in lines if isinstance(line.get(metric), int | float)]
        dev_axis.plot(*zip(*points), marker=".", label=metric.removeprefix("dev/"))
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


def _best_step(run_dir: Path, lines: list[dict]) -> int | None:
    record = run_dir / "best" / "best.json"  # seedr.training.early_stopping.BEST / BEST_RECORD
    if record.is_file():
        return json.loads(record.read_text(encoding="utf-8")).get("step")
    logged = [line["best_step"] for line in lines if isinstance(line.get("best_step"), int | float)]
    return int(logged[-1]) if logged else None


__all__ = ["VALIDATION_PLOT", "plot_validation"]
