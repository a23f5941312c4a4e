"""Body First Selection (BFS): a sentence of an article's lead vs a passage from the rest of the article.

Chang et al. (ICLR 2020, sec. 3): "the query q2 is a random sentence in the first section of a
Wikipedia page, and the document d is a random passage from the same page", proposed "to capture
semantic relationship outside of the local paragraph". Fig. 2 draws d from a later section, and a
passage of the lead would make BFS a near-copy of ICT, so the document is a paragraph of the
article's sections (its body), never of its lead; it is encoded as ``title [SEP] passage``.
"""

from __future__ import annotations

from seedr.objectives.bfs.options import BFSConfig
from seedr.objectives.two_tower import TwoTowerObjective


class BFSObjective(TwoTowerObjective):
    """Two-tower pre-training on BFS pairs (ICLR 2020, sec. 3; Table 5 row 2)."""

    name = "bfs"
    config_class = BFSConfig
    tasks = ("bfs",)
