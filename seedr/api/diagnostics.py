"""``diagnose`` from Python: the papers' diagnostics of an encoder, beyond retrieval metrics
(``seedr diagnose``)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seedr.api.arguments import checks_arguments
from seedr.pipeline.common import Paths, input_paths, locked, model_name, path_strings
from seedr.config.settings import DIAGNOSE_BATCH_SIZE
from seedr.io import check_output

#: The sequence lengths of SEED-Encoder's Figure 1(b), [CLS] and [SEP] included.
DIAGNOSE_LENGTHS = (64, 128, 256, 512)


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


@checks_arguments
def diagnose(model: str | os.PathLike, out: str | os.PathLike, *, corpus: Paths | None = None,
             max_documents: int = 2000, lengths: Sequence[int] = DIAGNOSE_LENGTHS, pairs: int = 256,
             positives: str | os.PathLike | None = None, split: str = "train", positive_count: int = 256,
             pooling: str = "cls", word_texts: int = 8, top_k: int = 10, reliance_texts: int = 64,
             masked_lm_texts: int = 256, masked_lm_curve_steps: bool = False, common_words: int = 100,
             seed: int = 13, batch_size: int = DIAGNOSE_BATCH_SIZE, overwrite: bool = False,
             show_progress: bool = True) -> Diagnostics:
    """Diagnose an encoder as the papers do (``seedr diagnose``); writes ``out/diagnostics.json`` and ``.png``.

    With ``corpus``: the cosine of the [CLS] embeddings of random text pairs cut to each of ``lengths``
    (SEED-Encoder §3.2, Fig. 1(b): a strong decoder leaves long sequences cluttered, ~0.8); for a CPDAE run
    folder the top decoded words and their probability mass on common words (CPDAE §3.3); for a
    SEED-Encoder run folder the cosine of [CLS] with the decoder's states by position (§4.6.1, Fig. 4); for
    a run with an MLM head its held-out masked-LM loss and accuracy against the unigram plateau (give texts
    it did not train on; ``masked_lm_curve_steps``: every kept checkpoint). With ``positives``: alignment and
    uniformity (Wang & Isola, 2020) and anisotropy.

    Args:
        model: a model folder, a run folder (a ``TrainingRun``) or ``minilm``.
        out: the folder of ``diagnostics.json`` and ``diagnostics.png`` (e.g. the run folder, for ``report``).
        corpus: texts: corpus paths (files, folders, quoted globs) in any seedr format.
        max_documents: read at most this many documents (articles, for ICT pairs).
        lengths: sequence lengths in tokens. pairs: random pairs per length.
        positives: positive pairs: a BEIR folder (its judged pairs of ``split``) or article files (ICT pairs).
        positive_count: positive pairs to use.
        pooling: ``cls`` (the papers'), ``mean`` or ``model`` (what the folder declares).
        word_texts, top_k, common_words: CPDAE runs' decoded words (0 texts: skip).
        reliance_texts: SEED-Encoder runs' texts for the decoder's reliance on [CLS] (0: skip).
        masked_lm_texts: runs with an MLM head: held-out texts for the masked-LM loss (0: skip).
        masked_lm_curve_steps: score every kept checkpoint, not only the newest.
        seed: of the random pairs and samples. batch_size: sequences per forward pass.
        overwrite: replace the diagnostics seedr wrote in ``out`` before (nothing else).
        show_progress: progress bars.

    Example:
        >>> found = seedr.diagnose("runs/cpdae", "runs/cpdae", corpus="wiki/enwiki-2015-00.jsonl.xz",
        ...                        positives="scifact")
        >>> found.metrics["random_pair_cosine@512"]
    """
    out = Path(out)
    corpus_paths = path_strings(corpus) if corpus is not None else []
    with locked(out):
        read = [Path(model_name(model))] if Path(model_name(model)).exists() else []
        read += input_paths(corpus_paths, positives)
        check_output(out / "diagnostics.json", "diagnostics", overwrite=overwrite, inputs=read)
        check_output(out / "diagnostics.png", "diagnostics plot", overwrite=overwrite, inputs=read)
        from seedr.diagnostics.diagnose import diagnose as run_diagnostics
        from seedr.diagnostics.diagnose import write_diagnostics
        from seedr.diagnostics.loading import corpus_texts, positive_pairs

        texts = corpus_texts(corpus_paths, max_documents) if corpus_paths else []
        pairs_for_statistics = (positive_pairs(positives, positive_count, seed, split, max_documents)
                                if positives is not None else [])
        result = run_diagnostics(model_name(model), texts, pairs_for_statistics, list(lengths), pairs, seed,
                                 pooling, word_texts, top_k, common_words, batch_size, show_progress=show_progress,
                                 reliance_texts=reliance_texts, masked_lm_texts=masked_lm_texts,
                                 masked_lm_curve_steps=masked_lm_curve_steps)
        json_path, plot_path = write_diagnostics(result, out)
    return Diagnostics(result["metrics"], result["details"], json_path, plot_path)


__all__ = ["DIAGNOSE_LENGTHS", "Diagnostics", "diagnose"]
