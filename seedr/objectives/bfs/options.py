"""The options of two-tower pre-training on BFS pairs (Body First Selection, ``seedr.objectives.pair_tasks.BFSPairs``)
(``objective.*``), torch-free: settings resolve without torch."""

from __future__ import annotations

from dataclasses import dataclass

from seedr.objectives.two_tower_options import TwoTowerConfig


@dataclass
class BFSConfig(TwoTowerConfig):
    """Options of two-tower pre-training on BFS pairs: the two towers' (``TwoTowerConfig``)."""
