"""ANCE: negatives from the model being trained, refreshed as it trains (Xiong et al., ICLR 2021)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seedr.config.settings import ENCODE_BATCH_SIZE, MAX_LENGTH, QUERY_MAX_LENGTH
from seedr.data.records import Document, Qrels
from seedr.engine.checkpoint import PRODUCT, TRAINER_STATE, checkpoint_path, read_position
from seedr.engine.trainer import Callback
from seedr.io import check_output
from seedr.negatives.base import (
    NEGATIVES,
    PROVENANCE_FILE,
    NegativeStrategy,
    NegativeTable,
    RefreshableData,
    dense_negatives,
)
from seedr.retrieval.dual_encoder import DualEncoder

if TYPE_CHECKING:
    from seedr.engine.trainer import Trainer

REFRESHES = "ance"
_REFRESH_FOLDER = re.compile(r"^refresh-(\d+)$")


def refresh_folder(run_dir: str | Path, step: int) -> Path:
    """Where the negatives mined at training step ``step`` live: ``<run>/ance/refresh-<step>/``."""
    return Path(run_dir) / REFRESHES / f"refresh-{step}"


def _provenance(step: int, checkpoint: str, **extra: Any) -> dict[str, Any]:
    return {"strategy": "ance", "source": f"dense retrieval (faiss Flat) with {checkpoint}", "checkpoint": checkpoint,
            "step": step, **extra}


@NEGATIVES.register("ance")
class AnceNegatives(NegativeStrategy):
    """Every ``refresh_every`` steps: encode the corpus with the current checkpoint, rebuild the index,
    search the training queries, and sample negatives from each query's top ``depth`` minus its positives.

    ANCE (Xiong et al., ICLR 2021, §4 and Eq. 4–5) samples from the top 200 of an ANN index that an
    asynchronous process refreshes from the latest checkpoint (every 10k training batches in its MS MARCO
    runs); SEED-Encoder fine-tunes with it ("ANCE (FirstP)", Lu et al. 2021 §4.1). The first negatives
    are mined with the starting model (ANCE starts from a BM25-negative warm-up checkpoint).

    Training is served in episodes of ``refresh_every`` steps; each episode uses the latest refresh. With
    ``inline`` (one CPU or GPU) the refresh runs in the training process with the in-memory weights at
    that step, which are those of ``checkpoints/step-<N>``. Otherwise another process mines
    (``seedr finetune --ance-refresh-only --model <run>/checkpoints/step-<N> ...`` into
    ``<run>/ance/refresh-<N>``) and each episode starts with the newest refresh present — ANCE's own
    asynchronous set-up. Every refresh is a folder ``ance/refresh-<N>/{negatives.jsonl, provenance.json}``
    naming the checkpoint (and step) that mined it.

    Args:
        refresh_every: optimizer steps between refreshes (ANCE: 10,000).
        depth: the ranks negatives are drawn from (ANCE: 200).
        inline: refresh inside the training process (else: pick up refreshes made elsewhere).
        batch_size: encoding batch size.
    """

    name = "ance"
    negatives_folder = f"{REFRESHES}/refresh-0"

    def __init__(self, refresh_every: int = 10_000, depth: int = 200, inline: bool = True,
                 batch_size: int = ENCODE_BATCH_SIZE) -> None:
        if refresh_every < 1 or depth < 1:
            raise ValueError(f"ance: refresh_every and depth must be at least 1, got {refresh_every} and {depth}")
        self.refresh_every, self.depth, self.inline, self.batch_size = refresh_every, depth, inline, batch_size
        self.episode_steps = refresh_every

    def options(self) -> dict[str, Any]:
        return {"refresh_every": self.refresh_every, "depth": self.depth, "inline": self.inline}

    def mine(self, corpus: Mapping[str, Document], queries: Mapping[str, str], qrels: Qrels,
             model: DualEncoder | None, model_source: str, given: NegativeTable | None = None) -> NegativeTable:
        return dense_negatives(model, corpus, queries, qrels, self.depth, _provenance(0, model_source),
                               batch_size=self.batch_size)

    def callbacks(self, data: RefreshableData, corpus: Mapping[str, Document], queries: Mapping[str, str],
                  qrels: Qrels, run_dir: Path) -> list[Callback]:
        return [AnceRefresh(self, data, corpus, queries, qrels, run_dir)]


class AnceRefresh(Callback):
    """The trainer side of ANCE: at the end of every episode, switch the data to fresh negatives.

    Logs ``ance/refresh`` (the step whose weights mined the negatives now in use), ``ance/negatives``
    (their number) and ``ance/changed`` (the share of (query, negative) pairs that were not in the
    previous table): how far the model has moved from what mined its last negatives.
    """

    def __init__(self, strategy: AnceNegatives, data: RefreshableData, corpus: Mapping[str, Document],
                 queries: Mapping[str, str], qrels: Qrels, run_dir: Path) -> None:
        self.strategy, self.data, self.run_dir = strategy, data, Path(run_dir)
        self.corpus, self.queries, self.qrels = corpus, queries, qrels

    def on_step_end(self, trainer: Trainer, step: int) -> dict[str, float] | None:
        if step % self.strategy.refresh_every or step >= trainer.config.max_steps:
            return None
        directory = refresh_folder(self.run_dir, step)
        if self.strategy.inline:
            if trainer.accelerator.is_main_process:
                checkpoint = checkpoint_path(self.run_dir, step) / PRODUCT
                provenance = _provenance(step, str(checkpoint.relative_to(self.run_dir)),
                                         weights=f"the in-memory model at step {step} (saved as that checkpoint "
                                                 f"when the step is a checkpoint step)")
                dense_negatives(trainer.unwrapped_model(), self.corpus, self.queries, self.qrels,
                                self.strategy.depth, provenance, batch_size=self.strategy.batch_size).save(directory)
            trainer.accelerator.wait_for_everyone()
        else:
            directory = latest_refresh(self.run_dir, up_to=step)
        previous = getattr(self.data, "table", None)
        if directory is None or directory == getattr(self.data, "table_dir", None):
            return None
        table = NegativeTable.load(directory)
        self.data.use_negatives(table, directory)
        return {"ance/refresh": float(table.provenance.get("step", step)), "ance/negatives": float(len(table)),
                "ance/changed": changed_share(previous, table) if previous is not None else 1.0}


def changed_share(old: NegativeTable, new: NegativeTable) -> float:
    """Share of the new table's (query, negative) pairs absent from the old one."""
    old_pairs = {(qid, n.id) for qid, candidates in old.negatives.items() for n in candidates}
    new_pairs = {(qid, n.id) for qid, candidates in new.negatives.items() for n in candidates}
    return len(new_pairs - old_pairs) / len(new_pairs) if new_pairs else 0.0


