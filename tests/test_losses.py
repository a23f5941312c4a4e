"""Fine-tuning losses on hand-built embeddings: values, targets (in-batch included), masks, gradients."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from seedr.losses import LOSSES, Similarity, build_loss, candidate_scores
from seedr.losses.nll import NLLLoss
from seedr.losses.triplet import TripletLoss

DOT = Similarity("dot")


def _batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Two queries in 2-d, each with a positive and two hard negatives; dot products are easy to read."""
    queries = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    positives = torch.tensor([[2.0, 0.0], [0.5, 1.5]], dtype=torch.float64)
    negatives = torch.tensor([[[1.5, 0.0], [0.2, 3.0]],
                              [[0.0, 2.0], [1.2, -1.0]]], dtype=torch.float64)  # (B=2, N=2, H=2)
    return queries, positives, negatives


def test_registry_lists_the_losses() -> None:
    assert LOSSES.names() == ["in_batch_softmax", "nll", "triplet"]
    with pytest.raises(KeyError, match="valid names: in_batch_softmax, nll, triplet"):
        LOSSES.get("softmax")


def test_in_batch_softmax_without_log_q_is_in_batch_nll() -> None:
    """Two-tower pre-training's loss (``seedr.losses.in_batch_softmax``) is DPR's in-batch NLL over the
    batch's positives, moved by log Q(d) per column when the pairs' sampling probabilities are given."""
    queries, positives, negatives = _batch()
    none = positives.new_zeros(2, 0, 2)
    softmax = build_loss("in_batch_softmax", {"global_in_batch": False})
    nll = build_loss("nll", {"in_batch": True, "global_in_batch": False})
    plain = softmax(queries, positives, none, Similarity("dot"))
    assert torch.allclose(plain, nll(queries, positives, none, Similarity("dot")))
    assert torch.allclose(softmax(queries, positives, none, Similarity("dot"),
                                  document_log_q=torch.full((2,), -3.0, dtype=torch.float64)), plain)
    assert not torch.allclose(softmax(queries, positives, none, Similarity("dot"),
                                      document_log_q=torch.tensor([0.0, -3.0], dtype=torch.float64)), plain)
    with pytest.raises(ValueError, match="no hard negatives"):
        softmax(queries, positives, negatives, Similarity("dot"))


def test_triplet_is_mean_hinge_of_score_differences() -> None:
    queries, positives, negatives = _batch()
    # s(q1,d+)=2, s(q1,d-)=1.5, 0.2 ; s(q2,d+)=1.5, s(q2,d-)=2, -1
    expected = [max(0.0, 1 - (2 - 1.5)), max(0.0, 1 - (2 - 0.2)), max(0.0, 1 - (1.5 - 2)), max(0.0, 1 - (1.5 + 1))]
    loss = TripletLoss()(queries, positives, negatives, DOT)
    assert loss.item() == pytest.approx(sum(expected) / 4)
    wider = TripletLoss(margin=3.0)(queries, positives, negatives, DOT)
    assert wider.item() == pytest.approx(sum(3 - d for d in (0.5, 1.8, -0.5, 2.5)) / 4)


def test_triplet_in_batch_adds_the_other_queries_documents() -> None:
    queries, positives, negatives = _batch()
    loss = TripletLoss(in_batch=True)(queries, positives, negatives, DOT)
    documents = torch.cat([positives, negatives.reshape(4, 2)])  # (6, 2): d+1, d+2, then negatives
    scores = queries @ documents.T
    hinges = [max(0.0, 1 - (scores[i, i] - scores[i, j]).item()) for i in range(2) for j in range(6) if j != i]
    assert loss.item() == pytest.approx(sum(hinges) / len(hinges))


def test_nll_without_in_batch_is_cross_entropy_over_positive_and_its_negatives() -> None:
    queries, positives, negatives = _batch()
    loss = NLLLoss(in_batch=False)(queries, positives, negatives, DOT)
    logits = torch.tensor([[2.0, 1.5, 0.2], [1.5, 2.0, -1.0]], dtype=torch.float64)
    assert loss.item() == pytest.approx(F.cross_entropy(logits, torch.tensor([0, 0])).item())
    by_hand = -(math.log(math.exp(2) / (math.exp(2) + math.exp(1.5) + math.exp(0.2)))
                + math.log(math.exp(1.5) / (math.exp(1.5) + math.exp(2.0) + math.exp(-1.0)))) / 2
    assert loss.item() == pytest.approx(by_hand)


