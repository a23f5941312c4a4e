"""The options the two-tower objectives share (ICT, BFS, WLP and their mix; Chang et al., ICLR 2020), and how
their pairs are drawn (``PairConfig``, which ``seedr adapt``'s mined pairs take too), torch-free: settings
resolve without torch. Each of those objectives' folders subclasses ``TwoTowerConfig`` as its own options."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from seedr.config.settings import QUERY_MAX_LENGTH


@dataclass
class PairConfig:
    """How pairs are drawn from a corpus.

    Args:
        keep_query_probability: ICT only: how often the query sentence is left in its document. The
            ICLR 2020 paper always removes it (sec. 3, 0.0, the default); ORQA (Lee et al., 2019)
            keeps it 10% of the time (0.1) so the encoder still learns word matching.
        min_title_words: WLP on the wiki bundle, whose hyperlinks were stripped: links are recovered
            from mentions of other articles' titles of at least this many words (one-word titles such
            as "British" are too ambiguous).
        max_articles: read only this many articles (all files together); ``None`` reads everything.
        pairs_per_epoch: pairs in one epoch; ``None`` = one per unit of every task (each ICT passage,
            each BFS article, each WLP target article once).
    """

    keep_query_probability: float = 0.0
    min_title_words: int = 2
    max_articles: int | None = None
    pairs_per_epoch: int | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.keep_query_probability <= 1.0:
            raise ValueError(f"keep_query_probability must lie in [0, 1], got {self.keep_query_probability}")


@dataclass
class TwoTowerConfig:
    """Options of the two-tower objectives (ICLR 2020, sec. 4.1).

    Args:
        query_max_length: query tokens kept (paper: 64).
        document_max_length: ``title [SEP] passage`` tokens kept (paper: 288).
        projection_dim: the linear layer on [CLS] that makes the embedding (paper: 512); ``None``
            (default) uses the [CLS] state itself, as SEED-Encoder and DPR. The layer is saved as a
            ``Dense`` module with the encoder, and fine-tuning (``DualEncoder``) and encoding
            (``TextEncoder``) load and apply it (``seedr.modeling.projection``).
        separate_towers: a document tower with its own weights, initialised as a copy of the query
            tower. The paper draws two towers (Fig. 1) without saying whether they share weights;
            default shared (one encoder, the Siamese set-up of SEED-Encoder and CPDAE).
        log_q_correction: subtract log Q(d) from every in-batch logit (``seedr.losses.in_batch_softmax``), the
            sampled-softmax correction eq. 3 mentions; it matters only for a mix of tasks of
            different sizes (ICT+BFS+WLP) and is a no-op for one task. Default on.
        pairs: how pairs are drawn (used by ``seedr.objectives.two_tower.pair_data_for``).
        global_in_batch: the softmax runs over the documents of the global batch, gathered from every
            process (the paper's batch of 8192 is global); ``false``: over this process's only.
    """

    trained_representation: ClassVar[str] = "the two-tower softmax's {pooling} embedding"

    query_max_length: int = QUERY_MAX_LENGTH
    document_max_length: int = 288
    projection_dim: int | None = None
    separate_towers: bool = False
    log_q_correction: bool = True
    pairs: PairConfig = field(default_factory=PairConfig)
    global_in_batch: bool = True
