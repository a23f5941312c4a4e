"""What every negative strategy is, and the table of mined negatives they produce.

A strategy mines, for each training query, a ranked list of candidate negatives — documents a
retriever (BM25, a dense checkpoint, a given run file) ranks high that are not labelled relevant —
and records where they came from. Training then samples from that list each epoch. The table, its
on-disk form and its provenance are ``seedr.data.negatives`` (re-exported here).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from seedr.config.settings import ENCODE_BATCH_SIZE
from seedr.data.negatives import (
    NEGATIVES_FILE,
    PROVENANCE_FILE,
    FalseNegativeMargins,
    MinedNegative,
    NegativeTable,
    positives,
)
from seedr.data.records import Document, Qrels
from seedr.registry import Registry

if TYPE_CHECKING:
    from seedr.engine.trainer import Callback
    from seedr.retrieval.dual_encoder import DualEncoder


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
                    depth: int, provenance: dict[str, Any], batch_size: int = ENCODE_BATCH_SIZE,
                    margins: FalseNegativeMargins | None = None) -> NegativeTable:
    """Mine with a dense model: encode the corpus and the queries, search exactly (faiss Flat), keep
    each query's top ``depth`` minus positives. The encode → index → search → mine step of ANCE
    (Xiong et al. 2021, §4) and of static hard negatives from a trained model (CPDAE §4.1, after STAR).
    With ``margins`` the search goes deeper, the positives are scored too, wherever they rank, and the
    top ``depth`` candidates not scored close to them are kept (positive-aware mining,
    ``FalseNegativeMargins``)."""
    filtering = margins is not None and margins.active
    ranked = min(len(corpus), depth * FalseNegativeMargins.SEARCH_FACTOR) if filtering else depth
    run = model.rank(corpus, queries, ranked, batch_size=batch_size, show_progress=True,
                     score_also=positives(qrels) if filtering else None)
    return NegativeTable.from_run(run, qrels, depth, provenance, margins)


NEGATIVES: Registry[type[NegativeStrategy]] = Registry("negative strategy")

__all__ = ["NEGATIVES", "NEGATIVES_FILE", "PROVENANCE_FILE", "FalseNegativeMargins", "MinedNegative",
           "NegativeStrategy", "NegativeTable", "RefreshableData", "dense_negatives", "positives"]
