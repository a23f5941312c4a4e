"""`seedr diagnose`: the papers' diagnostics of an encoder — random-pair similarity by length
(SEED-Encoder Fig. 1(b)), CPDAE's decoded words, the weak decoder's reliance on [CLS] (SEED-Encoder
Fig. 4), alignment / uniformity / anisotropy."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seedr.api import diagnose
from seedr.api.arguments import option_range
from seedr.config.settings import DIAGNOSE_BATCH_SIZE
from seedr.stages.common import clear_errors, console


@clear_errors
def command(
    model: Annotated[str, typer.Argument(
        help="Model folder, seedr run folder (a CPDAE run adds its decoded words, a SEED run its "
             "decoder's reliance on [CLS]), or 'minilm'."
    )],
    out: Annotated[Path, typer.Option(
        "--out", help="Folder for diagnostics.json and diagnostics.png (e.g. the run folder, for "
                      "`seedr report`)."
    )],
    corpus: Annotated[list[Path] | None, typer.Option(
        "--corpus", help="Texts for random-pair similarity and CPDAE's words: corpus files, folders or quoted "
                         "globs in any seedr format, e.g. the wiki shards (repeatable)."
    )] = None,
    max_documents: Annotated[int, typer.Option(
        "--max-documents", **option_range("diagnose", "max_documents"), help="Read at most this many documents (articles, for ICT pairs)."
    )] = 2000,
    lengths: Annotated[str, typer.Option(
        "--lengths", help="Sequence lengths in tokens, [CLS] and [SEP] included (Fig. 1(b))."
    )] = "64,128,256,512",
    pairs: Annotated[int, typer.Option("--pairs", **option_range("diagnose", "pairs"), help="Random pairs per length.")] = 256,
    positives: Annotated[Path | None, typer.Option(
        "--positives", help="Positive pairs for alignment/uniformity/anisotropy: a BEIR folder (its judged "
                            "pairs, e.g. scifact) or article files (ICT pairs)."
    )] = None,
    split: Annotated[str, typer.Option("--split", help="BEIR qrels split of --positives.")] = "train",
    positive_count: Annotated[int, typer.Option("--positive-pairs", **option_range("diagnose", "positive_count"), help="Positive pairs to use.")] = 256,
    pooling: Annotated[str, typer.Option(
        "--pooling", help="cls (the papers'), mean, or model (what the model folder declares)."
    )] = "cls",
    word_texts: Annotated[int, typer.Option(
        "--word-texts", **option_range("diagnose", "word_texts"), help="CPDAE runs: texts whose decoded words are analysed (0: skip)."
    )] = 8,
    top_k: Annotated[int, typer.Option("--top-k", **option_range("diagnose", "top_k"), help="CPDAE runs: decoded words listed per text.")] = 10,
    reliance_texts: Annotated[int, typer.Option(
        "--reliance-texts", **option_range("diagnose", "reliance_texts"), help="SEED-Encoder runs: texts (filling the training length) for the decoder's "
                                 "reliance on [CLS] by position, Fig. 4 (0: skip)."
    )] = 64,
    masked_lm_texts: Annotated[int, typer.Option(
        "--mlm-texts", **option_range("diagnose", "masked_lm_texts"), help="Runs with an MLM head (MLM, SEED, CPDAE): held-out texts for the masked-LM "
                                   "loss and masked-token accuracy, beside the unigram plateau (0: skip)."
    )] = 256,
    masked_lm_curve_steps: Annotated[bool, typer.Option(
        "--mlm-curve", help="Score every kept checkpoint of the run, not only the newest: the curve that shows "
                            "whether MLM left its unigram plateau."
    )] = False,
    common_words: Annotated[int, typer.Option(
        "--common-words", **option_range("diagnose", "common_words"), help="CPDAE runs: how many of the corpus's most frequent tokens are common words."
    )] = 100,
    seed: Annotated[int, typer.Option("--seed", **option_range("diagnose", "seed"), help="Seed of the random pairs and samples.")] = 13,
    batch_size: Annotated[int, typer.Option("--batch-size", **option_range("diagnose", "batch_size"), help="Sequences per forward pass.")] = DIAGNOSE_BATCH_SIZE,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Replace the diagnostics.json and .png seedr wrote in OUT before (nothing else).")] = False,
) -> None:
    """Diagnose an encoder as the papers do, beyond retrieval metrics; writes OUT/diagnostics.json + .png.

    With --corpus: the cosine of the [CLS] embeddings of random text pairs cut to each length
    (SEED-Encoder §3.2: a strong decoder leaves long sequences cluttered, ~0.8), for a CPDAE run
    folder the top decoded words and the probability mass on common words (CPDAE §3.3), and for a
    SEED-Encoder run folder the cosine of [CLS] with the decoder's states by position (§4.6.1, Figure 4),
    for a run with an MLM head its held-out masked-LM loss and accuracy against the unigram plateau
    (give texts it did not train on; --mlm-curve: every kept checkpoint). With
    --positives: alignment and uniformity (Wang & Isola, 2020) and anisotropy.

    Example: seedr diagnose runs/cpdae --corpus ../shared/data/wiki/enwiki-2015-00.jsonl.xz --positives ../shared/data/scifact --out runs/cpdae
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    try:
        wanted_lengths = [int(length) for length in lengths.split(",") if length.strip()]
    except ValueError:
        raise ValueError(f"--lengths takes comma-separated token counts, e.g. 64,128,256,512; "
                         f"got {lengths!r}") from None
    found = diagnose(model, out, corpus=[str(path) for path in corpus] if corpus else None,
                     max_documents=max_documents, lengths=wanted_lengths, pairs=pairs, positives=positives,
                     split=split, positive_count=positive_count, pooling=pooling, word_texts=word_texts, top_k=top_k,
                     reliance_texts=reliance_texts, masked_lm_texts=masked_lm_texts,
                     masked_lm_curve_steps=masked_lm_curve_steps, common_words=common_words, seed=seed,
                     batch_size=batch_size, overwrite=overwrite)

    table = Table(title=f"diagnostics of {escape(model)}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in found.metrics.items():
        table.add_row(name, f"{value:.4f}")
    Console().print(table)
    for index, words in enumerate(found.details.get("decoded_words", {}).get("top_words", [])[:3]):
        shown = ", ".join(f"{escape(word)} {probability:.3g}" for word, probability in words)
        console.print(f"decoded words of text {index}: {shown}")
    console.print(f"written: [bold]{escape(str(found.json))}[/], [bold]{escape(str(found.plot))}[/]")
