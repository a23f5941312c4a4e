"""What every negative strategy is, and the table of mined negatives they produce.

A strategy mines, for each training query, a ranked list of candidate negatives — documents a
retriever (BM25, a dense checkpoint, a given run file) ranks high that are not labelled relevant —
and records where they came from. Training then samples from that list each epoch. The table is
written to disk (``negatives.jsonl`` + ``provenance.json``) and is part of a run's resumable state.

``negatives.jsonl``: one line per query, ``{"query_id": ..., "negatives": [{"id", "rank", "score"}, ...]}``
with ``rank`` the 1-based rank of the document in the source ranking (positives counted, so ranks
have gaps where a positive was removed). ``provenance.json``: the strategy, the source (run file,
checkpoint, BM25 settings), the training step it was mined at, the depth and when.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from seedr.data.io import DataError, atomic_directory, iter_jsonl, read_json, require
from seedr.data.records import Document, Qrels, Run
from seedr.registry import Registry
from seedr.retrieval.runs import rank_documents

if TYPE_CHECKING:
    from seedr.modeling.dual_encoder import DualEncoder
    from seedr.training.trainer import Callback

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


@dataclass
class NegativeTable:
    """Per-query ranked negative candidates + their provenance.

    ``provenance`` holds at least ``strategy`` and ``source``; mined tables add ``step`` (the training
    step of the model that mined them), ``checkpoint`` and ``depth``.
    """

    negatives: dict[str, list[MinedNegative]]
    provenance: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_run(cls, run: Run, qrels: Qrels, depth: int, provenance: dict[str, Any]) -> NegativeTable:
        """Negatives = each query's top ``depth`` documents of ``run`` minus its positives (DPR's
        "top BM25 passages that are not positives", ANCE's "top 200 minus positives")."""
        relevant = positives(qrels)
        negatives = {
            qid: [MinedNegative(doc, rank, score)
                  for rank, (doc, score) in enumerate(rank_documents(scores)[:depth], start=1)
                  if doc not in relevant.get(qid, ())]
            for qid, scores in run.items()
        }
        return cls(negatives, {"depth": depth, "created": _now(), **provenance})

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


class NegativeStrategy:
    """Base class of negative strategies; subclasses set ``name`` and implement ``mine``.

    ``mine(corpus, queries, qrels, model, model_source, given=None)`` returns the ``NegativeTable`` for
    the training queries. ``model`` is the dual encoder about to be fine-tuned (strategies that mine
    with "the current model" use it), ``model_source`` says where its weights came from (for the
    provenance), ``given`` are negatives that came with the training data (DPR's
    ``hard_negative_ctxs``). ``hard_negatives`` is ``False`` for strategies that add none (in-batch).
    Strategies that change the negatives during training (ANCE) serve the data in episodes of
    ``episode_steps`` optimizer steps and return the trainer callbacks that refresh them.
    """

    name: ClassVar[str] = ""
    hard_negatives: ClassVar[bool] = True
    #: where, in a run folder, the initial table is written
    negatives_folder: ClassVar[str] = "negatives"
    episode_steps: int | None = None

    def mine(self, corpus: Mapping[str, Document], queries: Mapping[str, str], qrels: Qrels,
             model: DualEncoder | None, model_source: str, given: NegativeTable | None = None) -> NegativeTable:
        raise NotImplementedError(f"{type(self).__name__} does not define mine")

    def options(self) -> dict[str, Any]:
        """The strategy's effective options (recorded in the provenance)."""
        return {}

    def callbacks(self, data: RefreshableData, corpus: Mapping[str, Document], queries: Mapping[str, str],
                  qrels: Qrels, run_dir: Path) -> list[Callback]:
        """Trainer callbacks that change the negatives during training (none by default)."""
        return []


class RefreshableData(Protocol):
    """Training data whose negatives can be replaced between epochs (``FinetuneData``)."""

    def use_negatives(self, table: NegativeTable, directory: Path) -> None: ...


def dense_negatives(model: DualEncoder, corpus: Mapping[str, Document], queries: Mapping[str, str], qrels: Qrels,
                    depth: int, provenance: dict[str, Any], batch_size: int = 64) -> NegativeTable:
    """Mine with a dense model: encode the corpus and the queries, search exactly (faiss Flat), keep
    each query's top ``depth`` minus positives. The encode → index → search → mine step of ANCE
    (Xiong et al. 2021, §4) and of static hard negatives from a trained model (CPDAE §4.1, after STAR)."""
    run = model.rank(corpus, queries, depth, batch_size=batch_size, show_progress=True)
    return NegativeTable.from_run(run, qrels, depth, provenance)


NEGATIVES: Registry[type[NegativeStrategy]] = Registry("negative strategy")
