"""BM25 negatives: top BM25 results that are not positives (SEED-Encoder's "Siamese (BM25 Neg)")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from seedr.data.records import Document, Qrels
from seedr.negatives.base import NEGATIVES, NegativeStrategy, NegativeTable
from seedr.retrieval.bm25 import BM25Index

if TYPE_CHECKING:
    from seedr.retrieval.dual_encoder import DualEncoder


@NEGATIVES.register("bm25")
class BM25Negatives(NegativeStrategy):
    """Negatives sampled from each query's top ``depth`` BM25 documents, positives removed.

    SEED-Encoder (Lu et al., EMNLP 2021, §4.1): "BM25 Neg, which uses top 100 BM25 retrieved results as
    negative samples and performs similar to DPR"; DPR (Karpukhin et al. 2020, §3.2) takes the top BM25
    passages that do not contain the answer. Each epoch draws a fresh sample of the table (see
    ``NegativeTable.sample``), so over training a query meets many of its 100 candidates.

    Args:
        depth: how many BM25 results per query the negatives come from (100 in SEED-Encoder).
        k1, b: BM25 parameters (``seedr.retrieval.bm25`` defaults: Anserini's 0.9 / 0.4).
    """

    name = "bm25"

    def __init__(self, depth: int = 100, k1: float = 0.9, b: float = 0.4) -> None:
        if depth < 1:
            raise ValueError(f"bm25 negatives: depth must be at least 1, got {depth}")
        self.depth, self.k1, self.b = depth, k1, b

    def options(self) -> dict[str, Any]:
        return {"depth": self.depth, "k1": self.k1, "b": self.b}

    def mine(self, corpus: Mapping[str, Document], queries: Mapping[str, str], qrels: Qrels,
             model: DualEncoder | None, model_source: str, given: NegativeTable | None = None) -> NegativeTable:
        index = BM25Index.build(corpus.values(), k1=self.k1, b=self.b, show_progress=True)
        run = index.search(dict(queries), k=self.depth, show_progress=True)
        return NegativeTable.from_run(run, qrels, self.depth, {
            "strategy": self.name, "source": f"BM25 over the {len(corpus)}-document training corpus",
            "bm25": asdict(index.settings), "step": 0, "checkpoint": None})
