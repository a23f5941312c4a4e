"""``adapt``: from a corpus without labels to a retriever adapted to it, in one call (``seedr adapt``,
``seedr.pipeline.adapt``)."""

from __future__ import annotations

from seedr.api.keywords import keywords_of
from seedr.pipeline import adapt as adaptation
from seedr.pipeline.adapt import AdaptStageConfig
from seedr.pipeline.pretrain import TrainingRun


@keywords_of(AdaptStageConfig)
def adapt(config: AdaptStageConfig) -> TrainingRun:
    """Adapt an encoder to a corpus that has no labelled queries (``seedr adapt``): mine training pairs
    from the documents alone, hold some documents' pairs out to validate on, optionally continue
    pre-training on the other documents, then fine-tune contrastively on the pairs; the encoder lands in
    ``out/encoder``, with its model card.

    The pairs (``seedr.training.mined_pairs``): a sentence against the rest of its passage (ICT; Lee et
    al. 2019), a title against its text, a lead sentence against the body or a linking article (BFS,
    WLP; Chang et al., ICLR 2020) where the corpus has sections or links, two crops of a text
    (Contriever; Izacard et al. 2022). They are written to ``out/pairs`` as a fine-tuning data set;
    fine-tuning (the ``adapt`` recipe: NLL over in-batch and BM25 negatives) never takes a pseudo-query's
    own document as its negative. The held-out pairs are scored as retrieval (MRR@10, R@1, R@10) every
    ``dev_every`` steps, logged in ``metrics.jsonl`` and drawn beside the loss (``out/validation.png``);
    training stops after ``patience`` evaluations without a better MRR@10, and ``out/encoder`` is the best
    evaluation's model; ``run.summary["warnings"]`` says when that is the starting model, unchanged (no
    evaluation bettered it), or when the default validation was widened. No query or relevance file is read:
    a BEIR folder stands for its ``corpus.jsonl``. Where you hold some labels apart,
    ``settings={"watch": {"qrels": ..., "queries": ..., "corpus": ...}}`` scores them at every validation
    without choosing by them, and ``out/diagnostics.json`` says how well the label-free validation tracked
    them (``seedr.reporting.validation.track_validation``).

    Example:
        >>> run = seedr.adapt("runs/adapted", model="minilm", corpus="my-docs.jsonl",
        ...                   settings={"train.max_steps": 100})
        >>> run.encoder
        PosixPath('runs/adapted/encoder')
    """
    return adaptation.run(config)


__all__ = ["adapt"]
