"""What a run logs: the running means of its loss, parts and metrics between log lines (over
micro-batches and processes), the settings as dotted keys for the trackers, and where local trackers
write."""

from __future__ import annotations

from typing import Any

import torch
from accelerate import Accelerator
from accelerate.tracking import get_available_trackers
from accelerate.utils import LoggerType, gather_object
from torch import Tensor

#: Where ``train.report_to``'s trackers write, in the run folder (those that write locally: TensorBoard, Aim ...).
TRACKERS = "trackers"


def check_trackers(names: list[str] | None) -> None:
    """Refuse a tracker that Accelerate does not know, or whose package is not installed — Accelerate
    itself would leave it out silently, and the run would log nowhere it was asked to. A run checks its
    ``train.report_to`` when it starts (``Trainer``); ``seedr.api.resolve_settings`` checks it before anything
    is written."""
    known = LoggerType.list()
    available = {str(tracker) for tracker in get_available_trackers()}
    for name in names or []:
        if name not in known:
            raise ValueError(f"train.report_to: unknown tracker {name!r}; Accelerate's trackers: {', '.join(known)}")
        if name != "all" and name not in available:
            raise ValueError(f"train.report_to: the {name} tracker needs its package, which is not installed "
                             f"(pip install {name}; tensorboard: pip install 'seedr[tensorboard]')")


def flat_settings(settings: Any, prefix: str = "") -> dict[str, Any]:
    """``{"train.learning_rate": 1e-4, ...}``: nested settings as dotted keys with JSON values."""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, dict) and value:
            flat.update(flat_settings(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


class RunningMeans:
    """The logged values since the last log line, averaged over micro-batches and processes.

    ``loss`` and the parts average over every micro-batch: a part missing from a batch (a two-tower
    task with no pair in it) contributed 0 to that batch's loss, so the logged parts still add up to
    the logged loss. ``metrics`` average over the batches that report them.
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.sums: dict[str, Tensor] = {}
        self.counts: dict[str, int] = {}
        self.metric_names: set[str] = set()
        self.batches = 0

    def add(self, output: Any) -> None:
        self.batches += 1
        self.metric_names.update(output.metrics)
        for name, value in {"loss": output.loss, **output.parts, **output.metrics}.items():
            value = torch.as_tensor(value).detach().float()
            self.sums[name] = self.sums[name] + value if name in self.sums else value
            self.counts[name] = self.counts.get(name, 0) + 1

    def reduce(self, accelerator: Accelerator) -> dict[str, float]:
        """Means over every process (a collective: call on all of them at the same step)."""
        names, metric_names = sorted(self.sums), set(self.metric_names)
        if accelerator.num_processes > 1:  # processes may have seen different parts
            seen = gather_object([(names, sorted(metric_names))])
            names = sorted({name for rank_names, _ in seen for name in rank_names})
            metric_names = {name for _, rank_metrics in seen for name in rank_metrics}
        totals = torch.tensor(
            [[float(self.sums[name]) if name in self.sums else 0.0,
              self.counts.get(name, 0) if name in metric_names else self.batches] for name in names],
            device=accelerator.device).reshape(-1, 2)  # (V, 2): sum, batches counted
        totals = accelerator.reduce(totals, reduction="sum")
        self.reset()
        return {name: total / count for name, (total, count) in zip(names, totals.tolist()) if count}
