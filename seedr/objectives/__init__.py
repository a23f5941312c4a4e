"""Pre-training objectives, one per file, found through ``OBJECTIVES``.

Importing this package registers every objective.
"""

from seedr.objectives import mlm  # noqa: F401 (registers "mlm")
from seedr.objectives.base import OBJECTIVES, Objective, ObjectiveOutput

__all__ = ["OBJECTIVES", "Objective", "ObjectiveOutput"]
