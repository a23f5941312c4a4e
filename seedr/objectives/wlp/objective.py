"""Wiki Link Prediction (WLP): a sentence of article A's lead vs a passage of an article B that links to A.

Chang et al. (ICLR 2020, sec. 3): "The query q3 is a random sentence in the first section of a
Wikipedia page, and the document d is a passage from another page where there is a hyperlink link
to the page of q3", to "capture inter-page semantic relation". The passage is one of B's that
mentions A (where the hyperlink would be, as in Fig. 2), or any passage of B when none names A
outright; it is encoded as ``B's title [SEP] passage``.

Links come from ``Article.links``: FOLDOC's real ``{cross-references}`` (``seedr.data.glossary``), or,
for the wiki bundle whose hyperlinks were stripped, title mentions (``seedr.data.links``).
"""

from __future__ import annotations

from seedr.objectives.two_tower import TwoTowerObjective
from seedr.objectives.wlp.options import WLPConfig


class WLPObjective(TwoTowerObjective):
    """Two-tower pre-training on WLP pairs (ICLR 2020, sec. 3; Table 5 row 3)."""

    name = "wlp"
    config_class = WLPConfig
    tasks = ("wlp",)
