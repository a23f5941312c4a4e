"""What every fine-tuning loss is: a function of query and document *embeddings* (sentence-transformers
style, so the maths is testable without an encoder), scoring each query against its positive, its hard
negatives and, optionally, the other documents of the batch.

Scores are laid out the same way for every loss (``candidate_scores``): column ``i`` of row ``i`` is the
positive of query ``i``; then come the other queries' positives (in-batch, DPR), then the hard negatives
of every query. A loss only decides what to do with that score matrix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import nn

from seedr.losses.gather import false_negative_mask, gather_rows, row_offset
from seedr.registry import Registry

SimilarityName = Literal["dot", "cosine"]


@dataclass(frozen=True)
class Similarity:
    """s(q, d): the dot product of the [CLS] (or mean) embeddings, as SEED-Encoder, CPDAE, DPR and ANCE
    use, or the cosine multiplied by ``scale`` (an inverse temperature: cosines lie in [-1, 1], too
    narrow a range for a softmax or a margin of 1 without it)."""

    name: SimilarityName = "dot"
    scale: float = 1.0

    def __post_init__(self) -> None:
        if self.name not in ("dot", "cosine"):
            raise ValueError(f"unknown similarity {self.name!r}; valid: cosine, dot")

    def prepare(self, embeddings: torch.Tensor) -> torch.Tensor:
        """Normalise for cosine; identity for dot."""
        return F.normalize(embeddings, dim=-1) if self.name == "cosine" else embeddings

    def matrix(self, queries: torch.Tensor, documents: torch.Tensor) -> torch.Tensor:
        """All query-document scores: (Q, H) × (D, H) → (Q, D)."""
        scores = self.prepare(queries) @ self.prepare(documents).T  # (Q, D)
        return scores * self.scale if self.name == "cosine" else scores


@dataclass
class CandidateScores:
    """``scores`` (B, C) of each query against its candidates; the positive of row i is column
    ``target[i]``; ``negative`` (B, C) is ``True`` for the columns that are negatives of the row."""

    scores: torch.Tensor
    target: torch.Tensor
    negative: torch.Tensor

    def accuracy(self) -> torch.Tensor:
        """Share of queries whose positive outscores every one of their negatives (a training metric)."""
        positive = self.scores.gather(1, self.target.unsqueeze(1)).squeeze(1)  # (B,)
        best_negative = self.scores.masked_fill(~self.negative, float("-inf")).max(dim=1).values  # (B,)
        return (positive > best_negative).float().mean()


def candidate_scores(queries: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor,
                     similarity: Similarity, in_batch: bool,
                     false_negatives: torch.Tensor | None = None,
                     global_in_batch: bool = False) -> CandidateScores:
    """Score each query against its candidates.

    Args:
        queries: (B, H) query embeddings.
        positives: (B, H) embedding of each query's positive document.
        negatives: (B, N, H) each query's hard negatives (N may be 0).
        similarity: the score function.
        in_batch: also score each query against the positives and hard negatives of the *other*
            queries of the batch (DPR, Karpukhin et al. 2020, §3.2); otherwise only against its own.
        false_negatives: optional (B, C) boolean mask, ``True`` where a column's document is in
            fact relevant to the row's query (a document that is the positive of two queries of the
            batch); such columns are never used as negatives. Only read when ``in_batch``.
        global_in_batch: with ``in_batch``, the other queries' documents are those of the *global*
            batch, gathered from every process (``seedr.losses.gather``), and this process's queries
            are rows ``r·B …`` of it; the same as ``in_batch`` on one process.

    Returns:
        Without ``in_batch``, C = 1 + N and every target is column 0; with it, C = B' + B'·N and the
        target of row i is column o + i, where B' = W·B and o = r·B on process r of W under
        ``global_in_batch``, else B' = B and o = 0: columns are all positives of the (global) batch,
        then all their hard negatives, in batch order.
    """
    batch, count, _ = negatives.shape
    if not in_batch:
        query_vectors = similarity.prepare(queries)  # (B, H)
        documents = similarity.prepare(torch.cat([positives.unsqueeze(1), negatives], dim=1))  # (B, 1+N, H)
        scores = torch.einsum("bh,bch->bc", query_vectors, documents)  # (B, 1+N)
        if similarity.name == "cosine":
            scores = scores * similarity.scale
        negative = torch.ones_like(scores, dtype=torch.bool)
        negative[:, 0] = False
        target = torch.zeros(batch, dtype=torch.long, device=scores.device)
        return CandidateScores(scores, target, negative)
    offset = 0
    if global_in_batch:
        offset = row_offset(batch)
        positives, negatives = gather_rows(positives), gather_rows(negatives)  # (B', H), (B', N, H)
    documents = torch.cat([positives, negatives.reshape(-1, positives.shape[-1])], dim=0)  # (B' + B'·N, H)
    scores = similarity.matrix(queries, documents)  # (B, B' + B'·N)
    target = torch.arange(offset, offset + batch, device=scores.device)
    negative = torch.ones_like(scores, dtype=torch.bool)
    negative[torch.arange(batch, device=scores.device), target] = False
    if false_negatives is not None:
        negative &= ~false_negatives.to(torch.bool)
    return CandidateScores(scores, target, negative)


def in_batch_false_negatives(relevant_keys: torch.Tensor, document_keys: torch.Tensor,
                             global_in_batch: bool = False) -> torch.Tensor:
    """The ``false_negatives`` mask of ``candidate_scores(in_batch=True)`` from document keys
    (``seedr.losses.gather.document_key``), so that it spans the gathered columns too.

    Args:
        relevant_keys: (B, R) keys of the documents relevant to each query (``NO_KEY`` padding).
        document_keys: (B + B·N,) keys of this process's documents: the B positives, then the hard
            negatives in query order (the layout of ``candidate_scores``' inputs).
        global_in_batch: as in ``candidate_scores``: the columns are those of every process.

    Returns:
        (B, B' + B'·N): ``True`` where the column's document is relevant to the row's query but is
        not its target.
    """
    batch = relevant_keys.shape[0]
    offset = 0
    if global_in_batch:
        offset = row_offset(batch)
        document_keys = torch.cat([gather_rows(document_keys[:batch]), gather_rows(document_keys[batch:])])
    targets = torch.arange(offset, offset + batch, device=document_keys.device)
    return false_negative_mask(relevant_keys, document_keys, targets)


class RetrievalLoss(nn.Module):
    """Base class of fine-tuning losses; subclasses set ``name`` and implement ``forward``.

    ``forward(queries (B, H), positives (B, H), negatives (B, N, H), similarity, false_negatives=None)``
    returns the scalar loss; ``in_batch`` says whether the other queries' documents are negatives too,
    and ``global_in_batch`` (default on) whether those are the documents of the whole batch across
    processes (``seedr.losses.gather``: the loss and gradients of W processes × B queries are those of
    one process with W·B) or only this process's. The loss is the mean over this process's queries.
    """

    name: ClassVar[str] = ""
    default_in_batch: ClassVar[bool] = False

    def __init__(self, in_batch: bool | None = None, global_in_batch: bool = True) -> None:
        super().__init__()
        self.in_batch = self.default_in_batch if in_batch is None else in_batch
        self.global_in_batch = global_in_batch

    def scores(self, queries: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor,
               similarity: Similarity, false_negatives: torch.Tensor | None) -> CandidateScores:
        if negatives.shape[1] == 0 and not self.in_batch:
            raise ValueError(f"the {self.name} loss has no negatives to contrast with: give it hard negatives "
                             f"(--negatives bm25|static|ance) or turn in-batch negatives on")
        return candidate_scores(queries, positives, negatives, similarity, self.in_batch, false_negatives,
                                global_in_batch=self.in_batch and self.global_in_batch)


LOSSES: Registry[type[RetrievalLoss]] = Registry("loss")



def build_loss(name: str, options: dict[str, Any] | None = None) -> RetrievalLoss:
    """The registered loss ``name`` built with ``options``; an unknown option is an error listing the valid ones."""
    return LOSSES.build(name, options)
