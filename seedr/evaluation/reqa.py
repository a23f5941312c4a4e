"""ReQA evaluation (Ahmad et al. 2019, "ReQA: An Evaluation for End-to-End Answer Retrieval Models";
Chang et al., ICLR 2020, sec. 4.1 and Tables 3–4).

Each question is matched against every (sentence, paragraph) candidate of the collection; a hit is a
gold candidate — the sentence holding its answer, with its paragraph — as the qrels of
``seedr.data.qa.reqa_candidates`` define them (ICLR 2020, footnote 3: the gold pair, "not just any
paragraph containing the answer text"). Recall@k is the fraction of questions with a gold candidate in
the top k (ReQA's definition; ``Success@k`` in ``ir_measures`` terms — identical to recall of the gold
pair when a question has one), reported at k = 1, 5, 10, 50, 100 as in Table 3, with MRR (mean
reciprocal rank of the first gold candidate, no cut-off; ReQA's other metric). Questions the run does
not answer count as misses.

Candidates are encoded as the pair (sentence, paragraph) by dense models (the document tower's input
in Chang et al.); BM25 indexes the sentence followed by its paragraph (``lexical_documents``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from seedr.config.settings import ENCODE_BATCH_SIZE
from seedr.data.qa import ReqaCandidate, read_squad, reqa_candidates
from seedr.data.records import Document, Qrels, Run
from seedr.evaluation.chance import chance_levels
from seedr.evaluation.metrics import evaluate_run, per_query
from seedr.evaluation.tasks import EvaluationTask
from seedr.retrieval.faiss_index import DenseIndex

if TYPE_CHECKING:  # the encoder is the caller's: scoring a ReQA run needs no torch
    from seedr.retrieval.encode import TextEncoder

RECALL_KS = (1, 5, 10, 50, 100)
#: Report name → ``ir_measures`` name.
REQA_METRICS = {**{f"R@{k}": f"Success@{k}" for k in RECALL_KS}, "MRR": "RR"}


def reqa_per_query(run: Run, qrels: Qrels) -> dict[str, dict[str, float]]:
    """``{metric: {qid: value}}`` of the ReQA metrics, for significance tests."""
    values = per_query(run, qrels, list(REQA_METRICS.values()))
    return {name: values[measure] for name, measure in REQA_METRICS.items()}


def evaluate_reqa(run: Run, qrels: Qrels) -> dict[str, float]:
    """ReQA Recall@1/5/10/50/100 and MRR of a question → candidate run, as fractions (not %)."""
    means = evaluate_run(run, qrels, list(REQA_METRICS.values()))
    return {name: means[measure] for name, measure in REQA_METRICS.items()}


def index_candidates(encoder: TextEncoder, candidates: list[ReqaCandidate], batch_size: int = ENCODE_BATCH_SIZE,
                     show_progress: bool = False) -> DenseIndex:
    """An exact (Flat) index of ReQA candidates, each encoded as the pair (sentence, paragraph)."""
    vectors = encoder.encode([c.text for c in candidates], batch_size, show_progress,
                             text_pairs=[c.context for c in candidates])
    return DenseIndex.build(vectors, [c.id for c in candidates], encoder=encoder.settings())


def lexical_documents(candidates: Iterable[ReqaCandidate]) -> Iterator[Document]:
    """BM25's view of ReQA candidates: the sentence, then its paragraph, as one text."""
    for candidate in candidates:
        yield Document(candidate.id, f"{candidate.text} {candidate.context}")


class ReqaTask(EvaluationTask):
    """ReQA on a SQuAD file (ICLR 2020 §4.1): every question against every (sentence, paragraph)
    candidate; ``R@1/5/10/50/100`` and ``MRR`` (``seedr.evaluation.reqa``)."""

    kind = "reqa"
    ranked = "candidates a question"

    def __init__(self, squad: str | Path, metrics: Sequence[str] | None = None,
                 max_articles: int | None = None) -> None:
        super().__init__(list(REQA_METRICS) if metrics is None else metrics)
        unknown = sorted(set(self.metrics) - set(REQA_METRICS))
        if unknown:
            raise ValueError(f"ReQA reports {', '.join(REQA_METRICS)}; not {unknown}")
        self.squad, self.max_articles = squad, max_articles

    @functools.cached_property
    def _data(self) -> tuple:
        return reqa_candidates(read_squad(self.squad)[: self.max_articles])

    @property
    def candidates(self) -> list:
        """The (sentence, paragraph) candidates, ``seedr.data.qa.ReqaCandidate``."""
        return self._data[0]

    def queries(self) -> dict[str, str]:
        return self._data[1]

    def documents(self) -> Iterable[Document]:
        """BM25's view of the candidates: the sentence, then its paragraph, as one text."""
        return lexical_documents(self.candidates)

    def index(self, encoder: TextEncoder, batch_size: int = ENCODE_BATCH_SIZE,
              show_progress: bool = False) -> DenseIndex:
        """An exact index of the candidates encoded as (sentence, paragraph) pairs by ``encoder``."""
        return index_candidates(encoder, self.candidates, batch_size, show_progress=show_progress)

    def cutoff(self, metric: str) -> int:
        return super().cutoff(REQA_METRICS[metric])

    def per_query(self, run: Run, show_progress: bool = False) -> dict[str, dict[str, float]]:
        values = reqa_per_query(run, self._data[2])
        return {metric: values[metric] for metric in self.metrics}

    def chance(self, depth: int = 100) -> dict[str, float | None]:
        pool = {candidate.id for candidate in self.candidates}
        levels = chance_levels([REQA_METRICS[metric] for metric in self.metrics], pool, self._data[2], depth)
        return {metric: levels[REQA_METRICS[metric]] for metric in self.metrics}
