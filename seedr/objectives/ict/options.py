"""The options of two-tower pre-training on ICT pairs (the Inverse Cloze Task, ``seedr.objectives.pair_tasks.ICTPairs``)
(``objective.*``), torch-free: settings resolve without torch."""

from __future__ import annotations

from dataclasses import dataclass

from seedr.objectives.two_tower_options import TwoTowerConfig


@dataclass
class ICTConfig(TwoTowerConfig):
    """Options of two-tower pre-training on ICT pairs: the two towers' (``TwoTowerConfig``)."""
