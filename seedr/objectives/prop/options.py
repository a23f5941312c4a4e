"""The options of PROP pre-training (``objective.*``), torch-free: settings resolve without torch."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from seedr.objectives.mlm.options import MLMConfig


#: ``objective.collection_statistics: auto`` asks for the term counts of the run's own corpus (PROP).
AUTO_STATISTICS = "auto"


@dataclass
class PropConfig(MLMConfig):
    """Options of PROP pre-training as a bi-encoder (the paper's and released code's defaults).

    Attributes:
        poisson_lambda: λ of the Poisson distribution of word-set lengths (paper: 3, the average query
            length); lengths are drawn again until positive.
        pairs_per_text: pairs of word sets drawn from each text (its document) per step.
        margin: the hinge's margin on the pair's softmax probabilities (released code: 1).
        subsample_threshold: t of word2vec's subsampling of frequent words (released code: 1e-4); 0 keeps
            every drawn word.
        collection_statistics: a ``.npy`` of the corpus's count of every vocabulary id (written by
            ``seedr.objectives.prop.objective.save_counts``), or ``"auto"``: ``seedr pretrain`` counts its corpus (``Prop.complete_options``).
        dirichlet_mu: μ of the Dirichlet smoothing; None = the corpus's average text length in tokens
            (released code), which ``"auto"`` statistics fill in.
        rop_weight: weight of L_ROP in the loss (the paper sums: 1).
    """

    trained_representation: ClassVar[str] = "PROP's bi-encoder {pooling}"

    poisson_lambda: float = 3.0
    pairs_per_text: int = 1
    margin: float = 1.0
    subsample_threshold: float = 1e-4
    collection_statistics: str | None = AUTO_STATISTICS
    dirichlet_mu: float | None = None
    rop_weight: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.poisson_lambda <= 0:
            raise ValueError(f"poisson_lambda must be > 0, got {self.poisson_lambda}")
        if self.pairs_per_text < 1:
            raise ValueError(f"pairs_per_text must be ≥ 1, got {self.pairs_per_text}")
        if self.subsample_threshold < 0:
            raise ValueError(f"subsample_threshold must be ≥ 0, got {self.subsample_threshold}")
        if self.dirichlet_mu is not None and self.dirichlet_mu <= 0:
            raise ValueError(f"dirichlet_mu must be > 0, got {self.dirichlet_mu}")

    @property
    def mean_set_length(self) -> float:
        """E[|S|] under the zero-truncated Poisson: λ / (1 − e^−λ)."""
        return self.poisson_lambda / -math.expm1(-self.poisson_lambda)
