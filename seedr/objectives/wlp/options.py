"""The options of two-tower pre-training on WLP pairs (Wiki Link Prediction, ``seedr.objectives.pair_tasks.WLPPairs``)
(``objective.*``), torch-free: settings resolve without torch."""

from __future__ import annotations

from dataclasses import dataclass

from seedr.objectives.two_tower_options import TwoTowerConfig


@dataclass
class WLPConfig(TwoTowerConfig):
    """Options of two-tower pre-training on WLP pairs: the two towers' (``TwoTowerConfig``)."""
