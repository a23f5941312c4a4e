"""Pre-training objectives, one per file, found through ``OBJECTIVES``.

Importing this package registers every objective.
"""

import seedr.objectives.contriever as _contriever  # noqa: F401 (registers "contriever")
import seedr.objectives.cpdae  # registers "cpdae", "cpdae_cls"
import seedr.objectives.mlm  # registers "mlm"
import seedr.objectives.retromae  # registers "retromae"
import seedr.objectives.seed  # registers "seed"
import seedr.objectives.simcse as _simcse  # noqa: F401 (registers "simcse")
import seedr.objectives.tsdae  # noqa: F401 (registers "tsdae"; binds the same name as the imports above)
from seedr.objectives import bfs, ict, ict_bfs_wlp, wlp  # noqa: F401 (registers the two-tower objectives)
from seedr.objectives.base import OBJECTIVES, Objective, ObjectiveOutput, PretrainingCorpus

__all__ = ["OBJECTIVES", "Objective", "ObjectiveOutput", "PretrainingCorpus"]
