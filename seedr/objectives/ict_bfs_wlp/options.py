"""The options of two-tower pre-training on a uniform mixture of ICT, BFS and WLP pairs
(``objective.*``), torch-free: settings resolve without torch."""

from __future__ import annotations

from dataclasses import dataclass

from seedr.objectives.two_tower_options import TwoTowerConfig


@dataclass
class ICTBFSWLPConfig(TwoTowerConfig):
    """Options of two-tower pre-training on ICT+BFS+WLP pairs: the two towers' (``TwoTowerConfig``)."""
