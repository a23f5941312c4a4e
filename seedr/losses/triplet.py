"""The triplet (pairwise hinge) loss of SEED-Encoder's Siamese fine-tuning."""

from __future__ import annotations

import torch

from seedr.losses.base import LOSSES, RetrievalLoss, Similarity


@LOSSES.register("triplet")
class TripletLoss(RetrievalLoss):
    """L = Σ_{(q, d⁺, d⁻)} relu(margin − (s(q, d⁺) − s(q, d⁻))).

    SEED-Encoder (Lu et al., EMNLP 2021, §4.2, the unnumbered loss of "Fine-tuning Siamese/Dual-Encoders")
    with margin 1: the positive must outscore each negative by the margin. The sum runs over every
    (query, positive, negative) triple of the batch and is divided by the number of triples, so that the
    learning rate does not depend on the batch size or the number of negatives.

    With a scaled cosine (``Similarity("cosine", scale)``) the margin is in scaled units: a margin of 1
    at scale 20 asks for a cosine gap of 0.05.

    Args:
        margin: the hinge margin (1 in the paper).
        in_batch: also form triples with the other queries' documents of the batch (off by default: the
            paper's triples are (q, d⁺, d⁻) with d⁻ a BM25 negative).
        global_in_batch: with ``in_batch``, the other documents of every process's queries (default).
            The sum over triples is divided by this process's count of triples, so the global batch's
            loss is matched exactly when every process has as many triples (no false negatives).

    Inputs:
        queries (B, H), positives (B, H), negatives (B, N, H), a ``Similarity``, and optionally the
        in-batch false-negative mask (see ``seedr.losses.base.candidate_scores``).

    Example:
        >>> import torch
        >>> loss = TripletLoss()
        >>> q, p, n = torch.tensor([[1., 0.]]), torch.tensor([[2., 0.]]), torch.tensor([[[1.5, 0.]]])
        >>> float(loss(q, p, n, Similarity("dot")))  # relu(1 - (2 - 1.5))
        0.5
    """

    name = "triplet"
    default_in_batch = False

    def __init__(self, margin: float = 1.0, in_batch: bool | None = None, global_in_batch: bool = True) -> None:
        super().__init__(in_batch, global_in_batch)
        self.margin = margin

    def forward(self, queries: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor,
                similarity: Similarity, false_negatives: torch.Tensor | None = None) -> torch.Tensor:
        candidates = self.scores(queries, positives, negatives, similarity, false_negatives)
        positive = candidates.scores.gather(1, candidates.target.unsqueeze(1))  # (B, 1)
        hinge = torch.relu(self.margin - (positive - candidates.scores))  # (B, C)
        triples = candidates.negative.sum().clamp_min(1)  # a batch of one query has no in-batch triple
        return hinge[candidates.negative].sum() / triples
