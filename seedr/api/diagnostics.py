"""``diagnose`` from Python: the papers' diagnostics of an encoder, beyond retrieval metrics
(``seedr diagnose``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from seedr.api.keywords import keywords_of
from seedr.pipeline import diagnose as diagnosing
from seedr.pipeline.diagnose import DiagnoseConfig


@dataclasses.dataclass(frozen=True)
class Diagnostics:
    """An encoder's diagnostics (``diagnose``), as written to ``diagnostics.json`` and ``.png``.

    Attributes:
        metrics: ``{name: value}``: random-pair cosine by length, alignment, uniformity, anisotropy, the
            decoded words' mass on common words, the decoder's reliance on [CLS], the held-out masked LM.
        details: what the metrics come from (a CPDAE run's top decoded words, per-position reliance ...).
        json: ``diagnostics.json`` (``seedr report`` reads its metrics).
        plot: ``diagnostics.png``.
    """

    metrics: dict[str, float]
    details: dict[str, Any]
    json: Path
    plot: Path


@keywords_of(DiagnoseConfig)
def diagnose(config: DiagnoseConfig) -> Diagnostics:
    """Diagnose an encoder as the papers do (``seedr diagnose``); writes ``out/diagnostics.json`` and ``.png``.

    With ``corpus``: the cosine of the [CLS] embeddings of random text pairs cut to each of ``lengths``
    (SEED-Encoder §3.2, Fig. 1(b): a strong decoder leaves long sequences cluttered, ~0.8); for a CPDAE run
    folder the top decoded words and their probability mass on common words (CPDAE §3.3); for a
    SEED-Encoder run folder the cosine of [CLS] with the decoder's states by position (§4.6.1, Fig. 4); for
    a run with an MLM head its held-out masked-LM loss and accuracy against the unigram plateau (give texts
    it did not train on; ``masked_lm_curve_steps``: every kept checkpoint). With ``positives``: alignment and
    uniformity (Wang & Isola, 2020) and anisotropy. The model may be a run folder (a ``TrainingRun``).

    Example:
        >>> found = seedr.diagnose("runs/cpdae", "runs/cpdae", corpus="wiki/enwiki-2015-00.jsonl.xz",
        ...                        positives="scifact")
        >>> found.metrics["random_pair_cosine@512"]
    """
    result, json_path, plot_path = diagnosing.run(config)
    return Diagnostics(result["metrics"], result["details"], json_path, plot_path)


__all__ = ["Diagnostics", "diagnose"]
