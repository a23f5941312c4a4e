"""Pre-training objectives, one per file, found through ``OBJECTIVES``.

Importing this package registers every objective.
"""

from seedr.objectives import (  # noqa: F401 (each module registers its objectives)
    bfs,
    cocondenser,
    condenser,
    contriever,
    cpdae,
    ict,
    ict_bfs_wlp,
    mlm,
    prop,
    retromae,
    seed,
    simcse,
    text_pairs,
    tsdae,
    wlp,
)
from seedr.objectives.base import OBJECTIVES, Objective, ObjectiveOutput, PretrainingCorpus

__all__ = ["OBJECTIVES", "Objective", "ObjectiveOutput", "PretrainingCorpus"]
