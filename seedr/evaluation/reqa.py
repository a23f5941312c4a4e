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

from collections.abc import Iterable, Iterator

from seedr.config.settings import ENCODE_BATCH_SIZE
from seedr.data.qa import ReqaCandidate
from seedr.data.records import Document, Qrels, Run
from seedr.evaluation.metrics import evaluate_run, per_query
from seedr.retrieval.encode import TextEncoder
from seedr.retrieval.faiss_index import DenseIndex

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
