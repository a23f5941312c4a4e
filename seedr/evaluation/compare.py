"""A results table of several systems on the same queries × metrics, with significance marks vs a baseline.

Marks follow the papers' tables: ``†`` = significantly higher than the baseline, ``‡`` =
significantly lower (p < alpha, two-sided paired test of ``seedr.evaluation.significance``).
Output as Markdown (for a report) and as a JSON-ready dict (for tools).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.table import Table
from tqdm.auto import tqdm

from seedr.evaluation.significance import Comparison, compare_runs

BETTER, WORSE = "†", "‡"


@dataclass(frozen=True)
class ComparisonTable:
    """``comparisons[metric]`` holds every system vs ``baseline`` on that metric."""

    systems: list[str]
    metrics: list[str]
    baseline: str
    test: str
    alpha: float
    comparisons: dict[str, Comparison]

    def mark(self, system: str, metric: str) -> str:
        result = self.comparisons[metric].systems[system]
        if not result.significant:
            return ""
        return BETTER if result.delta > 0 else WORSE

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: per system and metric the mean, the difference to the baseline and the p-value."""
        return {
            "baseline": self.baseline, "test": self.test, "alpha": self.alpha,
            "queries": {metric: comparison.queries for metric, comparison in self.comparisons.items()},
            "systems": {system: {metric: {"mean": self.comparisons[metric].systems[system].mean,
                                          "delta": self.comparisons[metric].systems[system].delta,
                                          "p_value": self.comparisons[metric].systems[system].p_value,
                                          "significant": self.comparisons[metric].systems[system].significant}
                                 for metric in self.metrics}
                        for system in self.systems},
        }

    def _test_note(self) -> str:
        test = "paired randomisation test" if self.test == "permutation" else "paired t-test"
        return (f"{BETTER}/{WORSE}: significantly higher/lower than {self.baseline} "
                f"({test}, two-sided, p < {self.alpha}).")

    def cell(self, system: str, metric: str, digits: int = 4) -> str:
        """A system's mean on a metric with its significance mark, e.g. ``0.6762†``."""
        return f"{self.comparisons[metric].systems[system].mean:.{digits}f}{self.mark(system, metric)}"

    def label(self, system: str) -> str:
        return f"{system} (baseline)" if system == self.baseline and len(self.systems) > 1 else system

    def effect(self, system: str, metric: str, digits: int = 4) -> str:
        """A system's difference to the baseline and its p-value, e.g. ``+0.0371 p=0.0002``."""
        result = self.comparisons[metric].systems[system]
        return "" if result.p_value is None else f"{result.delta:+.{digits}f} p={result.p_value:.2g}"

    def to_rich(self, digits: int = 4, title: str | None = None, systems: Sequence[str] | None = None) -> Table:
        """The table for the terminal (``rich``): metrics as rows, systems as columns, so that many
        metrics fit a narrow terminal — or, past six systems, systems as rows, so that many systems do;
        ``systems``: a subset to show. Each system's cell also shows its difference to the baseline and
        the p-value (not only the marks); the footnote only when there is something to compare."""
        systems = list(systems or self.systems)
        caption = None
        if len(self.systems) > 1:
            caption = f"{self._test_note()} Below each value: its difference to {self.baseline} and the p-value."
        table = Table(title=title, caption=caption)

        def shown(system: str, metric: str) -> str:
            effect = f"\n{self.effect(system, metric, digits)}" if system != self.baseline else ""
            return self.cell(system, metric, digits) + effect

        if len(systems) > 6:
            table.add_column("system")
            for metric in self.metrics:
                table.add_column(metric, justify="right")
            for system in systems:
                table.add_row(self.label(system), *(shown(system, metric) for metric in self.metrics))
            return table
        table.add_column("metric")
        for system in systems:
            table.add_column(self.label(system), justify="right")
        for metric in self.metrics:
            table.add_row(metric, *(shown(system, metric) for system in systems))
        return table

    def to_markdown(self, digits: int = 4) -> str:
        """A Markdown table (systems as rows), with a footnote naming the test and the marks."""
        lines = ["| system | " + " | ".join(self.metrics) + " |", "|---|" + "---:|" * len(self.metrics)]
        for system in self.systems:
            cells = [self.label(system), *(self.cell(system, metric, digits) for metric in self.metrics)]
            lines.append("| " + " | ".join(cells) + " |")
        if len(self.systems) > 1:
            lines += ["", self._test_note()]
        return "\n".join(lines) + "\n"


def comparison_table(per_query_by_system: dict[str, dict[str, dict[str, float]]], baseline: str,
                     metrics: Sequence[str] | None = None, test: str = "permutation", alpha: float = 0.05,
                     n_resamples: int = 10_000, seed: int = 0, show_progress: bool = False) -> ComparisonTable:
    """Compare systems given ``{system: {metric: {qid: value}}}`` (e.g. from ``metrics.per_query``).

    ``metrics`` defaults to those of the baseline, in its order; every system must have them all.
    ``show_progress``: a bar over the metrics' tests (when there are systems to compare).
    """
    if baseline not in per_query_by_system:
        raise KeyError(f"baseline {baseline!r} is not among the systems: {', '.join(per_query_by_system)}")
    metrics = list(metrics or per_query_by_system[baseline])
    for system, by_metric in per_query_by_system.items():
        missing = [metric for metric in metrics if metric not in by_metric]
        if missing:
            raise KeyError(f"system {system!r} has no per-query values for {', '.join(missing)}")
    comparisons = {}
    testing = show_progress and len(per_query_by_system) > 1
    for metric in tqdm(metrics, desc="significance", unit="metric", disable=not testing):
        scores = {system: by_metric[metric] for system, by_metric in per_query_by_system.items()}
        comparisons[metric] = compare_runs(scores, baseline, test, alpha, n_resamples, seed)
    return ComparisonTable(list(per_query_by_system), metrics, baseline, test, alpha, comparisons)
