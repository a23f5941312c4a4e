"""In-batch negatives over the global batch (``seedr.losses.gather``): two real CPU processes (``torchrun``,
gloo) with 8 examples each give the loss and the gradients of one process with all 16 — for the two-tower
sampled softmax (ICT on Wikipedia), DPR's in-batch NLL (SciFact) and CPDAE's eq. 5 on word distributions
(mean and sum over anchors) and on [CLS] vectors (CPDAE′) — with false negatives recognised across
processes. The step itself is ``global_batch_worker.py``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from seedr.losses import NLLLoss, Similarity
from seedr.losses.base import candidate_scores, in_batch_false_negatives
from seedr.losses.gather import NO_KEY, document_key, gather_rows, row_offset, world_size

WORKER = Path(__file__).parent / "global_batch_worker.py"
#: float64 sums taken in another order (per-process partial sums, then the all-reduce): relative 1e-7 of
#: each value, absolute 1e-12 for gradients that are zero up to rounding (attention key biases).
TOLERANCE = {"rtol": 1e-7, "atol": 1e-12}


def _run(command: list[str], out_file: Path, cases: list[str]) -> dict:
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    result = subprocess.run([*command, str(WORKER), str(out_file), *cases], check=False, capture_output=True,
                            text=True, timeout=600, env=environment)
    assert result.returncode == 0, result.stderr[-3000:]
    return torch.load(out_file)


def _steps(folder: Path, cases: list[str]) -> tuple[dict, dict]:
    """The step of each case as 1 × 16 and as 2 × 8 (``torchrun``, two gloo processes)."""
    torchrun = str(Path(sys.executable).parent / "torchrun")
    two = _run([torchrun, "--standalone", "--nproc_per_node", "2"], folder / "two.pt", cases)
    one = _run([sys.executable], folder / "one.pt", [case.removesuffix("_gradient_cache") for case in cases])
    assert (one["processes"], two["processes"]) == (1, 2)
    return one["results"], two["results"]


def _assert_same_step(one: dict, two: dict, case: str) -> None:
    single, split = one[case.removesuffix("_gradient_cache")], two[case]
    torch.testing.assert_close(split["loss"], single["loss"], **TOLERANCE)
    assert split["grads"].keys() == single["grads"].keys() and single["grads"]
    for name, gradient in single["grads"].items():
        assert gradient.abs().sum() > 0 or "pooler" in name, name
        torch.testing.assert_close(split["grads"][name], gradient, **TOLERANCE, msg=name)


def test_two_processes_of_8_train_as_one_of_16_two_tower(shared_data, tmp_path):
    """The fast variant: the two-tower softmax with a false negative across processes, plainly and through
    GradCache (chunks of 3 rows; ``ict_gradient_cache``: 2 × 8 with GradCache equals 1 × 16 without)."""
    one, two = _steps(tmp_path, ["ict", "ict_gradient_cache"])
    for case in ("ict", "ict_gradient_cache"):
        _assert_same_step(one, two, case)


@pytest.fixture(scope="module")
def every_step(shared_data, tmp_path_factory) -> tuple[dict, dict]:
    return _steps(tmp_path_factory.mktemp("global-batch"), ["nll", "cpdae_js_mean", "cpdae_js_sum", "cpdae_cls"])


@pytest.mark.slow
@pytest.mark.parametrize("case", ["nll", "cpdae_js_mean", "cpdae_js_sum", "cpdae_cls"])
def test_two_processes_of_8_train_as_one_of_16(every_step, case):
    """DPR's NLL over in-batch + hard negatives (a relevant document in the other process's half) and CPDAE's
    eq. 5 (the contrastive part alone: MLM averages over each process's masked tokens) in its variants."""
    _assert_same_step(*every_step, case)


def test_without_a_process_group_gathering_is_the_identity():
    rows = torch.randn(4, 3, requires_grad=True)
    assert world_size() == 1 and row_offset(4) == 0 and gather_rows(rows) is rows


def test_false_negatives_from_keys_match_the_documents():
    """The positive of query 1 is also relevant to query 0: a false negative of row 0; a hard negative
    that is query 1's positive is a false negative of both rows."""
    keys = [document_key("title", f"text {i}") for i in range(3)]
    assert document_key("title", "text 0") == keys[0] and len(set(keys)) == 3
    relevant = torch.tensor([[keys[0], keys[1]], [keys[1], NO_KEY]])  # (B, R)
    documents = torch.tensor([keys[0], keys[1], keys[2], keys[1]])  # positives, then one negative each
    mask = in_batch_false_negatives(relevant, documents)
    assert mask.tolist() == [[False, True, False, True], [False, False, False, True]]
    queries, positives, negatives = torch.randn(2, 4), torch.randn(2, 4), torch.randn(2, 1, 4)
    loss = NLLLoss()(queries, positives, negatives, Similarity("dot"), mask)
    scores = candidate_scores(queries, positives, negatives, Similarity("dot"), True).scores
    expected = torch.stack([torch.logsumexp(scores[0, [0, 2]], 0) - scores[0, 0],
                            torch.logsumexp(scores[1, :3], 0) - scores[1, 1]]).mean()
    torch.testing.assert_close(loss, expected)
