"""The papers' diagnostics of an encoder, beyond retrieval metrics: random-pair similarity by length
(SEED-Encoder §3.2, Fig. 1(b)), CPDAE's decoded words (§3.3), the weak decoder's reliance on [CLS]
(SEED-Encoder §4.6.1, Fig. 4), the held-out masked LM, alignment / uniformity (Wang & Isola, 2020) and
anisotropy. ``seedr diagnose`` and ``seedr.diagnose`` run this."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seedr.config.settings import DIAGNOSE_BATCH_SIZE
from seedr.io import check_output
from seedr.pipeline.common import Paths, input_paths, locked, model_name, path_strings
from seedr.pipeline.options import AT_LEAST_ONE, NOT_NEGATIVE, check_options, option

#: The sequence lengths of SEED-Encoder's Figure 1(b), [CLS] and [SEP] included.
DIAGNOSE_LENGTHS = (64, 128, 256, 512)


def comma_separated(value: str | Sequence[Any]) -> list[Any]:
    """``--lengths 32,64`` as its words, ``["32", "64"]`` (the config reads them: a word that is no count is
    refused there, in one line); a default already a list passes as it is."""
    if isinstance(value, str):
        return [word.strip() for word in value.split(",") if word.strip()]
    return list(value)


@dataclasses.dataclass(kw_only=True)
class DiagnoseConfig:
    """What ``diagnose`` runs with."""

    model: str | os.PathLike = option(
        help="Model folder, seedr run folder (a CPDAE run adds its decoded words, a SEED run its decoder's "
             "reliance on [CLS]), or 'minilm'.", cli_type=str, positional=True, argument=True)
    out: Path = option(help="Folder for diagnostics.json and diagnostics.png (e.g. the run folder, for "
                            "`seedr report`).", positional=True)
    corpus: Paths | None = option(
        None, help="Texts for random-pair similarity and CPDAE's words: corpus files, folders or quoted globs in "
                   "any seedr format, e.g. the wiki shards (repeatable).", cli_type=list[Path])
    max_documents: int = option(2000, help="Read at most this many documents (articles, for ICT pairs).",
                                bound=AT_LEAST_ONE)
    lengths: Sequence[int] = option(
        DIAGNOSE_LENGTHS, help="Sequence lengths in tokens, [CLS] and [SEP] included (Fig. 1(b)).", cli_type=str,
        parser=comma_separated)
    pairs: int = option(256, help="Random pairs per length.", bound=AT_LEAST_ONE)
    positives: str | os.PathLike | None = option(
        None, help="Positive pairs for alignment/uniformity/anisotropy: a BEIR folder (its judged pairs, e.g. "
                   "scifact) or article files (ICT pairs).", cli_type=Path)
    split: str = option("train", help="BEIR qrels split of --positives.")
    positive_count: int = option(256, help="Positive pairs to use.", bound=AT_LEAST_ONE, flag="--positive-pairs")
    pooling: str = option("cls", help="cls (the papers'), mean, or model (what the model folder declares).")
    word_texts: int = option(8, help="CPDAE runs: texts whose decoded words are analysed (0: skip).",
                             bound=NOT_NEGATIVE)
    top_k: int = option(10, help="CPDAE runs: decoded words listed per text.", bound=AT_LEAST_ONE)
    reliance_texts: int = option(
        64, help="SEED-Encoder runs: texts (filling the training length) for the decoder's reliance on [CLS] by "
                 "position, Fig. 4 (0: skip).", bound=NOT_NEGATIVE)
    masked_lm_texts: int = option(
        256, help="Runs with an MLM head (MLM, SEED, CPDAE): held-out texts for the masked-LM loss and "
                  "masked-token accuracy, beside the unigram plateau (0: skip).", bound=NOT_NEGATIVE,
        flag="--mlm-texts")
    masked_lm_curve_steps: bool = option(
        False, help="Score every kept checkpoint of the run, not only the newest: the curve that shows whether "
                    "MLM left its unigram plateau.", flag="--mlm-curve")
    common_words: int = option(100, help="CPDAE runs: how many of the corpus's most frequent tokens are common "
                                         "words.", bound=AT_LEAST_ONE)
    seed: int = option(13, help="Seed of the random pairs and samples.", bound=NOT_NEGATIVE)
    batch_size: int = option(DIAGNOSE_BATCH_SIZE, help="Sequences per forward pass.", bound=AT_LEAST_ONE)
    overwrite: bool = option(False, help="Replace the diagnostics.json and .png seedr wrote in OUT before (nothing "
                                         "else).")
    show_progress: bool = option(True, help="Show progress bars.", command_line=False)

    def __post_init__(self) -> None:
        check_options(self)
        self.model = model_name(self.model)
        self.out = Path(self.out)
        given = self.lengths
        try:
            self.lengths = [int(length) for length in comma_separated(given)]
        except (TypeError, ValueError):
            shown = given if isinstance(given, str) else ",".join(map(str, given))
            raise ValueError(f"--lengths takes comma-separated token counts, e.g. 64,128,256,512; "
                             f"got {shown!r}") from None


def run(config: DiagnoseConfig) -> tuple[dict[str, Any], Path, Path]:
    """Diagnose ``config.model``; return the diagnostics (``{"metrics": ..., "details": ...}``) and the
    ``diagnostics.json`` and ``diagnostics.png`` written into ``config.out``, which is locked for the call and
    never replaces what the command does not write."""
    corpus_paths = path_strings(config.corpus) if config.corpus is not None else []
    with locked(config.out):
        read = [Path(config.model)] if Path(config.model).exists() else []
        read += input_paths(corpus_paths, config.positives)
        check_output(config.out / "diagnostics.json", "diagnostics", overwrite=config.overwrite, inputs=read)
        check_output(config.out / "diagnostics.png", "diagnostics plot", overwrite=config.overwrite, inputs=read)
        return diagnose_into(config)


def diagnose_into(config: DiagnoseConfig) -> tuple[dict[str, Any], Path, Path]:
    """``run``'s work, without its lock and output checks: for an experiment's ``diagnose`` step, whose
    folder the experiment's runner holds and makes fresh."""
    from seedr.diagnostics.diagnose import diagnose as run_diagnostics
    from seedr.diagnostics.diagnose import write_diagnostics
    from seedr.diagnostics.loading import corpus_texts, positive_pairs

    corpus_paths = path_strings(config.corpus) if config.corpus is not None else []
    texts = corpus_texts(corpus_paths, config.max_documents) if corpus_paths else []
    pairs = (positive_pairs(config.positives, config.positive_count, config.seed, config.split,
                            config.max_documents) if config.positives is not None else [])
    result = run_diagnostics(config.model, texts, pairs, list(config.lengths), config.pairs, config.seed,
                             config.pooling, config.word_texts, config.top_k, config.common_words,
                             config.batch_size, show_progress=config.show_progress,
                             reliance_texts=config.reliance_texts, masked_lm_texts=config.masked_lm_texts,
                             masked_lm_curve_steps=config.masked_lm_curve_steps)
    json_path, plot_path = write_diagnostics(result, config.out)
    return result, json_path, plot_path


__all__ = ["DIAGNOSE_LENGTHS", "DiagnoseConfig", "comma_separated", "diagnose_into", "run"]
