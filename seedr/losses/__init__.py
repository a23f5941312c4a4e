"""Fine-tuning losses, one per file, in the ``LOSSES`` registry (``triplet``, ``nll``)."""

from seedr.losses.base import LOSSES, RetrievalLoss, Similarity, build_loss, candidate_scores
from seedr.losses.nll import NLLLoss
from seedr.losses.triplet import TripletLoss

__all__ = ["LOSSES", "NLLLoss", "RetrievalLoss", "Similarity", "TripletLoss", "build_loss", "candidate_scores"]
