"""Pre-training objectives, one per file, found through ``OBJECTIVES``.

Importing this package registers every objective.
"""

from seedr.objectives import cpdae, mlm, seed  # noqa: F401 (registers "mlm", "seed", "cpdae", "cpdae_cls")
from seedr.objectives import bfs, ict, ict_bfs_wlp, wlp  # noqa: F401 (registers the two-tower objectives)
from seedr.objectives.base import OBJECTIVES, Objective, ObjectiveOutput

__all__ = ["OBJECTIVES", "Objective", "ObjectiveOutput"]
