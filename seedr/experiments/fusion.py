"""A condition of an experiment that fuses other conditions' runs on every task (hybrid retrieval), e.g.
``retrieve: {fuse: [bm25, script], method: [minmax, rrf], select_on: scifact-dev}``: its options are
``seedr fuse``'s (``seedr.pipeline.fuse.FuseConfig``), checked, chosen and applied by the pipeline as the
command does; only which conditions it fuses, and on which task's runs it chooses, are the experiment's
own."""

from __future__ import annotations

import dataclasses
from typing import Any

from seedr.data.records import Run
from seedr.pipeline import fuse as fusing
from seedr.pipeline.fuse import FuseConfig, Spelling
from seedr.pipeline.options import check_options, derived

#: The code a fused run's key rests on (``seedr.experiments.runner.retrieval_code``).
FUSION_CODE = ["seedr.experiments.fusion", "seedr.pipeline.fuse", "seedr.retrieval.fusion"]
#: How an experiment's file names what a fusion's checks refuse.
_SPELLING = Spelling(runs="conditions", weight="weights", method="method", rrf_k="rrf_k",
                     development="select_on")


def fuses(retrieve: Any) -> bool:
    """Whether a condition's ``retrieve`` fuses other conditions' runs (a mapping with ``fuse``)."""
    return isinstance(retrieve, dict) and "fuse" in retrieve


@dataclasses.dataclass
class FusionCondition:
    """A condition that fuses other conditions' runs on every task (``seedr fuse``).

    ``fuse``: the conditions (two or more, retrieving, not fused themselves). ``method``, ``weights`` (fixed,
    one per condition: ``seedr fuse --weight``), ``rrf_k``, ``metric``, ``grid_step``, ``k``: ``seedr
    fuse``'s. ``select_on``: a task of the experiment whose runs choose the weights (on the simplex in steps
    of ``grid_step``; and the method and k among those listed) by ``metric`` (default: the task's first);
    this condition's figures on that task are then not held out. Without it: the first method and k,
    ``weights`` or equal ones. ``select_with``: the conditions whose runs on ``select_on`` choose, one for
    each of ``fuse`` in its order (default: ``fuse`` itself), e.g. models fine-tuned without the development
    queries, so that the fusion of final models trained on all of them is chosen on queries none of its
    choosers saw.
    """

    fuse: list[str] = dataclasses.field(default_factory=list)
    method: list[str] | str | None = derived(FuseConfig, "method")
    weights: list[float] | None = derived(FuseConfig, "weight")
    rrf_k: list[int] | int | None = derived(FuseConfig, "rrf_k")
    select_on: str | None = None
    metric: str | None = derived(FuseConfig, "metric")
    grid_step: float = derived(FuseConfig, "grid_step")
    k: int | None = derived(FuseConfig, "k")
    select_with: list[str] | None = None

    def __post_init__(self) -> None:
        check_options(self)
        self.method, self.rrf_k = fusing.methods_of(self.method), fusing.ks_of(self.rrf_k)
        try:
            fusing.check_fusion(len(self.fuse), self.method, self.weights, self.rrf_k, self.grid_step,
                                self.select_on is not None, _SPELLING)
        except ValueError as error:  # said of the condition's fuse: (``from_dict`` names where)
            raise ValueError(f"fuse: {error}") from None
        if self.select_with is not None and (self.select_on is None
                                             or len(self.select_with) != len(self.fuse)):
            raise ValueError(f"select_with: one condition per fused condition ({len(self.fuse)}), and "
                             f"select_on, the task their runs choose on; got {self.select_with}")

    @property
    def choosers(self) -> list[str]:
        """The conditions whose runs on ``select_on`` choose the fusion, in the order of ``fuse``."""
        return self.select_with or self.fuse

    def identity(self) -> dict[str, Any]:
        """What the fused run depends on (``seedr.config.loading.identity``); ``select_with`` only where
        given, so that fusions which choose with their own runs keep the folders they had before it
        existed."""
        fields = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        if self.select_with is None:
            del fields["select_with"]
        return fields

    def choose(self, dev_runs: list[Run] | None = None, task: Any = None) -> tuple[Any, Any]:
        """The ``Fusion`` to apply and, with ``select_on``, the ``Selection`` made on ``task``'s runs
        ``dev_runs`` of the ``choosers`` (in the order of ``fuse``), scored as the experiment scores
        ``task``."""
        if self.select_on is None:
            return fusing.choose(len(self.fuse), self.method, self.weights, self.rrf_k, self.grid_step,
                                 self.k)
        assert dev_runs is not None and task is not None
        objective = fusing.task_objective(task, self.metric or task.metrics[0])
        return fusing.choose(len(self.fuse), self.method, self.weights, self.rrf_k, self.grid_step,
                             fusing.depth_of(dev_runs, self.k), dev_runs, objective)

    def apply(self, runs: list[Run], fusion: Any) -> Run:
        """The components' ``runs`` on one task fused by ``fusion`` (``choose``)."""
        return fusing.apply(runs, fusion, fusing.depth_of(runs, self.k))


__all__ = ["FUSION_CODE", "FusionCondition", "fuses"]
