"""The diagnostics figure: one panel per diagnostic of ``seedr diagnose``'s result (SEED-Encoder
Fig. 1(b), CPDAE's decoded word mass, SEED-Encoder Fig. 4's reliance on [CLS], Wang & Isola's
alignment/uniformity); and Fig. 4 across models, for an experiment's report."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from seedr.reporting.figures import save_plot


def _reliance_panel(axis: Any, curves: dict[str, dict[str, Any]]) -> None:
    """SEED-Encoder Fig. 4 on ``axis``: each ``details["cls_reliance"]`` of ``curves`` (by label)."""
    for label, curve in curves.items():
        axis.plot(range(len(curve["cosine"])), curve["cosine"], label=label)
    axis.set_ylim(-1.05, 1.05)
    axis.set_xlabel("decoder position (0: reads [CLS], the closest to it)")
    axis.set_ylabel("cosine(bottleneck, decoder state)")
    axis.set_title("SEED-Encoder Fig. 4")
    axis.legend(fontsize="small")


def _reliance_label(curve: dict[str, Any]) -> str:
    """``"3 layers, span 2"`` (``span all``: full attention), as Fig. 4's panels name decoders."""
    return f"{curve['decoder_layers']} layers, span {curve['attention_span']}"


def plot_reliance(curves: dict[str, dict[str, Any]], path: str | os.PathLike) -> Path:
    """SEED-Encoder Fig. 4 across models: the reliance curve of each model (name → its
    ``details["cls_reliance"]``) in one PNG, so full and restricted attention are compared on one axis."""
    figure = Figure(figsize=(6, 3.8))
    axis = figure.subplots()
    _reliance_panel(axis, {f"{name} ({_reliance_label(curve)})": curve for name, curve in curves.items()})
    axis.grid(alpha=0.3)
    figure.tight_layout()
    return save_plot(figure, path)


def _masked_lm_panel(axis: Any, curve: list[dict[str, Any]]) -> None:
    """Held-out masked-LM loss by checkpoint against the unigram plateau of the same targets, with the
    masked-token accuracy on a second axis (``details["masked_lm"]["curve"]``)."""
    steps = [point["step"] for point in curve]
    axis.plot(steps, [point["mlm_loss"] for point in curve], marker="o", color="tab:blue", label="MLM loss")
    axis.axhline(curve[-1]["unigram_loss"], color="0.5", linestyle="--", label="unigram plateau")
    axis.set_xlabel("pre-training step")
    axis.set_ylabel("held-out masked-LM loss (nats)")
    accuracy = axis.twinx()
    accuracy.plot(steps, [point["masked_accuracy"] for point in curve], marker="s", color="tab:orange",
                  label="masked-token accuracy")
    accuracy.set_ylabel("masked-token accuracy")
    accuracy.set_ylim(0, max(0.5, max(point["masked_accuracy"] for point in curve) + 0.05))
    lines = axis.get_legend_handles_labels()[0] + accuracy.get_legend_handles_labels()[0]
    axis.legend(lines, [line.get_label() for line in lines], fontsize="small", loc="center right")
    axis.set_title("held-out masked LM")


def plot_diagnostics(result: dict[str, Any], path: str | os.PathLike) -> Path:
    """One PNG with a panel per diagnostic in ``result`` (from ``diagnose``), written atomically."""
    metrics = result["metrics"]
    panels = [name for name, present in (("similarity", "random_pair_similarity" in result["details"]),
                                         ("words", "decoded_common_mass" in metrics),
                                         ("reliance", "cls_reliance" in result["details"]),
                                         ("masked_lm", "masked_lm" in result["details"]),
                                         ("statistics", "alignment" in metrics)) if present]
    figure = Figure(figsize=(4.5 * len(panels), 3.6))
    axes = figure.subplots(1, len(panels), squeeze=False)
    for axis, panel in zip(axes[0], panels):
        if panel == "similarity":
            by_length = result["details"]["random_pair_similarity"]["by_length"]
            lengths = [int(length) for length in by_length]
            means, stds = zip(*by_length.values())
            axis.errorbar(lengths, means, yerr=stds, marker="o", capsize=3)
            axis.set_xscale("log", base=2)
            axis.set_xticks(lengths, [str(length) for length in lengths])
            axis.set_ylim(min(0.0, min(means) - max(stds)) - 0.05, 1.05)
            axis.set_xlabel("sequence length (tokens)")
            axis.set_ylabel("cosine of random pairs (mean ± std)")
            axis.set_title("SEED-Encoder Fig. 1(b)")
        elif panel == "words":
            names = ["common", "own rare"]
            positions = np.arange(len(names))
            target = metrics["target_common_mass"]
            axis.bar(positions - 0.2, [target, 1 - target], width=0.4, color="0.65",
                     label="bag-of-words target")
            axis.bar(positions + 0.2, [metrics["decoded_common_mass"], metrics["decoded_own_rare_mass"]],
                     width=0.4, color="tab:blue", label="decoded z̃")
            axis.set_xticks(positions, [f"{name} words" for name in names])
            axis.set_ylim(0, 1)
            axis.set_ylabel("probability mass")
            axis.legend(fontsize="small")
            axis.set_title("CPDAE decoded word distribution")
        elif panel == "reliance":
            curve = result["details"]["cls_reliance"]
            _reliance_panel(axis, {_reliance_label(curve): curve})
        elif panel == "masked_lm":
            _masked_lm_panel(axis, result["details"]["masked_lm"]["curve"])
        else:
            point = (-metrics["uniformity"], metrics["alignment"])
            axis.scatter(*point, color="tab:green", clip_on=False)
            axis.annotate(f"anisotropy {metrics['anisotropy']:.3f}", point, textcoords="offset points",
                          xytext=(6, 6), fontsize="small")
            # Wang & Isola's axes: with t = 2, −uniformity is ≈ 4 for orthogonal embeddings and 0 for
            # collapsed ones; alignment runs from 0 (identical) to 4 (opposite)
            axis.set_xlim(0, max(4.2, -metrics["uniformity"] + 0.2))
            axis.set_ylim(0, max(2.2, metrics["alignment"] + 0.2))
            axis.set_xlabel("−uniformity (higher: more uniform)")
            axis.set_ylabel("alignment (lower: better aligned)")
            axis.set_title("Wang & Isola (2020)")
        axis.grid(alpha=0.3)
    figure.suptitle(Path(result["details"]["model"]).name or result["details"]["model"], fontsize="small")
    figure.tight_layout()
    return save_plot(figure, path)


__all__ = ["plot_diagnostics", "plot_reliance"]
