"""`seedr diagnose`: the papers' diagnostics of an encoder — random-pair similarity by length
(SEED-Encoder Fig. 1(b)), CPDAE's decoded words, the weak decoder's reliance on [CLS] (SEED-Encoder
Fig. 4), alignment / uniformity / anisotropy."""

from __future__ import annotations

from seedr.pipeline import diagnose as diagnosing
from seedr.pipeline.diagnose import DiagnoseConfig
from seedr.stages.common import console
from seedr.stages.options import options_of


@options_of(DiagnoseConfig)
def command(config: DiagnoseConfig) -> None:
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

    result, json_path, plot_path = diagnosing.run(config)
    table = Table(title=f"diagnostics of {escape(config.model)}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for name, value in result["metrics"].items():
        table.add_row(name, f"{value:.4f}")
    Console().print(table)
    for index, words in enumerate(result["details"].get("decoded_words", {}).get("top_words", [])[:3]):
        shown = ", ".join(f"{escape(word)} {probability:.3g}" for word, probability in words)
        console.print(f"decoded words of text {index}: {shown}")
    console.print(f"written: [bold]{escape(str(json_path))}[/], [bold]{escape(str(plot_path))}[/]")
