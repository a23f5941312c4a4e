"""Retrieval losses, one per file, in the ``LOSSES`` registry (``triplet``, ``nll``, and
``in_batch_softmax``, two-tower pre-training's sampled softmax with its log-Q correction)."""

from seedr.losses.base import LOSSES, RetrievalLoss, Similarity, build_loss, candidate_scores
from seedr.losses.in_batch_softmax import InBatchSoftmaxLoss, in_batch_softmax
from seedr.losses.nll import NLLLoss
from seedr.losses.triplet import TripletLoss

__all__ = ["LOSSES", "InBatchSoftmaxLoss", "NLLLoss", "RetrievalLoss", "Similarity", "TripletLoss", "build_loss",
           "candidate_scores", "in_batch_softmax"]
