"""The table of mined negatives (``negatives.jsonl`` + ``provenance.json``): per training query, a ranked
list of candidate negatives and where they came from. Negative strategies (``seedr.negatives``) write
it; DPR's training files come with one (``hard_negative_ctxs``, ``seedr.data.training_sets``); training
samples from it each epoch, and it is part of a run's resumable state.

``negatives.jsonl``: one line per query, ``{"query_id": ..., "negatives": [{"id", "rank", "score"}, ...]}``
with ``rank`` the 1-based rank of the document in the source ranking (positives counted, so ranks
have gaps where a positive was removed). ``provenance.json``: the strategy, the source (run file,
checkpoint, BM25 settings), the training step it was mined at, the depth and when.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from seedr.data.records import Qrels, Run
from seedr.data.runs import rank_documents
from seedr.io import DataError, atomic_directory, iter_jsonl, read_json, require

NEGATIVES_FILE = "negatives.jsonl"
PROVENANCE_FILE = "provenance.json"


def positives(qrels: Qrels) -> dict[str, set[str]]:
    """The documents labelled relevant (grade > 0) per query: never negatives. Judged-non-relevant
    documents (grade 0) are kept as candidates, as they are known negatives."""
    return {qid: {doc for doc, grade in judged.items() if grade > 0} for qid, judged in qrels.items()}


@dataclass(frozen=True, slots=True)
class MinedNegative:
    """A negative candidate and its rank (1-based, in the source ranking) and score there."""

    id: str
    rank: int
    score: float | None = None


@dataclass(frozen=True)
class FalseNegativeMargins:
    """Positive-aware mining of hard negatives (Moreira et al., "NV-Retriever", 2024, §3: hard negatives
    scored close to the positive by the mining model are often unlabelled positives).

    A candidate is dropped when the miner scores it above ``positive − absolute`` (TopK-MarginPos) or
    above ``positive × (1 − relative)`` (TopK-PercPos; NV-Retriever's best: 0.05, i.e. 95% of the
    positive's score), ``positive`` being the highest score of the query's labelled positives — the
    conservative choice when a query has several —, and the top ``depth`` of the candidates left are
    kept, as NV-Retriever selects its top-k below the threshold (and sentence-transformers'
    ``mine_hard_negatives`` with ``absolute_margin`` / ``relative_margin``, the same two options). The
    ranking must therefore reach deeper than ``depth``: dense mining searches ``SEARCH_FACTOR`` times
    deeper. The relative form assumes positive scores (cosine or BM25); a query whose positives the
    ranking does not score is left unfiltered and counted in the provenance.
    """

    absolute: float | None = None
    relative: float | None = None

    #: how much deeper than ``depth`` a miner ranks when filtering, so that ``depth`` candidates remain
    SEARCH_FACTOR: ClassVar[int] = 4

    def __post_init__(self) -> None:
        if self.relative is not None and not 0.0 <= self.relative < 1.0:
            raise ValueError(f"relative_margin must be in [0, 1), got {self.relative}")
        if self.absolute is not None and self.absolute < 0.0:
            raise ValueError(f"absolute_margin must be at least 0, got {self.absolute}")

    @property
    def active(self) -> bool:
        return self.absolute is not None or self.relative is not None

    def ceiling(self, positive: float) -> float:
        """The highest score a candidate may have and stay a negative."""
        limits = [positive - self.absolute if self.absolute is not None else float("inf"),
                  positive * (1.0 - self.relative) if self.relative is not None else float("inf")]
        return min(limits)

    def apply(self, candidates: dict[str, list[MinedNegative]], run: Run, relevant: dict[str, set[str]],
              depth: int) -> tuple[dict[str, list[MinedNegative]], dict[str, Any]]:
        """Each query's top ``depth`` of ``candidates`` (ranked, positives already out) scored at most its
        ceiling, and what was dropped on the way."""
        kept: dict[str, list[MinedNegative]] = {}
        dropped = unscored = short = 0
        for qid, ranked in candidates.items():
            scored = [run[qid][doc] for doc in relevant.get(qid, ()) if doc in run.get(qid, {})]
            if not scored:
                unscored += 1
                kept[qid] = ranked[:depth]
                continue
            ceiling = self.ceiling(max(scored))
            below = [n for n in ranked if n.score is None or n.score <= ceiling]
            dropped += len(ranked) - len(below)
            kept[qid] = below[:depth]
            short += len(kept[qid]) < depth
        summary = {"absolute_margin": self.absolute, "relative_margin": self.relative,
                   "ranked_depth": max((len(scores) for scores in run.values()), default=0),
                   "dropped": dropped, "queries_short_of_depth": short,
                   "queries_left_without_negatives": sum(not negatives for negatives in kept.values()),
                   "queries_without_positive_scores": unscored}
        return kept, summary


@dataclass
class NegativeTable:
    """Per-query ranked negative candidates + their provenance.

    ``provenance`` holds at least ``strategy`` and ``source``; mined tables add ``step`` (the training
    step of the model that mined them), ``checkpoint`` and ``depth``.
    """

    negatives: dict[str, list[MinedNegative]]
    provenance: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_run(cls, run: Run, qrels: Qrels, depth: int, provenance: dict[str, Any],
                 margins: FalseNegativeMargins | None = None) -> NegativeTable:
        """Negatives = each query's top ``depth`` documents of ``run`` minus its positives (DPR's
        "top BM25 passages that are not positives", ANCE's "top 200 minus positives"). With ``margins``:
        the top ``depth`` of the whole ranking once the positives and the candidates scored close to them
        are out (``FalseNegativeMargins``; the run must score the positives wherever they rank:
        ``DualEncoder.rank(..., score_also=...)``)."""
        relevant = positives(qrels)
        filtering = margins is not None and margins.active
        cut = None if filtering else depth  # filtering keeps the top depth of what is left: rank it all
        negatives = {
            qid: [MinedNegative(doc, rank, score)
                  for rank, (doc, score) in enumerate(rank_documents(scores)[:cut], start=1)
                  if doc not in relevant.get(qid, ())]
            for qid, scores in run.items()
        }
        provenance = {"depth": depth, "created": _now(), **provenance}
        if filtering:
            negatives, provenance["false_negative_filter"] = margins.apply(negatives, run, relevant, depth)
        return cls(negatives, provenance)

    def sample(self, query_id: str, count: int, rng: random.Random) -> list[str]:
        """``count`` negatives of ``query_id`` drawn uniformly from its candidates (without replacement;
        with replacement when it has fewer than ``count``, as tevatron does); none if it has none."""
        candidates = self.negatives.get(query_id, [])
        if not candidates or count <= 0:
            return []
        chosen = rng.sample(candidates, count) if len(candidates) >= count else rng.choices(candidates, k=count)
        return [negative.id for negative in chosen]

    def without(self, qrels: Qrels) -> NegativeTable:
        """The table with every labelled positive removed (a run file or a DPR file may list some)."""
        relevant = positives(qrels)
        return NegativeTable({qid: [n for n in candidates if n.id not in relevant.get(qid, ())]
                              for qid, candidates in self.negatives.items()}, dict(self.provenance))

    def __len__(self) -> int:
        return sum(len(candidates) for candidates in self.negatives.values())

    def save(self, directory: str | os.PathLike) -> Path:
        """Write ``negatives.jsonl`` + ``provenance.json`` into ``directory``, atomically (whole or not at all)."""
        with atomic_directory(directory) as temporary:
            with open(temporary / NEGATIVES_FILE, "w", encoding="utf-8") as stream:
                for qid, candidates in self.negatives.items():
                    record = {"query_id": qid, "negatives": [
                        {"id": n.id, "rank": n.rank, "score": n.score} for n in candidates]}
                    stream.write(json.dumps(record, ensure_ascii=False) + "\n")
            summary = {**self.provenance, "queries": len(self.negatives), "negatives": len(self)}
            (temporary / PROVENANCE_FILE).write_text(json.dumps(summary, indent=2, ensure_ascii=False))
        return Path(directory)

    @classmethod
    def load(cls, directory: str | os.PathLike) -> NegativeTable:
        """Read a table written by ``save``; bad lines raise a ``DataError`` naming file, line and field."""
        directory = Path(directory)
        path = directory / NEGATIVES_FILE
        negatives: dict[str, list[MinedNegative]] = {}
        for line, record in iter_jsonl(path):
            qid = require(record, "query_id", path, line)
            candidates = require(record, "negatives", path, line, kind=list, allow_empty=True)
            mined = []
            for entry in candidates:
                if not isinstance(entry, dict):
                    raise DataError(path, "expected objects with id, rank, score", line=line, field="negatives")
                rank = require(entry, "rank", path, line, kind=int)
                mined.append(MinedNegative(require(entry, "id", path, line), rank, entry.get("score")))
            negatives[qid] = mined
        provenance = read_json(directory / PROVENANCE_FILE)
        if not isinstance(provenance, dict) or "strategy" not in provenance:
            raise DataError(directory / PROVENANCE_FILE, "expected an object naming the strategy", field="strategy")
        for key in ("queries", "negatives"):  # derived counts, recomputed on save
            provenance.pop(key, None)
        return cls(negatives, provenance)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


__all__ = ["NEGATIVES_FILE", "PROVENANCE_FILE", "FalseNegativeMargins", "MinedNegative", "NegativeTable",
           "positives"]
