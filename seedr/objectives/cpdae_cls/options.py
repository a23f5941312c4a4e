"""The options of CPDAE′ pre-training (``objective.*``), torch-free: settings resolve without torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from seedr.objectives.cpdae.options import CpdaeConfig


@dataclass
class CpdaeClsConfig(CpdaeConfig):
    """CPDAE′: as ``CpdaeConfig`` but contrasting the [CLS] vectors."""

    contrast: Literal["words", "cls"] = "cls"
