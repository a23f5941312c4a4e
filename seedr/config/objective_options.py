"""The options of every pre-training objective, one dataclass each, and ``OBJECTIVE_OPTIONS``: an objective's
name → its options class, which the objective's own class (``seedr.objectives``, ``Objective.config_class``)
takes as its ``config_class``.

They are apart from the objectives, which import torch, for the reason ``seedr.config.settings`` is: resolving a
pre-training's settings (``seedr config pretrain``, ``--describe``, the refusal of an unknown
``objective.*`` key) fills and checks these classes, and answers in a fraction of a second without torch.
Each class also says, as ``trained_representation``, the pooled vector its objective trains to stand for a
text, which fine-tuning a seed keeps (``seedr.modeling.folders.pretrained_seed``), also without torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from seedr.config.settings import DROPOUT, QUERY_MAX_LENGTH, Pooling
from seedr.registry import Registry

#: How [CLS] enters SEED-Encoder's weak decoder (``seedr.modeling.weak_decoder``): a cross-attention
#: sub-layer per layer, or one extra key of the windowed self-attention.
ClsPath = Literal["cross_attention", "joint"]
#: ``objective.collection_statistics: auto`` asks for the term counts of the run's own corpus (PROP).
AUTO_STATISTICS = "auto"

#: Each objective's name → the dataclass of its options (``objective.*`` settings).
OBJECTIVE_OPTIONS: Registry[type] = Registry("objective")


@OBJECTIVE_OPTIONS.register("mlm")
@dataclass
class MLMConfig:
    """Options of masked language modelling.

    Attributes:
        mask_probability: share of each sequence's non-special tokens chosen as targets (BERT: 0.15;
            80% of them become [MASK], 10% a random token, 10% stay unchanged).
        mlm_head_from: a Hugging Face checkpoint folder whose safetensors hold an MLM head
            (``cls.predictions.*``, as ``BertForMaskedLM`` saves), or a seedr run folder of an objective
            with one (its newest checkpoint's head). Default: the folder the encoder was loaded from
            (or the run it is the product of), when it has one; otherwise the head is freshly initialised
            (MiniLM has none).
        save_head: also write the head into the saved encoder's safetensors (``cls.predictions.*``, as
            ``BertForMaskedLM`` names it), so the product is a masked-LM checkpoint that pre-training can
            continue from with its head (the seedr base); off by default, as a retriever needs no head.
    """

    #: The pooled vector the objective trains to stand for the text, in words, ``{pooling}`` for how it pools
    #: (``[CLS]`` or ``mean``): "SEED-Encoder's {pooling} bottleneck"; empty where the loss never reads a
    #: pooled vector (MLM). Fine-tuning a seed keeps the pooling its objective trained, and says so
    #: (``seedr.modeling.folders.pretrained_seed``). Each objective's options class sets it; MLM trains none.
    trained_representation: ClassVar[str] = ""

    mask_probability: float = 0.15
    mlm_head_from: str | None = None
    save_head: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.mask_probability <= 1:
            raise ValueError(f"mask_probability must be in (0, 1], got {self.mask_probability}")


@OBJECTIVE_OPTIONS.register("seed")
@dataclass
class SeedConfig(MLMConfig):
    """Options of SEED-Encoder pre-training (paper defaults).

    Attributes:
        decoder_layers: depth of the weak decoder (paper: 3; its Figure 3 also tries 1 and 5).
        attention_span: how many most recent positions each decoder position attends to, besides
            [CLS] (paper: 2); ``"all"`` = full causal attention, the strong-decoder baseline.
        decoder_weight: weight ``w`` of the decoder loss in ``L_MLM + w · L_dec`` (paper: 1).
        decoder_dropout: dropout inside the decoder (paper: 0.1, as the encoder).
        tie_embeddings: decoder input embeddings and output projection shared with the encoder's
            word embeddings (authors' code shares the input embeddings; default True).
        cls_path: how [CLS] enters the decoder: ``"cross_attention"`` (the authors' released code: a
            cross-attention sub-layer per layer, every position also sees position 0) or ``"joint"``
            (the ablation: [CLS] as one extra key of the windowed self-attention); see ``seedr.modeling.weak_decoder``.
        pre_layer_norm: pre-LN decoder layers with a final LayerNorm (released code) or post-LN (BERT).
        bottleneck: the vector the decoder reads: ``"cls"`` (h0, the paper) or ``"mean"`` (the masked
            mean of the encoder states, for encoders that are used with mean pooling); the saved
            encoder records it as its pooling.
    """

    trained_representation: ClassVar[str] = "SEED-Encoder's {pooling} bottleneck"

    decoder_layers: int = 3
    attention_span: int | str = 2
    decoder_weight: float = 1.0
    decoder_dropout: float = DROPOUT
    tie_embeddings: bool = True
    cls_path: ClsPath = "cross_attention"
    pre_layer_norm: bool = True
    bottleneck: Pooling = "cls"

    def __post_init__(self) -> None:
        if self.cls_path not in ("cross_attention", "joint"):
            raise ValueError(f"cls_path must be 'cross_attention' or 'joint', got {self.cls_path!r}")
        if self.bottleneck not in ("cls", "mean"):
            raise ValueError(f"bottleneck must be 'cls' or 'mean', got {self.bottleneck!r}")
        super().__post_init__()
        if isinstance(self.attention_span, str) and self.attention_span != "all":
            raise ValueError(f"attention_span must be a positive integer or 'all', got {self.attention_span!r}")
        if isinstance(self.attention_span, int) and self.attention_span < 1:
            raise ValueError(f"attention_span must be ≥ 1, got {self.attention_span}")
        if self.decoder_layers < 1:
            raise ValueError(f"decoder_layers must be ≥ 1, got {self.decoder_layers}")

    @property
    def span(self) -> int | None:
        """The window as ``WeakDecoder`` takes it: None for full attention."""
        return None if self.attention_span == "all" else int(self.attention_span)


@OBJECTIVE_OPTIONS.register("cpdae")
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
        idf_path: a ``.npy`` of |V| IDF values written by ``seedr.objectives.cpdae.save_idf``, or
            ``"auto"``: ``seedr pretrain`` computes it from its corpus (``Cpdae.complete_options``).
        reconstruction_reduction: ``"sum"`` over the vocabulary as eq. 4 writes it, or ``"mean"``
            (default; ``seedr.objectives.cpdae`` says why).
        contrastive_reduction: ``"sum"`` (default): eq. 5 summed over the m texts of the (global)
            batch as printed; ``"mean"``: averaged over its 2m anchor views (``seedr.objectives.cpdae.twin_contrastive_loss``).
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
                             "seedr.objectives.cpdae.save_idf(path, compute_idf(token_id_lists, vocab_size))")

    @property
    def views(self) -> int:
        """Masked views per text: two for the contrastive loss, one without it."""
        return 2 if self.contrastive_weight > 0 else 1

    @property
    def effective_temperature(self) -> float:
        if self.temperature is not None:
            return self.temperature
        return 1.0 if self.contrast == "words" else 0.05


@OBJECTIVE_OPTIONS.register("cpdae_cls")
@dataclass
class CpdaeClsConfig(CpdaeConfig):
    """CPDAE′: as ``CpdaeConfig`` but contrasting the [CLS] vectors."""

    contrast: Literal["words", "cls"] = "cls"


@OBJECTIVE_OPTIONS.register("condenser")
@dataclass
class CondenserConfig(MLMConfig):
    """Options of Condenser pre-training (the paper's and released code's defaults).

    Attributes:
        head_layers: Transformer layers of the Condenser head, each of the backbone's shape (paper and
            README: 2).
        early_layer: the backbone layer whose token states the head reads, counted as
            ``hidden_states`` counts them (0 = embeddings, L = the last layer); None = the middle layer,
            L // 2 (the paper's 6 of BERT-base's 12).
        late_mlm: add the backbone's own MLM loss on its last layer (L_mlm; the README's ``--late_mlm``);
            false trains by the head's MLM alone.
    """

    trained_representation: ClassVar[str] = "Condenser's {pooling}"

    head_layers: int = 2
    early_layer: int | None = None
    late_mlm: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.head_layers < 1:
            raise ValueError(f"head_layers must be ≥ 1, got {self.head_layers}")
        if self.early_layer is not None and self.early_layer < 0:
            raise ValueError(f"early_layer must be ≥ 0 (0 = the embeddings), got {self.early_layer}")


@OBJECTIVE_OPTIONS.register("cocondenser")
@dataclass
class CoCondenserConfig(CondenserConfig):
    """Options of coCondenser pre-training (the paper's and released code's defaults).

    Attributes:
        span_length: the longest span, in content tokens (without [CLS] and [SEP]); each text is cut into
            chunks of at most this many tokens, two of which are a positive pair (see
            ``seedr.objectives.cocondenser``; the paper's spans were cut outside the released code). Default 128.
        contrastive_weight: weight of the span contrastive term in the loss (the paper's sum: 1).
        temperature: divides the dot products (released code: none, i.e. 1).
        global_in_batch: the negatives are the spans of the whole batch, gathered from every process
            (the README's "NPROC x BATCH_SIZE" of about 2048 is the global batch); ``false``: this
            process's spans only.
    """

    trained_representation: ClassVar[str] = "coCondenser's {pooling}"

    span_length: int = 128
    contrastive_weight: float = 1.0
    temperature: float = 1.0
    global_in_batch: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.span_length < 1:
            raise ValueError(f"span_length must be ≥ 1, got {self.span_length}")
        if self.contrastive_weight < 0:
            raise ValueError(f"contrastive_weight must be ≥ 0, got {self.contrastive_weight}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")


@OBJECTIVE_OPTIONS.register("retromae")
@dataclass
class RetroMaeConfig(MLMConfig):
    """Options of RetroMAE pre-training (the released pre-training command's values).

    Attributes:
        decoder_mask_probability: share of the non-special tokens each decoder row cannot see, besides its
            own (released: 0.5; the paper: an aggressive 50-70%).
        decoder_weight: weight of the decoder's loss in ``L_enc + w · L_dec`` (released: 1).
    """

    trained_representation: ClassVar[str] = "RetroMAE's {pooling} sentence embedding"

    mask_probability: float = 0.3
    decoder_mask_probability: float = 0.5
    decoder_weight: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 < self.decoder_mask_probability < 1:
            raise ValueError(f"decoder_mask_probability must be in (0, 1), got {self.decoder_mask_probability}")


@OBJECTIVE_OPTIONS.register("prop")
@dataclass
class PropConfig(MLMConfig):
    """Options of PROP pre-training as a bi-encoder (the paper's and released code's defaults).

    Attributes:
        poisson_lambda: λ of the Poisson distribution of word-set lengths (paper: 3, the average query
            length); lengths are drawn again until positive.
        pairs_per_text: pairs of word sets drawn from each text (its document) per step.
        margin: the hinge's margin on the pair's softmax probabilities (released code: 1).
        subsample_threshold: t of word2vec's subsampling of frequent words (released code: 1e-4); 0 keeps
            every drawn word.
        collection_statistics: a ``.npy`` of the corpus's count of every vocabulary id (written by
            ``seedr.objectives.prop.save_counts``), or ``"auto"``: ``seedr pretrain`` counts its corpus (``Prop.complete_options``).
        dirichlet_mu: μ of the Dirichlet smoothing; None = the corpus's average text length in tokens
            (released code), which ``"auto"`` statistics fill in.
        rop_weight: weight of L_ROP in the loss (the paper sums: 1).
    """

    trained_representation: ClassVar[str] = "PROP's bi-encoder {pooling}"

    poisson_lambda: float = 3.0
    pairs_per_text: int = 1
    margin: float = 1.0
    subsample_threshold: float = 1e-4
    collection_statistics: str | None = AUTO_STATISTICS
    dirichlet_mu: float | None = None
    rop_weight: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.poisson_lambda <= 0:
            raise ValueError(f"poisson_lambda must be > 0, got {self.poisson_lambda}")
        if self.pairs_per_text < 1:
            raise ValueError(f"pairs_per_text must be ≥ 1, got {self.pairs_per_text}")
        if self.subsample_threshold < 0:
            raise ValueError(f"subsample_threshold must be ≥ 0, got {self.subsample_threshold}")
        if self.dirichlet_mu is not None and self.dirichlet_mu <= 0:
            raise ValueError(f"dirichlet_mu must be > 0, got {self.dirichlet_mu}")

    @property
    def mean_set_length(self) -> float:
        """E[|S|] under the zero-truncated Poisson: λ / (1 − e^−λ)."""
        return self.poisson_lambda / -math.expm1(-self.poisson_lambda)


@OBJECTIVE_OPTIONS.register("contriever")
@dataclass
class ContrieverConfig:
    """Options of Contriever pre-training (the released ``contriever.sh`` defaults).

    Attributes:
        temperature: τ of the InfoNCE loss (released script: 0.05).
        ratio_min: shortest crop, as a share of the text's tokens (released script: 0.05).
        ratio_max: longest crop, as a share of the text's tokens (released script: 0.5).
        deletion_probability: each token of a crop is deleted with this probability (released: 0.1; 0 = none).
        pooling: how a crop's vector is pooled: ``"mean"`` over real tokens (Contriever) or ``"cls"``; the
            saved encoder records it.
        normalize: score by the cosine (unit vectors) instead of the dot product (released default: dot);
            the saved encoder then normalises its vectors.
        queue_size: keys kept from earlier batches as further negatives (MoCo); 0 (default) = in-batch
            negatives only. The paper's released model: 131072, a multiple of the global batch.
        momentum: m of the key encoder's update ``k ← m·k + (1 − m)·θ`` (released: 0.9995); used with a queue.
        global_in_batch: the in-batch keys are those of the global batch, gathered from every process
            (``seedr.losses.gather``); ``false``: this process's only.
    """

    trained_representation: ClassVar[str] = "Contriever's {pooling}-pooled vector"

    temperature: float = 0.05
    ratio_min: float = 0.05
    ratio_max: float = 0.5
    deletion_probability: float = 0.1
    pooling: Pooling = "mean"
    normalize: bool = False
    queue_size: int = 0
    momentum: float = 0.9995
    global_in_batch: bool = True

    def __post_init__(self) -> None:
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")
        if not 0 <= self.ratio_min <= self.ratio_max <= 1:
            raise ValueError(f"need 0 ≤ ratio_min ≤ ratio_max ≤ 1, got {self.ratio_min} and {self.ratio_max}")
        if not 0 <= self.deletion_probability < 1:
            raise ValueError(f"deletion_probability must be in [0, 1), got {self.deletion_probability}")
        if self.pooling not in ("cls", "mean"):
            raise ValueError(f"pooling must be 'cls' or 'mean', got {self.pooling!r}")
        if self.queue_size < 0:
            raise ValueError(f"queue_size must be ≥ 0, got {self.queue_size}")
        if not 0 <= self.momentum <= 1:
            raise ValueError(f"momentum must be in [0, 1], got {self.momentum}")


@OBJECTIVE_OPTIONS.register("simcse")
@dataclass
class SimCSEConfig:
    """Options of unsupervised SimCSE (the paper's and its released script's defaults).

    Attributes:
        temperature: τ of eq. 4 (paper: 0.05).
        mlp: pass [CLS] through a new dense + tanh layer during training only (the released unsupervised
            model: ``--pooler_type cls --mlp_only_train``); ``false``: contrast the bare [CLS].
        global_in_batch: the negatives are the second passes of the global batch, gathered from every
            process (``seedr.losses.gather``); ``false``: this process's only.
    """

    trained_representation: ClassVar[str] = "SimCSE's {pooling}"

    temperature: float = 0.05
    mlp: bool = True
    global_in_batch: bool = True

    def __post_init__(self) -> None:
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")


@OBJECTIVE_OPTIONS.register("tsdae")
@dataclass
class TsdaeConfig:
    """Options of TSDAE pre-training (paper defaults).

    Attributes:
        deletion_ratio: share of each text's tokens deleted from the encoder's input (paper: 0.6,
            the best noise of its comparison of noise types and ratios).
        tie_encoder_decoder: the decoder's embeddings, self-attention and feed-forward are the encoder's
            own parameters (paper and sentence-transformers' default: true); false gives the decoder its
            own copy, initialised from the encoder.
        bottleneck: the sentence vector ``s`` the decoder reads: ``"cls"`` (the paper's choice) or
            ``"mean"``; the saved encoder records it as its pooling.
    """

    trained_representation: ClassVar[str] = "TSDAE's {pooling} sentence vector"

    deletion_ratio: float = 0.6
    tie_encoder_decoder: bool = True
    bottleneck: Pooling = "cls"

    def __post_init__(self) -> None:
        if not 0 <= self.deletion_ratio < 1:
            raise ValueError(f"deletion_ratio must be in [0, 1), got {self.deletion_ratio}")
        if self.bottleneck not in ("cls", "mean"):
            raise ValueError(f"bottleneck must be 'cls' or 'mean', got {self.bottleneck!r}")


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


@OBJECTIVE_OPTIONS.register("ict")
@OBJECTIVE_OPTIONS.register("bfs")
@OBJECTIVE_OPTIONS.register("wlp")
@OBJECTIVE_OPTIONS.register("ict_bfs_wlp")
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
