"""The papers' diagnostics of one encoder, run and written down (``seedr diagnose``, the ``diagnose``
experiment step): ``diagnose`` runs what its inputs allow through ``seedr.diagnostics.measures`` on what
``seedr.diagnostics.loading`` loads (the encoder, a run's trained decoder, its checkpoints), and
``write_diagnostics`` writes ``diagnostics.json`` (``{"metrics": {...}, "details": {...}}``, read by
``seedr report``) and ``diagnostics.png`` (``seedr.diagnostics.plots``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from seedr.config.settings import DIAGNOSE_BATCH_SIZE
from seedr.diagnostics.loading import (
    DiagnosticPooling,
    PositivePair,
    embed_pairs,
    load_encoder_parts,
    load_weak_decoder,
    load_word_decoder,
    masked_lm_curve,
    run_diagnostics,
)
from seedr.diagnostics.measures import (
    PAPER_LENGTHS,
    cls_reliance,
    common_word_mass,
    decoded_words,
    embedding_statistics,
    most_frequent_tokens,
    random_pair_similarity,
    reliance_summary,
    texts_of_length,
    word_probabilities,
)
from seedr.diagnostics.plots import plot_diagnostics
from seedr.io import atomic_write


def diagnose(model: str | os.PathLike, texts: Sequence[str] = (),
             pairs_for_statistics: Sequence[PositivePair] = (), lengths: Iterable[int] = PAPER_LENGTHS,
             pairs: int = 256, seed: int = 13, pooling: DiagnosticPooling = "cls", word_texts: int = 8,
             top_k: int = 10, common_words: int = 100, batch_size: int = DIAGNOSE_BATCH_SIZE,
             show_progress: bool = False, reliance_texts: int = 64, masked_lm_texts: int = 256,
             masked_lm_curve_steps: bool = False) -> dict[str, Any]:
    """Run the diagnostics the inputs allow; returns ``{"metrics": {name: number}, "details": {...}}``.

    - ``texts`` → random-pair similarity at each length (``random_pair_cosine@L`` and its ``_std``);
      when ``model`` is a run folder whose objective declares ``decoded_words`` (CPDAE), also the decoded words of the first ``word_texts`` texts
      and the mass on the ``common_words`` most frequent tokens of ``texts`` (``decoded_common_mass``,
      ``decoded_own_rare_mass``, ``target_common_mass``); when it declares ``cls_reliance`` (SEED-Encoder), the
      decoder's reliance on [CLS] by position over the first ``reliance_texts`` texts that fill the
      run's training length (Figure 4: the curve in ``details["cls_reliance"]``, and
      ``cls_reliance@first``, ``cls_reliance@last_quarter``, ``cls_reliance_drop``; 0: skip); when it
      declares ``masked_lm`` (an MLM head: MLM, SEED-Encoder, CPDAE), the held-out masked-LM loss
      and masked-token accuracy over the first ``masked_lm_texts`` texts, with the unigram plateau of the
      same targets (``heldout_mlm_loss``, ``heldout_masked_accuracy``, ``unigram_loss``,
      ``unigram_accuracy``; 0: skip), for every kept checkpoint when ``masked_lm_curve_steps``
      (``details["masked_lm"]["curve"]``);
    - ``pairs_for_statistics`` → ``alignment``, ``uniformity``, ``anisotropy``.
    """
    if not texts and not pairs_for_statistics:
        raise ValueError("nothing to diagnose: give texts (random-pair similarity, CPDAE words) and/or "
                         "positive pairs (alignment, uniformity, anisotropy)")
    metrics: dict[str, float] = {}
    details: dict[str, Any] = {"model": str(model), "pooling": pooling, "seed": seed}
    if texts:
        encoder, tokenizer, resolved = load_encoder_parts(model, pooling=pooling)
        similarity = random_pair_similarity(encoder, tokenizer, texts, lengths, pairs, seed, pooling=resolved,
                                            batch_size=batch_size, show_progress=show_progress)
        for length, (mean, std) in similarity.items():
            metrics[f"random_pair_cosine@{length}"] = mean
            metrics[f"random_pair_cosine_std@{length}"] = std
        details["random_pair_similarity"] = {"texts": len(texts), "pairs_per_length": pairs,
                                             "by_length": {str(k): list(v) for k, v in similarity.items()}}
    supported = run_diagnostics(model) if isinstance(model, str | os.PathLike) else frozenset()
    if texts and word_texts > 0 and "decoded_words" in supported:
        objective, max_length = load_word_decoder(model)
        shown = list(texts[:word_texts])
        common = most_frequent_tokens(objective.tokenizer, texts, common_words)
        mass = common_word_mass(objective, shown, common, max_length)
        metrics.update({"decoded_common_mass": mass["common_mass"],
                        "decoded_own_rare_mass": mass["own_rare_mass"],
                        "target_common_mass": mass["target_common_mass"]})
        details["decoded_words"] = {
            "max_length": max_length, "common_words": objective.tokenizer.convert_ids_to_tokens(common),
            "top_words": [[[word, probability] for word, probability in words]
                          for words in decoded_words(objective, shown, top_k, max_length)],
            "word_probabilities": [[word, probability] for word, probability
                                   in word_probabilities(objective, shown[0], max_length)],
        }
    if texts and reliance_texts > 0 and "cls_reliance" in supported:
        objective, max_length = load_weak_decoder(model)
        chosen = texts_of_length(objective.tokenizer, texts, max_length, reliance_texts)
        if not chosen:
            raise ValueError(f"none of the {len(texts)} texts fills the run's {max_length} training tokens: "
                             "the reliance curve needs texts that long (give more or longer texts)")
        reliance = cls_reliance(objective, chosen, max_length, batch_size)
        metrics.update(reliance_summary(reliance))
        options = objective.config
        details["cls_reliance"] = {"max_length": max_length, "attention_span": options.attention_span,
                                   "decoder_layers": options.decoder_layers, "bottleneck": options.bottleneck,
                                   "cosine": reliance.cosine, "texts": reliance.texts}
    if texts and masked_lm_texts > 0 and "masked_lm" in supported:
        curve = masked_lm_curve(model, texts[:masked_lm_texts], batch_size=batch_size, seed=seed,
                                every_checkpoint=masked_lm_curve_steps)
        newest = curve[-1]
        metrics.update({"heldout_mlm_loss": newest["mlm_loss"], "heldout_masked_accuracy": newest["masked_accuracy"],
                        "unigram_loss": newest["unigram_loss"], "unigram_accuracy": newest["unigram_accuracy"]})
        details["masked_lm"] = {"max_length": newest["max_length"], "sequences": newest["sequences"],
                                "targets": newest["targets"], "curve": curve}
    if pairs_for_statistics:
        if len(pairs_for_statistics) < 2:
            raise ValueError(f"embedding statistics need at least two positive pairs, got {len(pairs_for_statistics)}")
        queries, documents = embed_pairs(model, pairs_for_statistics, pooling=pooling, batch_size=batch_size,
                                         show_progress=show_progress)  # (N, H) each
        metrics.update(embedding_statistics(queries, documents))
        details["embedding_statistics"] = {"positive_pairs": len(pairs_for_statistics)}
    return {"metrics": metrics, "details": details}


def write_diagnostics(result: dict[str, Any], out_dir: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``out_dir/diagnostics.json`` (``seedr report`` reads its ``metrics``) and
    ``out_dir/diagnostics.png``; returns both paths."""

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with atomic_write(out_dir / "diagnostics.json") as stream:
        json.dump(result, stream, indent=2)
    return out_dir / "diagnostics.json", plot_diagnostics(result, out_dir / "diagnostics.png")


__all__ = ["diagnose", "write_diagnostics"]
