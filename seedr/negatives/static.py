"""Static hard negatives: mined once from a given retrieval run or model, then fixed for training
(optionally repeated in rounds: mine → fine-tune → mine with the new model → ..., as CPDAE)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from seedr.config.settings import ENCODE_BATCH_SIZE
from seedr.data.records import Document, Qrels
from seedr.data.runs import read_trec_run
from seedr.io import DataError
from seedr.negatives.base import (
    NEGATIVES,
    FalseNegativeMargins,
    NegativeStrategy,
    NegativeTable,
    dense_negatives,
)
from seedr.retrieval.dual_encoder import DualEncoder


@NEGATIVES.register("static")
class StaticNegatives(NegativeStrategy):
    """Negatives from the top ``depth`` of a fixed ranking, positives removed.

    CPDAE (Ma et al., CIKM 2022, §4.1 "Fine-tuning details") trains "with static hard negatives using
    the BM25 warm-up model following [STAR, Zhan et al. SIGIR 2021]", then "iteratively mine[s] the static
    hard negatives using the current model twice and fine-tune[s] the model for 1 epoch in each
    iteration". STAR samples them from the top 200 of the warm-up model.

    The ranking comes from, in order of precedence: ``run``, a TREC run file (e.g. made by
    ``seedr search`` with any model, or BM25); ``model``, a model folder to mine with (encode the
    corpus, exact search); the hard negatives that came with the training data (a DPR file's
    ``hard_negative_ctxs``); otherwise the model being fine-tuned, as it is when mining starts.
    ``rounds`` > 1 repeats mine → train: rounds after the first mine with the model the previous round
    produced (``seedr.training.finetune`` runs the rounds). ``relative_margin`` / ``absolute_margin``
    drop the candidates scored close to the query's positive, which are likely unlabelled positives
    (positive-aware mining, NV-Retriever §3: ``seedr.data.negatives.FalseNegativeMargins``); from a run
    file, only queries whose positives the run scores are filtered.

    Args:
        run: TREC run file over the training queries.
        model: model folder to mine with (``run`` wins when both are given).
        depth: ranks per query the negatives are taken from (STAR: 200); with a margin, the number of
            candidates kept below it, from a ranking ``FalseNegativeMargins.SEARCH_FACTOR`` times deeper.
        rounds: mine/fine-tune rounds (CPDAE on MS MARCO documents: 1 warm-up + 2 re-mined).
        batch_size: encoding batch size when mining with a model.
        relative_margin: drop candidates scored above (1 − this) × the positive's score (NV-Retriever's
            TopK-PercPos: 0.05).
        absolute_margin: drop candidates scored above the positive's score minus this (TopK-MarginPos).
    """

    name = "static"

    def __init__(self, run: str | None = None, model: str | None = None, depth: int = 200, rounds: int = 1,
                 batch_size: int = ENCODE_BATCH_SIZE, relative_margin: float | None = None,
                 absolute_margin: float | None = None) -> None:
        if depth < 1 or rounds < 1:
            raise ValueError(f"static negatives: depth and rounds must be at least 1, got {depth} and {rounds}")
        self.run, self.model, self.depth, self.rounds, self.batch_size = run, model, depth, rounds, batch_size
        self.margins = FalseNegativeMargins(absolute=absolute_margin, relative=relative_margin)

    def options(self) -> dict[str, Any]:
        return {"run": self.run, "model": self.model, "depth": self.depth, "rounds": self.rounds,
                "relative_margin": self.margins.relative, "absolute_margin": self.margins.absolute}

    def mine(self, corpus: Mapping[str, Document], queries: Mapping[str, str], qrels: Qrels,
             model: DualEncoder | None, model_source: str, given: NegativeTable | None = None) -> NegativeTable:
        if self.run is not None:
            return self._from_run_file(Path(self.run), corpus, queries, qrels)
        if self.model is None and given is not None:
            if self.margins.active:
                raise ValueError("relative_margin / absolute_margin need the miner's scores: a given table "
                                 "(e.g. DPR's hard_negative_ctxs) has none; mine with model=... or run=...")
            return given
        if self.model is not None:
            model_source = str(self.model)
            lengths = {"query_max_length": model.query_max_length,
                       "document_max_length": model.document_max_length} if model is not None else {}
            model = DualEncoder.from_pretrained(self.model, **lengths)
        if model is None:
            raise ValueError("static negatives come from a run file (run=...), a model folder (model=...), the "
                             "training data's own hard negatives, or the model being fine-tuned: none was given")
        return dense_negatives(model, corpus, queries, qrels, self.depth, {
            "strategy": self.name, "source": f"dense retrieval with {model_source}",
            "checkpoint": model_source, "step": 0}, batch_size=self.batch_size, margins=self.margins)

    def _from_run_file(self, path: Path, corpus: Mapping[str, Document], queries: Mapping[str, str],
                       qrels: Qrels) -> NegativeTable:
        run = {qid: scores for qid, scores in read_trec_run(path).items() if qid in queries}
        if not run:
            raise DataError(path, "the run ranks none of the training queries")
        for qid, scores in run.items():
            unknown = next((doc for doc in scores if doc not in corpus), None)
            if unknown is not None:
                raise DataError(path, f"document {unknown!r} (query {qid!r}) is not in the training corpus: "
                                      "was the run made on another corpus?", field="docid")
        return NegativeTable.from_run(run, qrels, self.depth, {
            "strategy": self.name, "source": f"TREC run {path}", "run": str(path), "checkpoint": None, "step": 0},
            self.margins)
