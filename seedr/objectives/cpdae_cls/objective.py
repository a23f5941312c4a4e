"""CPDAE′ (Ma et al., CIKM 2022, arXiv:2208.09846): CPDAE whose contrastive loss (eq. 5) "directly
contrasts the dense representations h", the two masked views' [CLS] vectors by cosine over a temperature
(0.05, as SimCSE), instead of their decoded word distributions (``seedr.objectives.cpdae.objective`` says
why)."""

from __future__ import annotations

from seedr.objectives.cpdae.objective import Cpdae
from seedr.objectives.cpdae_cls.options import CpdaeClsConfig


class CpdaeCls(Cpdae):
    """CPDAE′: the contrastive loss on the [CLS] vectors instead of the word distributions."""

    name = "cpdae_cls"
    config_class = CpdaeClsConfig
