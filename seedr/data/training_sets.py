"""Labelled training data for fine-tuning a retriever, read from the formats users have: a BEIR folder
(``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``) or DPR's retriever JSON (questions with
positive, negative and hard-negative contexts; its hard negatives come as a ``NegativeTable``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from seedr.data.corpus import load_corpus
from seedr.data.negatives import MinedNegative, NegativeTable
from seedr.data.qa import read_dpr
from seedr.data.queries import read_qrels, read_queries
from seedr.data.records import Document, Qrels
from seedr.io import DataError
from seedr.registry import Registry


@dataclass
class TrainingSet:
    """Labelled training data: the corpus, the training queries, their relevance labels, and the hard
    negatives that came with the data, if any (DPR's ``hard_negative_ctxs``)."""

    corpus: dict[str, Document]
    queries: dict[str, str]
    qrels: Qrels
    source: str
    given_negatives: NegativeTable | None = None

    def restricted_to(self, query_ids: Sequence[str]) -> TrainingSet:
        """The same data for a subset of the queries (few-shot); the corpus is kept whole."""
        kept = set(query_ids)
        given = self.given_negatives
        if given is not None:
            given = NegativeTable({q: n for q, n in given.negatives.items() if q in kept}, given.provenance)
        return TrainingSet(self.corpus, {q: t for q, t in self.queries.items() if q in kept},
                           {q: j for q, j in self.qrels.items() if q in kept}, self.source, given)


#: Readers of training data by format; ``load_training_set`` picks ``beir`` for a folder, ``dpr`` for a file.
TRAINING_FORMATS: Registry[Callable[[Path, str], TrainingSet]] = Registry("training data format")


@TRAINING_FORMATS.register("beir")
def _read_beir(path: Path, split: str) -> TrainingSet:
    corpus = load_corpus(path / "corpus.jsonl")
    queries = read_queries(path / "queries.jsonl")
    qrels_path = path / "qrels" / f"{split}.tsv"
    qrels = read_qrels(qrels_path, queries=queries, documents=corpus)
    labelled = {qid: judged for qid, judged in qrels.items() if any(grade > 0 for grade in judged.values())}
    if not labelled:
        raise DataError(qrels_path, "no query has a relevant document (grade > 0) to train on")
    return TrainingSet(corpus, {qid: queries[qid] for qid in labelled}, labelled, f"BEIR {path} ({split})")


@TRAINING_FORMATS.register("dpr")
def _read_dpr(path: Path, split: str) -> TrainingSet:
    """DPR's retriever JSON: the corpus is every context the file lists; questions without a positive
    are left out, as DPR's own loader does; ``hard_negative_ctxs`` become the given negatives."""
    corpus: dict[str, Document] = {}
    queries: dict[str, str] = {}
    qrels: Qrels = {}
    given: dict[str, list[MinedNegative]] = {}
    for example in read_dpr(path):
        for document in (*example.positives, *example.hard_negatives, *example.negatives):
            corpus.setdefault(document.id, document)
        if not example.positives:
            continue
        queries[example.id] = example.question
        qrels[example.id] = {document.id: 1 for document in example.positives}
        given[example.id] = [MinedNegative(document.id, rank) for rank, document in
                             enumerate(example.hard_negatives, start=1)]
    if not queries:
        raise DataError(path, "no question has a positive context to train on", field="positive_ctxs")
    table = NegativeTable(given, {"strategy": "static", "source": f"hard_negative_ctxs of {path} (BM25, DPR)",
                                  "checkpoint": None, "step": 0}).without(qrels)
    return TrainingSet(corpus, queries, qrels, f"DPR {path}", table)


def training_format(path: str | Path) -> str:
    """The format of the training data at ``path``: ``beir`` for a folder, ``dpr`` for a file; a ``DataError``
    when there is neither (``seedr.api.finetune`` asks it before anything loads)."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, "no such file or folder (expected a BEIR folder or a DPR JSON file)")
    return "beir" if path.is_dir() else "dpr"


def load_training_set(path: str | Path, split: str = "train") -> TrainingSet:
    """A BEIR folder (corpus, queries, ``qrels/<split>.tsv``) or a DPR retriever JSON file."""
    return TRAINING_FORMATS.get(training_format(path))(Path(path), split)


__all__ = ["TRAINING_FORMATS", "TrainingSet", "load_training_set", "training_format"]
