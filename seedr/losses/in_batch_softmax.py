"""The in-batch sampled softmax with its log-Q correction: the loss of two-tower pre-training (Chang et al.,
ICLR 2020, Eq. 1 and 3; ICT, BFS, WLP and their mix)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from seedr.losses.base import LOSSES, RetrievalLoss, Similarity, candidate_scores
from seedr.losses.gather import gather_rows


def in_batch_softmax(queries: torch.Tensor, documents: torch.Tensor, false_negatives: torch.Tensor | None = None,
                     global_in_batch: bool = False,
                     document_log_q: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-query loss and top-1 correctness of the sampled softmax over the documents of the batch.

    −log p(d_i | q_i) with p(d | q) = exp(⟨φ(q), ψ(d)⟩ − log Q(d)) / Σ_{d′ ∈ batch} exp(⟨φ(q), ψ(d′)⟩ −
    log Q(d′)) (ICLR 2020, Eq. 1 and 3, D replaced by the batch's documents "with a proper correcting
    term to ensure the unbiasedness of the partition function", Bengio & Senecal, 2008): the positive
    of row i is column i, and every column is corrected by the log-probability Q that its pair was
    drawn (as Yi et al., 2019, correct in-batch softmax). Within one task every unit is drawn with the
    same probability, so the correction is a constant and cancels. In the ICT+BFS+WLP mix the task is
    drawn uniformly and then a unit of it, so Q(d) = 1 / (3 · N_task(d)): a document of a task with
    fewer units (BFS: 17.5M pairs in Table 1) is over-sampled against one of a larger task (ICT: 50.2M)
    and its logit is lowered by the log of the size ratio; without the correction the mixed batch
    estimates the softmax over a corpus where the small tasks' documents weigh more.

    Args:
        queries: (B, D) query embeddings φ(q).
        documents: (B, D) document embeddings ψ(d); row i is the positive of query i.
        false_negatives: optional (B, B') boolean, ``True`` where column j's document is identical to
            row i's positive (the same passage drawn twice): left out of row i's denominator.
        global_in_batch: the batch is the global one, the documents of every process gathered
            (``seedr.losses.gather``; B' = W·B, query i's positive is column r·B + i), as the paper's
            8192 on 32 chips; otherwise B' = B.
        document_log_q: optional (B,) log Q of each document's pair
            (``seedr.objectives.pair_tasks.Pair.log_q``), gathered with the documents under
            ``global_in_batch``; None = no correction.

    Returns:
        ``(losses (B,), correct (B,))``.
    """
    empty = documents.new_zeros(documents.shape[0], 0, documents.shape[-1])  # (B, 0, D): no hard negative
    candidates = candidate_scores(queries, documents, empty, Similarity("dot"), in_batch=True,
                                  false_negatives=false_negatives, global_in_batch=global_in_batch)
    in_denominator = candidates.negative.clone()  # (B, B')
    in_denominator.scatter_(1, candidates.target.unsqueeze(1), True)
    scores = candidates.scores  # (B, B')
    if document_log_q is not None:
        if global_in_batch:
            document_log_q = gather_rows(document_log_q)  # (B',): one per gathered column
        scores = scores - document_log_q.to(scores.dtype).unsqueeze(0)  # column j corrected by log Q(d_j)
    logits = scores.masked_fill(~in_denominator, float("-inf"))  # (B, B')
    losses = F.cross_entropy(logits, candidates.target, reduction="none")  # (B,)
    return losses, logits.argmax(dim=-1) == candidates.target


@LOSSES.register("in_batch_softmax")
class InBatchSoftmaxLoss(RetrievalLoss):
    """L(q_i) = −log exp(s(q_i, d_i) − log Q(d_i)) / Σ_{d_j ∈ batch} exp(s(q_i, d_j) − log Q(d_j)), averaged
    over the queries: the sampled softmax over the documents of the batch, each corrected by the
    log-probability Q that its pair was drawn (``in_batch_softmax``).

    The two-tower pre-training loss of Chang et al. (ICLR 2020, Eq. 3), whose ``TwoTowerObjective``
    (``seedr.objectives.two_tower``) passes each pair's ``log Q``; without it (fine-tuning, where the
    training pairs are not drawn by a sampler whose Q is known) the correction is off and the loss is
    ``nll`` over the batch's positives. The batch's documents are its positives only: hard negatives
    are not part of this loss (use ``nll``).

    Args:
        global_in_batch: the documents of every process's queries (default, the paper's global batch of
            8192); ``false``: this process's.

    Inputs:
        queries (B, H), positives (B, H), negatives (B, 0, H), a ``Similarity`` (the paper's inner
        product), optionally the in-batch false-negative mask (B, B') and ``document_log_q`` (B,).

    Example:
        >>> import torch
        >>> loss = InBatchSoftmaxLoss(global_in_batch=False)
        >>> q, d = torch.tensor([[1., 0.], [0., 1.]]), torch.tensor([[1., 0.], [0., 1.]])
        >>> round(float(loss(q, d, d.new_zeros(2, 0, 2), Similarity("dot"))), 4)  # -log(e / (e + 1))
        0.3133
    """

    name = "in_batch_softmax"
    default_in_batch = True

    def __init__(self, global_in_batch: bool = True) -> None:
        super().__init__(in_batch=True, global_in_batch=global_in_batch)

    def per_query(self, queries: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor,
                  similarity: Similarity, false_negatives: torch.Tensor | None = None,
                  document_log_q: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(losses (B,), correct (B,))``: each query's loss and whether its positive ranks first."""
        if negatives.shape[1] or similarity != Similarity("dot"):
            raise ValueError("the in_batch_softmax loss scores the batch's positives by their inner product: "
                             "no hard negatives, similarity dot (use nll otherwise)")
        return in_batch_softmax(queries, positives, false_negatives, self.global_in_batch, document_log_q)

    def forward(self, queries: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor,
                similarity: Similarity, false_negatives: torch.Tensor | None = None,
                document_log_q: torch.Tensor | None = None) -> torch.Tensor:
        return self.per_query(queries, positives, negatives, similarity, false_negatives, document_log_q)[0].mean()


__all__ = ["InBatchSoftmaxLoss", "in_batch_softmax"]
