"""The chunked linear cross-entropy equals ``F.cross_entropy(F.linear(...))``: loss and both gradients,
in one chunk or many, under bf16 autocast and without autograd; and the largest tensor it makes."""

from __future__ import annotations

import pytest
import torch
from helpers import LargestTensor
from torch.nn import functional as F

from seedr.modeling.linear_cross_entropy import linear_cross_entropy


def reference_and_chunked(rows: int, chunk_elements: int, vocabulary: int = 50, hidden: int = 8):
    generator = torch.Generator().manual_seed(0)
    states = torch.randn(rows, hidden, generator=generator, dtype=torch.float64) * 3
    weight = torch.randn(vocabulary, hidden, generator=generator, dtype=torch.float64)
    targets = torch.randint(vocabulary, (rows,), generator=generator)
    results = []
    for loss_function in (lambda s, w: F.cross_entropy(F.linear(s, w), targets),
                          lambda s, w: linear_cross_entropy(s, w, targets, chunk_elements)):
        s, w = states.clone().requires_grad_(), weight.clone().requires_grad_()
        loss = loss_function(s, w)
        (2.5 * loss).backward()  # a scaled upstream gradient must reach both inputs
        results.append((loss.detach(), s.grad, w.grad))
    return results


@pytest.mark.parametrize("chunk_elements", [10_000, 50, 120, 1])  # one chunk; 1, 2 (uneven) and 1 row per chunk
def test_loss_and_gradients_equal_the_unchunked_reference(chunk_elements):
    (loss, grad_states, grad_weight), (chunked, chunked_states, chunked_weight) = reference_and_chunked(7, chunk_elements)
    torch.testing.assert_close(chunked, loss)
    torch.testing.assert_close(chunked_states, grad_states)
    torch.testing.assert_close(chunked_weight, grad_weight)


def test_gradient_flows_only_where_asked_and_no_grad_gives_the_same_loss():
    generator = torch.Generator().manual_seed(1)
    states, weight = torch.randn(9, 4, generator=generator), torch.randn(11, 4, generator=generator)
    targets = torch.randint(11, (9,), generator=generator)
    expected = F.cross_entropy(F.linear(states, weight), targets)
    with torch.no_grad():
        torch.testing.assert_close(linear_cross_entropy(states, weight, targets, chunk_elements=22), expected)
    frozen_weight = states.clone().requires_grad_()
    linear_cross_entropy(frozen_weight, weight, targets, chunk_elements=22).backward()
    assert frozen_weight.grad is not None and weight.grad is None


def test_bf16_autocast_matches_autocast_reference():
    generator = torch.Generator().manual_seed(2)
    states = torch.randn(64, 32, generator=generator)
    weight = torch.randn(300, 32, generator=generator) * 0.2
    targets = torch.randint(300, (64,), generator=generator)
    outputs = []
    for function in (lambda s, w: F.cross_entropy(F.linear(s, w), targets),
                     lambda s, w: linear_cross_entropy(s, w, targets, chunk_elements=3000)):
        s, w = states.clone().requires_grad_(), weight.clone().requires_grad_()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = function(s, w)
        loss.backward()
        assert loss.dtype == torch.float32 and s.grad.dtype == w.grad.dtype == torch.float32
        outputs.append((loss.detach(), s.grad, w.grad))
    for ours, reference in zip(outputs[1], outputs[0], strict=True):
        torch.testing.assert_close(ours, reference, atol=2e-2, rtol=2e-2)


def test_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="states"):
        linear_cross_entropy(torch.zeros(3, 4), torch.zeros(5, 6), torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="no token"):
        linear_cross_entropy(torch.zeros(0, 4), torch.zeros(5, 4), torch.zeros(0, dtype=torch.long))


def test_never_holds_the_whole_logit_matrix():
    tokens, vocabulary, hidden, chunk_elements = 512, 1000, 16, 64_000  # 64 rows per chunk
    states = torch.randn(tokens, hidden, requires_grad=True)
    weight = torch.randn(vocabulary, hidden, requires_grad=True)
    targets = torch.randint(vocabulary, (tokens,))
    with LargestTensor() as tracker:
        linear_cross_entropy(states, weight, targets, chunk_elements).backward()
    assert tracker.largest <= chunk_elements  # one chunk's logits; the (512 × 1000) matrix never exists
    with LargestTensor() as tracker:
        F.cross_entropy(F.linear(states, weight), targets).backward()
    assert tracker.largest == tokens * vocabulary  # the reference does