def latest_refresh(run_dir: str | Path, up_to: int | None = None) -> Path | None:
    """The newest complete ``ance/refresh-<N>`` folder of a run (N ≤ ``up_to``), or ``None``."""
    root = Path(run_dir) / REFRESHES
    found = []
    for folder in root.iterdir() if root.is_dir() else ():
        match = _REFRESH_FOLDER.match(folder.name)
        if match and (folder / PROVENANCE_FILE).exists() and (up_to is None or int(match.group(1)) <= up_to):
            found.append((int(match.group(1)), folder))
    return max(found)[1] if found else None


def ance_refresh(checkpoint: str | Path, corpus: Mapping[str, Document], queries: Mapping[str, str], qrels: Qrels,
                 out_dir: str | Path | None = None, top: int = 200, step: int | None = None, batch_size: int = ENCODE_BATCH_SIZE,
                 query_max_length: int = QUERY_MAX_LENGTH, document_max_length: int = MAX_LENGTH) -> Path:
    """One ANCE refresh as a stage of its own: encode the corpus with ``checkpoint``, build the index,
    search ``queries``, keep each one's top ``top`` minus its positives; write ``negatives.jsonl`` and
    ``provenance.json`` (which checkpoint, which step) into ``out_dir`` and return it.

    ``checkpoint`` is a model folder or a trainer checkpoint ``<run>/checkpoints/step-<N>`` (its
    ``encoder/`` is used and N is the step); ``out_dir`` defaults to ``<run>/ance/refresh-<N>``, where a
    training run with ``inline: false`` picks it up.
    """
    checkpoint = Path(checkpoint)
    if (checkpoint / TRAINER_STATE).exists():
        step = read_position(checkpoint)["step"] if step is None else step
        if out_dir is None:
            out_dir = refresh_folder(checkpoint.parent.parent, step)
    if out_dir is None:
        raise ValueError(f"{checkpoint} is not a trainer checkpoint (no {TRAINER_STATE}): give the output folder")
    # a refresh replaces its folder whole: never another kind of folder (a run given as --out by mistake)
    check_output(out_dir, "negatives", replaces=True, overwrite=True)
    model = DualEncoder.from_pretrained(checkpoint, query_max_length=query_max_length,
                                       document_max_length=document_max_length)
    table = dense_negatives(model, corpus, queries, qrels, top, _provenance(step or 0, str(checkpoint)),
                            batch_size=batch_size)
    return table.save(out_dir)
