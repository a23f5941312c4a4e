"""Fine-tuning losses, one per file, in the ``LOSSES`` registry (``triplet``, ``nll``)."""

from seedr.losses import nll, triplet  # noqa: F401  (registers the losses)
from seedr.losses.base import LOSSES, RetrievalLoss, Similarity, build_loss, candidate_scores

__all__ = ["LOSSES", "RetrievalLoss", "Similarity", "build_loss", "candidate_scores"]
