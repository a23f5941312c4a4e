"""The options of CPDAE pre-training (``objective.*``), torch-free: settings resolve without torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from seedr.config.settings import Pooling
from seedr.objectives.mlm.options import MLMConfig


@dataclass
class CpdaeConfig(MLMConfig):
    """Options of CPDAE pre-training (paper defaults).

    Attributes:
        contrast: ``"words"`` contrasts the decoded word distributions with −JS (CPDAE);
            ``"cls"`` contrasts the [CLS] vectors with cosine / temperature (CPDAE′).
        contrastive_weight: λ of eq. 6 (paper: 0.1); 0 is the "w/o CL" ablation.
        temperature: divides the similarities of eq. 5; None = the defaults above (1, i.e. none,
            for word distributions as in eq. 5; 0.05 for CPDAE′ as SimCSE).
        idf_rec: weight eq. 4's terms by IDF (the IDF-REC ablation); needs ``idf_path``.
        idf_path: a ``.npy`` of |V| IDF values written by ``seedr.objectives.cpdae.objective.save_idf``, or
            ``"auto"``: ``seedr pretrain`` computes it from its corpus (``Cpdae.complete_options``).
        reconstruction_reduction: ``"sum"`` over the vocabulary as eq. 4 writes it, or ``"mean"``
            (default; ``seedr.objectives.cpdae`` says why).
        contrastive_reduction: ``"sum"`` (default): eq. 5 summed over the m texts of the (global)
            batch as printed; ``"mean"``: averaged over its 2m anchor views (``seedr.objectives.cpdae.objective.twin_contrastive_loss``).
        global_in_batch: the negatives of eq. 5 are the views of the whole batch, gathered from every
            process (``seedr.losses.gather``; the paper's m = 64 is the global batch); ``false``: this
            process's views only.
        bottleneck: ``h`` of eq. 1, what the decoder (and CPDAE′'s contrast) reads: ``"cls"`` (the
            paper) or ``"mean"`` (masked mean of the encoder states, for mean-pooling encoders); the
            saved encoder records it as its pooling.
    """

    trained_representation: ClassVar[str] = "CPDAE's {pooling} bottleneck"

    contrast: Literal["words", "cls"] = "words"
    contrastive_weight: float = 0.1
    temperature: float | None = None
    idf_rec: bool = False
    idf_path: str | None = None
    reconstruction_reduction: Literal["sum", "mean"] = "mean"
    contrastive_reduction: Literal["sum", "mean"] = "sum"
    global_in_batch: bool = True
    bottleneck: Pooling = "cls"

    def __post_init__(self) -> None:
        if self.bottleneck not in ("cls", "mean"):
            raise ValueError(f"bottleneck must be 'cls' or 'mean', got {self.bottleneck!r}")
        super().__post_init__()
        if self.contrastive_weight < 0:
            raise ValueError(f"contrastive_weight must be ≥ 0, got {self.contrastive_weight}")
        if self.temperature is not None and self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if self.idf_rec and not self.idf_path:
            raise ValueError("idf_rec needs idf_path: a .npy written by "
                             "seedr.objectives.cpdae.objective.save_idf(path, compute_idf(token_id_lists, vocab_size))")

    @property
    def views(self) -> int:
        """Masked views per text: two for the contrastive loss, one without it."""
        return 2 if self.contrastive_weight > 0 else 1

    @property
    def effective_temperature(self) -> float:
        if self.temperature is not None:
            return self.temperature
        return 1.0 if self.contrast == "words" else 0.05