def test_nll_in_batch_targets_the_diagonal_over_all_batch_documents() -> None:
    queries, positives, negatives = _batch()
    loss = NLLLoss()(queries, positives, negatives, DOT)  # in-batch is NLL's default (DPR)
    documents = torch.cat([positives, negatives.reshape(4, 2)])
    logits = queries @ documents.T  # (2, 6): row i's positive is column i
    assert loss.item() == pytest.approx(F.cross_entropy(logits, torch.tensor([0, 1])).item())


def test_false_negatives_leave_the_denominator() -> None:
    queries, positives, negatives = _batch()
    # the positive of query 2 is also relevant to query 1: it must not count as query 1's negative
    mask = torch.zeros(2, 6, dtype=torch.bool)
    mask[0, 1] = True
    loss = NLLLoss()(queries, positives, negatives, DOT, false_negatives=mask)
    documents = torch.cat([positives, negatives.reshape(4, 2)])
    logits = (queries @ documents.T).clone()
    logits[0, 1] = float("-inf")
    assert loss.item() == pytest.approx(F.cross_entropy(logits, torch.tensor([0, 1])).item())
    candidates = candidate_scores(queries, positives, negatives, DOT, in_batch=True, false_negatives=mask)
    assert not candidates.negative[0, 1] and not candidates.negative[0, 0] and candidates.negative[1, 0]


def test_cosine_scores_are_scaled_cosines() -> None:
    queries, positives, negatives = _batch()
    similarity = Similarity("cosine", scale=20.0)
    candidates = candidate_scores(queries, positives, negatives, similarity, in_batch=False)
    expected = 20.0 * F.cosine_similarity(queries, positives)
    assert torch.allclose(candidates.scores[:, 0], expected)
    assert candidates.scores.abs().max() <= 20.0 + 1e-9


@pytest.mark.parametrize("loss", [TripletLoss(), TripletLoss(in_batch=True), NLLLoss(), NLLLoss(in_batch=False)],
                         ids=["triplet", "triplet-in-batch", "nll-in-batch", "nll"])
def test_gradients_match_finite_differences(loss: torch.nn.Module) -> None:
    queries, positives, negatives = _batch()
    inputs = tuple(t.clone().requires_grad_(True) for t in (queries, positives, negatives))
    assert torch.autograd.gradcheck(lambda q, p, n: loss(q, p, n, DOT), inputs)
    inputs_cos = tuple(t.clone().requires_grad_(True) for t in (queries, positives, negatives))
    assert torch.autograd.gradcheck(lambda q, p, n: loss(q, p, n, Similarity("cosine", 5.0)), inputs_cos)


def test_nll_gradient_pulls_positive_and_pushes_negatives() -> None:
    queries, positives, negatives = (t.clone().requires_grad_(True) for t in _batch())
    NLLLoss(in_batch=False)(queries, positives, negatives, DOT).backward()
    # d loss / d positive = -(1 - p) q: towards the query; negatives move away (+p q)
    assert (positives.grad[0] * queries[0]).sum() < 0
    assert (negatives.grad[0] * queries[0]).sum(-1).gt(0).all()


def test_no_negatives_at_all_is_an_error_unless_in_batch() -> None:
    queries, positives, _ = _batch()
    empty = torch.zeros(2, 0, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match="no negatives"):
        TripletLoss()(queries, positives, empty, DOT)
    assert NLLLoss()(queries, positives, empty, DOT).item() > 0  # in-batch negatives only (DPR)
    # a batch of one query with no hard negative has nothing to contrast: zero, never NaN
    single = TripletLoss(in_batch=True)(queries[:1], positives[:1], empty[:1], DOT)
    assert single.item() == 0.0


def test_build_loss_checks_options() -> None:
    assert build_loss("triplet", {"margin": 0.5}).margin == 0.5
    assert build_loss("nll").in_batch is True and build_loss("triplet").in_batch is False
    assert build_loss("nll").global_in_batch is True and build_loss("nll", {"global_in_batch": False}).global_in_batch is False
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['margin'\].*valid: \['in_batch', 'global_in_batch'\]"):
        build_loss("nll", {"margin": 1.0})


def test_accuracy_counts_queries_whose_positive_beats_every_negative() -> None:
    queries, positives, negatives = _batch()
    # query 1: 2 > 1.5, 0.2; query 2: 1.5 < 2 (its first negative wins)
    assert candidate_scores(queries, positives, negatives, DOT, in_batch=False).accuracy().item() == 0.5
