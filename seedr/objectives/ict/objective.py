"""Inverse Cloze Task (ICT): a sentence of a passage vs the rest of the passage.

Lee et al. (ACL 2019, ORQA) proposed it; Chang et al. (ICLR 2020, sec. 3) use it as a two-tower
pre-training task: "Given a passage p consisting of n sentences, p = {s1, ..., sn}, the query q is a
sentence randomly drawn from the passage, q = si, i ~ [1, n], and the document d is the rest of
sentences, d = {s1, ..., si−1, si+1, ..., sn}", encoded as "a pair of article title and passage
separated by [SEP]" (sec. 4.1). A passage is a paragraph of the article (Fig. 2 draws q1 and d from
one paragraph; the wiki bundle keeps Wikipedia's paragraphs); the document tower keeps its first 288
tokens.
"""

from __future__ import annotations

from seedr.objectives.ict.options import ICTConfig
from seedr.objectives.two_tower import TwoTowerObjective


class ICTObjective(TwoTowerObjective):
    """Two-tower pre-training on ICT pairs (ICLR 2020, sec. 3; Table 5 rows 1 and 6)."""

    name = "ict"
    config_class = ICTConfig
    tasks = ("ict",)
