"""The negative log-likelihood of the positive (DPR / ANCE)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from seedr.losses.base import LOSSES, RetrievalLoss, Similarity


@LOSSES.register("nll")
class NLLLoss(RetrievalLoss):
    """L(q, d⁺, d⁻₁..ₙ) = −log exp s(q, d⁺) / (exp s(q, d⁺) + Σⱼ exp s(q, d⁻ⱼ)), averaged over the queries.

    DPR (Karpukhin et al., EMNLP 2020, Eq. 2) with the positive, the query's hard negatives and — in-batch
    training, DPR §3.2 — the positives and hard negatives of the other queries of the batch in the
    denominator; ANCE (Xiong et al., ICLR 2021, Eq. 2–3) with its ANN-mined negatives. It is the sampled
    softmax of the ICLR 2020 pre-training-tasks paper (Chang et al., Eq. 3) applied to fine-tuning.
    A document relevant to two queries of the batch is not a negative of either (``false_negatives``).

    Args:
        in_batch: put the other queries' documents in the denominator (on by default, as DPR).
        global_in_batch: those of every process's queries (default), as one process with the global
            batch would (DPR's 128 on 8 GPUs: 127 in-batch positives, not 15); ``false``: this process's.

    Inputs:
        queries (B, H), positives (B, H), negatives (B, N, H), a ``Similarity``, and optionally the
        in-batch false-negative mask (see ``seedr.losses.base.candidate_scores``).

    Example:
        >>> import torch
        >>> loss = NLLLoss(in_batch=False)
        >>> q, p, n = torch.tensor([[1., 0.]]), torch.tensor([[1., 0.]]), torch.tensor([[[0., 1.]]])
        >>> round(float(loss(q, p, n, Similarity("dot"))), 4)  # -log(e / (e + 1))
        0.3133
    """

    name = "nll"
    default_in_batch = True

    def __init__(self, in_batch: bool | None = None, global_in_batch: bool = True) -> None:
        super().__init__(in_batch, global_in_batch)

    def forward(self, queries: torch.Tensor, positives: torch.Tensor, negatives: torch.Tensor,
                similarity: Similarity, false_negatives: torch.Tensor | None = None) -> torch.Tensor:
        candidates = self.scores(queries, positives, negatives, similarity, false_negatives)
        in_denominator = candidates.negative.clone()  # (B, C)
        in_denominator.scatter_(1, candidates.target.unsqueeze(1), True)
        logits = candidates.scores.masked_fill(~in_denominator, float("-inf"))  # (B, C)
        return F.cross_entropy(logits, candidates.target)
