"""Pre-training objectives, one per file, found through ``OBJECTIVES``.

Importing this package registers every objective.
"""

import seedr.objectives.cocondenser  # registers "cocondenser"
import seedr.objectives.condenser  # registers "condenser"
import seedr.objectives.cpdae  # registers "cpdae", "cpdae_cls"
import seedr.objectives.mlm  # registers "mlm"
import seedr.objectives.prop  # registers "prop"
import seedr.objectives.seed  # noqa: F401 (registers "seed"; binds the same name as the two above)
from seedr.objectives import bfs, ict, ict_bfs_wlp, wlp  # noqa: F401 (registers the two-tower objectives)
from seedr.objectives.base import OBJECTIVES, Objective, ObjectiveOutput, PretrainingCorpus

__all__ = ["OBJECTIVES", "Objective", "ObjectiveOutput", "PretrainingCorpus"]
