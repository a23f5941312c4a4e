"""In-batch negatives: no mined negatives; each query's negatives are the batch's other documents."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from seedr.data.records import Document, Qrels
from seedr.negatives.base import NEGATIVES, NegativeStrategy, NegativeTable

if TYPE_CHECKING:
    from seedr.retrieval.dual_encoder import DualEncoder


@NEGATIVES.register("in_batch")
class InBatchNegatives(NegativeStrategy):
    """DPR's in-batch training (Karpukhin et al., EMNLP 2020, §3.2): the positives of the other B − 1
    queries of a batch are each query's negatives, at no extra encoding cost. Use it with a loss whose
    in-batch option is on (``nll`` by default). To add mined hard negatives to the in-batch ones (DPR's
    best setting: one BM25 negative per question + in-batch), use ``bm25``/``static``/``ance`` with ``nll``.
    """

    name = "in_batch"
    hard_negatives = False

    def mine(self, corpus: Mapping[str, Document], queries: Mapping[str, str], qrels: Qrels,
             model: DualEncoder | None, model_source: str, given: NegativeTable | None = None) -> NegativeTable:
        return NegativeTable({}, {"strategy": self.name, "source": "the other documents of each training batch"})
