"""The settings of the training stages as dataclasses: ``TrainConfig`` (the optimisation, shared),
``PretrainConfig`` (with ``ModelConfig`` and ``DataConfig``) and ``FinetuneConfig`` — what a recipe
(``seedr/recipes/``), ``--set`` and an experiment's steps fill (``seedr.config.loading.load_config``).

They import neither torch, transformers, accelerate nor faiss, so that ``seedr pretrain --help`` and
``seedr finetune --help`` list every key with its default or a recipe's value in a fraction of a second
(``seedr.config.loading.describe_settings``), and an experiment is planned without loading a model. One check
reaches for a library, only when the value needing it is given: ``train.report_to`` asks Accelerate
which trackers it has. Every module imports these classes from here, their one home
(``tests/test_import_graph.py`` says so). The pre-training objectives' options are in
their folders (``seedr/objectives/<name>/options.py``, through ``seedr.objectives.OBJECTIVES``), torch-free for the
same reason.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

from seedr.config.loading import identity

#: How an encoder pools its token states into the text's vector: the [CLS] state or their masked mean.
Pooling = Literal["cls", "mean"]
#: Tokens of a document, or of a pre-training example, where no setting says otherwise (all three papers:
#: 512): the one home of this default, which library functions name rather than write again
#: (``tests/test_defaults.py``).
MAX_LENGTH = 512
#: Tokens of a query where no setting says otherwise (the papers' 64).
QUERY_MAX_LENGTH = 64
#: Texts per forward pass when encoding without gradients (retrieval, mined negatives, dev evaluations).
ENCODE_BATCH_SIZE = 64
#: Texts per forward pass of the papers' diagnostics (each keeps every layer's states, so fewer).
DIAGNOSE_BATCH_SIZE = 16
#: The learning-rate schedules of ``transformers.get_scheduler`` a run can choose (``train.scheduler``).
SCHEDULERS = ("linear", "cosine", "constant", "constant_with_warmup")
#: A warm-up longer than this share of the run draws a warning (the papers warm up over 10% or less).
LARGE_WARMUP_SHARE = 0.25
#: Where no setting says otherwise: the training seed, BERT's dropout (SEED's decoder's too), pre-training's
#: packing, the encoder fine-tuned, the least grade trained as positive; and the files a ``watch`` names.
SEED, DROPOUT, PACKING, FINETUNE_MODEL, POSITIVE_GRADE = 42, 0.1, "full_sentences", "minilm", 1
WATCH_FILES = ("qrels", "queries", "corpus")
#: The most optimizer steps a run may take: at a step a millisecond, 10^9 take 11.6 days, a thousand times
#: the longest run of the papers (SEED-Encoder's 1M pre-training steps). A count or a ``flops_budget`` beyond
#: it is a typo or a unit slip (1e30 FLOPs buys 3.8e20 steps, past an int64), refused before any work.
MAX_STEPS = 10**9
#: The fine-tuning recipe an adaptation runs when given none (``seedr adapt``; ``finetune/adapt.yaml``).
ADAPT_RECIPE = "adapt"


@dataclass
class TrainConfig:
    """Optimisation settings; the defaults are those of SEED-Encoder §4.1 (and BERT).

    ``seedr pretrain --help`` and ``seedr finetune --help`` list these keys (as ``train.<name>``) with
    their defaults and the descriptions below (``seedr.config.loading.describe_settings``).

    Attributes:
        seed: seed of the model's new weights, the data order, masking and dropout.
        max_steps: optimizer steps to train for, at most 10^9 (MAX_STEPS).
        batch_size: examples per process per micro-step (the effective batch multiplies it by the
            accumulation steps and the processes).
        gradient_accumulation_steps: micro-steps whose gradients are summed into one optimizer step; with
            global_batch_size set, leave it at 1: the run sets it, and config.yaml records what it used.
        global_batch_size: the paper's batch over every process and micro-step; sets
            gradient_accumulation_steps to global_batch_size / (batch_size × processes), which must divide.
            Accumulation does not widen a contrastive loss's in-batch negatives; gradient_cache does.
        gradient_cache: GradCache (Gao et al. 2021): the whole per-process batch in one loss, embedded a chunk
            at a time without graphs, then back-propagated chunk by chunk; two-tower objectives, fine-tuning.
        gradient_cache_chunk: rows embedded at once under gradient_cache.
        learning_rate: the peak learning rate, reached at the end of the warm-up.
        weight_decay: AdamW's decoupled weight decay (not on biases and normalisation weights).
        adam_epsilon: AdamW's ε.
        adam_beta1: AdamW's β1.
        adam_beta2: AdamW's β2.
        scheduler: the learning-rate schedule (transformers.get_scheduler): linear or cosine decay to 0
            at max_steps after the warm-up, constant_with_warmup, or constant (no warm-up at all).
        warmup_ratio: warm-up as a share of max_steps, in [0, 1), rounded up to whole steps (BERT-style
            "10% warm-up", the default; null = none); a share follows the run's length when epochs set it.
        warmup_steps: optimizer steps of linear warm-up from 0 to the peak rate; when given it replaces
            warmup_ratio (as in transformers' TrainingArguments); must be fewer than max_steps. The steps
            a run warms up for are ``resolved_warmup_steps``, computed in one place.
        max_grad_norm: clip the gradients' global L2 norm to this; 0 or null = no clipping (logged anyway).
        mixed_precision: no, bf16, fp16 or auto (passed to Accelerate; no defers to the launch config;
            auto is bf16 where the device computes it natively and float32 elsewhere, ``seedr.hardware``).
        log_every: optimizer steps between lines of metrics.jsonl.
        save_every: optimizer steps between checkpoints (one is also written at the end).
        keep_checkpoints: how many checkpoints (each with its encoder) to keep; only the newest keeps
            the optimizer state needed to resume.
        report_to: experiment trackers that receive every line of metrics.jsonl and the run's settings,
            through Accelerate (its log_with): a name or a list of tensorboard, wandb, mlflow, comet_ml,
            aim, clearml, dvclive, swanlab, trackio, or all (every one installed); null = none.
            TensorBoard writes into <run>/trackers and needs no network (pip install
            'seedr[tensorboard]'); W&B and MLflow need their package, and their login or server set by
            environment (WANDB_API_KEY or WANDB_MODE=offline; MLFLOW_TRACKING_URI). Each run is named
            after its folder. metrics.jsonl is written either way.
    """

    seed: int = SEED
    max_steps: int = 1000
    batch_size: int = 32
    gradient_accumulation_steps: int = 1
    global_batch_size: int | None = None
    gradient_cache: bool = False
    gradient_cache_chunk: int = 32
    learning_rate: float = 1e-4
    weight_decay: float = 0.01
    adam_epsilon: float = 1e-6
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    scheduler: Literal["linear", "cosine", "constant", "constant_with_warmup"] = "linear"
    warmup_ratio: float | None = 0.1
    warmup_steps: int | None = None
    max_grad_norm: float | None = 1.0
    mixed_precision: str = "no"
    log_every: int = 10
    save_every: int = 500
    keep_checkpoints: int = 2
    report_to: list[str] | None = None

    def __post_init__(self) -> None:
        for name in ("max_steps", "batch_size", "gradient_accumulation_steps", "log_every", "save_every",
                     "keep_checkpoints", "gradient_cache_chunk"):
            if getattr(self, name) < 1:
                raise ValueError(f"train.{name} must be at least 1, got {getattr(self, name)}")
        if self.max_steps > MAX_STEPS:
            raise ValueError(f"train.max_steps must be at most {MAX_STEPS:,} (MAX_STEPS), got "
                             f"{self.max_steps:,}")
        if self.mixed_precision not in ("no", "bf16", "fp16", "auto"):
            raise ValueError(f"train.mixed_precision must be no, bf16, fp16 or auto, got {self.mixed_precision!r}")
        if self.scheduler not in SCHEDULERS:
            raise ValueError(f"train.scheduler must be one of {', '.join(SCHEDULERS)}, got {self.scheduler!r}")
        if not self.learning_rate > 0:  # not ``<= 0``: NaN compares false
            raise ValueError(f"train.learning_rate must be a positive number, got {self.learning_rate}")
        if not self.weight_decay >= 0:
            raise ValueError(f"train.weight_decay must be at least 0, got {self.weight_decay}")
        if not self.adam_epsilon > 0:
            raise ValueError(f"train.adam_epsilon must be a positive number, got {self.adam_epsilon}")
        for name in ("adam_beta1", "adam_beta2"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"train.{name} must be in [0, 1), got {getattr(self, name)}")
        if self.max_grad_norm is not None and not self.max_grad_norm >= 0:
            raise ValueError(f"train.max_grad_norm must be positive, or 0 / null for no clipping, "
                             f"got {self.max_grad_norm}")
        if self.warmup_ratio is not None and not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"train.warmup_ratio is a share of train.max_steps in [0, 1), got {self.warmup_ratio}")
        if self.warmup_steps is not None and self.warmup_steps < 0:
            raise ValueError(f"train.warmup_steps must be at least 0, got {self.warmup_steps}")
        warmup = self.resolved_warmup_steps
        if warmup and warmup >= self.max_steps:
            raise ValueError(f"train.warmup_steps={warmup} is not fewer than train.max_steps={self.max_steps}: "
                             f"the learning rate would never reach its peak; lower the warm-up or give it as "
                             f"a share (train.warmup_ratio=0.1, train.warmup_steps=null)")
        if warmup > LARGE_WARMUP_SHARE * self.max_steps:
            warnings.warn(f"warm-up takes {warmup} of {self.max_steps} steps ({warmup / self.max_steps:.0%}): a "
                          f"large share of the run trains below the peak learning rate (train.warmup_ratio=0.1 "
                          f"is the papers' share)", stacklevel=3)
        if self.global_batch_size is not None and self.global_batch_size < 1:
            raise ValueError(f"train.global_batch_size must be at least 1, got {self.global_batch_size}")
        if isinstance(self.report_to, str):  # the Python API takes one name as YAML and --set do
            self.report_to = [name for name in self.report_to.split(",") if name]
        # "none" is how transformers' TrainingArguments says it; an empty list says it too
        self.report_to = [name for name in self.report_to or [] if name != "none"] or None

    @property
    def clips_gradients(self) -> bool:
        return bool(self.max_grad_norm)

    @property
    def resolved_warmup_steps(self) -> int:
        """The optimizer steps of warm-up: ``warmup_steps`` when given, else ``warmup_ratio`` of
        ``max_steps`` rounded up (as transformers' ``TrainingArguments.get_warmup_steps``, after rounding
        away float noise: 0.7 × 10 is 7.000000000000001) and at most ``max_steps − 1``, else none."""
        if self.warmup_steps is not None:
            return self.warmup_steps
        if self.warmup_ratio is None:
            return 0
        # a share never takes the whole run: a one-step run would otherwise train at a rate of 0
        return min(math.ceil(round(self.warmup_ratio * self.max_steps, 9)), self.max_steps - 1)

    def identity(self, length_from_data: bool = False) -> dict[str, Any]:
        """These settings as what they train (``seedr.config.loading.identity``, an experiment step's key): the
        warm-up as the steps it comes to (``resolved_warmup_steps``: ``warmup_ratio: 0.1`` of 60 steps
        trains as ``warmup_steps: 6``), without ``report_to``, which only decides who watches. When the
        run's length is decided from its data instead (``length_from_data``: fine-tuning by ``epochs``),
        ``max_steps`` is a placeholder, and so are the steps a share comes to: the share is what decides."""
        data = dataclasses.asdict(self)
        for unkeyed in ("report_to", "warmup_ratio", "warmup_steps"):
            del data[unkeyed]
        if not length_from_data:
            return {**data, "warmup_steps": self.resolved_warmup_steps}
        del data["max_steps"]
        if self.warmup_steps is None and self.warmup_ratio is not None:
            return {**data, "warmup_ratio": self.warmup_ratio}
        return {**data, "warmup_steps": self.resolved_warmup_steps}

    def accumulation_steps(self, processes: int) -> int:
        """Micro-steps per optimizer step: ``global_batch_size / (batch_size × processes)`` when the global
        batch is set (it must divide), else ``gradient_accumulation_steps``."""
        if self.global_batch_size is None:
            return self.gradient_accumulation_steps
        per_micro_step = self.batch_size * processes
        if self.global_batch_size % per_micro_step:
            remedy = (f"choose a batch_size that divides {self.global_batch_size // processes}"
                      if self.global_batch_size % processes == 0 else "run on a number of processes that divides it")
            raise ValueError(f"train.global_batch_size {self.global_batch_size} is not a multiple of train.batch_size "
                             f"{self.batch_size} × {processes} process(es) = {per_micro_step}: {remedy}")
        steps = self.global_batch_size // per_micro_step
        if self.gradient_accumulation_steps not in (1, steps):
            raise ValueError(f"train.gradient_accumulation_steps {self.gradient_accumulation_steps} contradicts "
                             f"train.global_batch_size {self.global_batch_size} = {self.batch_size} × {processes} "
                             f"process(es) × {steps}: leave it at 1 and it is set from the global batch")
        return steps

    def resolve_accumulation(self, processes: int) -> int:
        """Set ``gradient_accumulation_steps`` to the accumulation a run on ``processes`` uses
        (``accumulation_steps``) and return it, so that ``config.yaml`` and the checkpoints record the
        accumulation that trained, not the 1 that a ``global_batch_size`` leaves in place. Idempotent."""
        self.gradient_accumulation_steps = self.accumulation_steps(processes)
        return self.gradient_accumulation_steps

    def describe_batch(self, processes: int) -> str:
        """One line saying what a batch is on ``processes``: the global batch as per-process batch ×
        processes × accumulation steps; when a ``global_batch_size`` makes the run accumulate, also that
        it does and which setting steps the optimizer on every batch instead."""
        steps = self.accumulation_steps(processes)
        per_micro_step = self.batch_size * processes
        line = (f"batch: global {per_micro_step * steps} = {self.batch_size} per process × {processes} "
                f"process{'es' if processes != 1 else ''} × {steps} accumulation step{'s' if steps != 1 else ''}")
        if self.global_batch_size is not None and steps > 1:
            line += (f" (train.global_batch_size={self.global_batch_size} over train.batch_size={self.batch_size} "
                     f"accumulates {steps} batches per optimizer step; to step on every batch, "
                     f"--set train.global_batch_size={per_micro_step})")
        return line


@dataclass
class ModelConfig:
    """The encoder to pre-train.

    Attributes:
        init: continue from this model: a built-in name (``seedr-base``, ``minilm``), a local Hugging Face
            folder or a seedr run folder; when set, ``size`` and the shape fields are ignored.
        size: from scratch instead (with a ``tokenizer``): a name from ``seedr.training.pretrain.MODEL_SIZES``
            (tiny, mini, small, medium, base).
        tokenizer: tokenizer folder (``seedr prepare``) or model folder; default: that of the model continued
            from (``init``).
        hidden_size: from scratch: overrides the size's hidden size.
        num_hidden_layers: from scratch: overrides the size's number of layers.
        num_attention_heads: from scratch: overrides the size's attention heads (they must divide
            hidden_size).
        intermediate_size: from scratch: the feed-forward width; default 4 × hidden_size.
        dropout: hidden and attention dropout of a new encoder (BERT and both papers: 0.1).
        architecture: ``bert`` (a Transformer encoder), or ``bow_mlp``: the ICLR 2020 paper's BoW-MLP
            baseline (``seedr.modeling.bow_mlp``), for the two-tower objectives only; needs
            ``tokenizer``.
        bow_mlp: options of ``build_bow_mlp`` (embedding_dim, hidden_dim, output_dim; paper: 4096,
            512, 512).
    """

    init: str | None = None
    size: str = "base"
    tokenizer: str | None = None
    hidden_size: int | None = None
    num_hidden_layers: int | None = None
    num_attention_heads: int | None = None
    intermediate_size: int | None = None
    dropout: float = DROPOUT
    architecture: str = "bert"
    bow_mlp: dict[str, int] = field(default_factory=dict)

    def check_source(self) -> None:
        """Refuse a model with nothing to start from: neither an encoder to continue (``init``) nor a
        tokenizer for a new one. Not a check of the settings alone (``seedr config`` shows a recipe that
        leaves the model to the command line): pre-training asks it before it loads anything."""
        if self.init is None and self.tokenizer is None:
            raise ValueError("pre-training from scratch needs a tokenizer (model.tokenizer / --tokenizer: a folder "
                             "written by `seedr prepare`, or a model folder); or continue from a checkpoint "
                             "with model.init / --model")


@dataclass
class DataConfig:
    """The pre-training corpus.

    Attributes:
        corpus: corpus files (any format ``seedr.data.corpus.read_corpus`` reads), quoted globs or
            folders (``seedr.data.inputs.input_files``); empty = the embedded default corpus (token objectives).
        format: corpus format name, or ``auto``.
        max_seq_length: tokens per example, [CLS] and [SEP] included (all three papers: 512).
        packing: how examples are cut from documents (``seedr.data.shards.PACKINGS``).
        max_documents: read at most this many documents (token objectives), e.g. for CPU-scale runs.
        shards: token shard folder to use or create; default ``<out>/../shards/<key>``.
    """

    corpus: list[str] = field(default_factory=list)
    format: str = "auto"
    max_seq_length: int = MAX_LENGTH
    packing: str = PACKING
    max_documents: int | None = None
    shards: str | None = None


@dataclass
class PretrainConfig:
    """A whole pre-training recipe (``seedr pretrain``; recipes in ``seedr/recipes/pretrain``).

    Attributes:
        objective_name: the pre-training objective (``seedr.objectives.OBJECTIVES``: mlm, seed, cpdae,
            ict, bfs, wlp, ict_bfs_wlp, ...).
        objective: the options of the objective's own config class (``objective.<option>``); unset ones
            take its defaults, and the run's config.yaml records them all.
        model: the encoder (``ModelConfig``).
        data: the corpus (``DataConfig``).
        train: the optimisation (``TrainConfig``).
        flops_budget: train for this many floating-point operations instead of ``train.max_steps``: the
            run takes as many steps as the budget buys its objective at its batch and length
            (``seedr.training.compute_budget``), so that objectives of unequal cost compare at equal
            compute (a SEED-Encoder step costs about 2.2 MLM steps at the seedr base's shape). Warm up by
            ``train.warmup_ratio`` then, since the steps differ by objective. A budget that buys no step, or
            more than 10^9 (MAX_STEPS), is refused.
    """

    objective_name: str = "mlm"
    objective: dict[str, Any] = field(default_factory=dict)
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    flops_budget: float | None = None

    def __post_init__(self) -> None:
        if self.flops_budget is not None and not self.flops_budget > 0:
            raise ValueError(f"flops_budget must be a positive number of floating-point operations, got "
                             f"{self.flops_budget}")

    def identity(self) -> dict[str, Any]:
        """What this run trains (``seedr.config.loading.identity``, an experiment step's key): its settings, with
        ``train`` as ``TrainConfig.identity`` gives it; under a ``flops_budget`` the budget decides the
        run's length, so ``max_steps`` (and the warm-up steps a share of it comes to) are placeholders.
        Without a budget the key is what it was before budgets existed (no ``flops_budget`` entry), so that
        no finished step is recomputed for it."""
        keyed = {name: identity(getattr(self, name)) for name in ("objective_name", "objective", "model", "data")}
        if self.flops_budget is None:
            return {**keyed, "train": self.train.identity()}
        return {**keyed, "flops_budget": self.flops_budget, "train": self.train.identity(length_from_data=True)}


#: What an epoch passes over once (``FinetuneConfig.epoch_over``).
EPOCH_UNITS = ("pairs", "queries")
#: How a document's title enters the encoder: ``seedr.retrieval.encode.TITLE_MODES``, written out because
#: that module imports torch (``tests/test_cli.py`` checks that the two agree).
TITLE_MODES = ("pair", "join", "none")


def _fine_tuning_defaults() -> TrainConfig:
    # DPR's learning rate (2e-5) for a fine-tuning without a recipe; recipes set each paper's own values.
    return TrainConfig(learning_rate=2e-5)


@dataclass
class FinetuneConfig:
    """Everything that defines a fine-tuning run (``seedr finetune``; recipes in ``seedr/recipes/finetune``).

    Defaults: SEED-Encoder's Siamese (BM25 Neg) — one shared encoder, [CLS] embedding, dot product,
    triplet loss, a negative from the top 100 BM25 results per (query, positive).

    An epoch (``epochs``, and the order of the data) is a pass over ``epoch_over``: ``pairs`` (the
    default) — one example per labelled (query, relevant document) pair, as BEIR's sentence-transformers
    training makes one ``InputExample`` per qrels pair (``beir.retrieval.train.TrainRetriever.load_train``),
    so every labelled document is trained on in every epoch (SciFact train: 919 pairs); or ``queries`` —
    one example per query with one of its positives drawn each epoch, as DPR's trainer iterates over
    questions (SciFact train: 809). None of the papers says which. The last partial batch of an epoch is
    kept (``drop_last: false``, PyTorch's and sentence-transformers' default), so no pair is left out of
    an epoch; ``drop_last: true`` drops it, for losses that want full batches of in-batch negatives.

    Attributes:
        model: the encoder to fine-tune: a built-in name (``minilm``, ``seedr-base``), a model folder or a
            seedr run folder.
        train_data: training data: a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) or a DPR
            retriever JSON file.
        train_split: the qrels split of a BEIR folder to train on.
        dev_qrels: dev labels, evaluated during training (SEED-Encoder Figure 6); unset: no dev set.
        dev_queries: dev queries: a file, folder or quoted glob; default: queries.jsonl of the training folder.
        dev_corpus: dev corpus: a file, folder or quoted glob; default: the training corpus.
        dev_every: optimizer steps between dev evaluations; 0 = only before and after training.
        dev_metrics: the metrics of the dev evaluations (ir_measures names).
        dev_depth: documents retrieved per dev query.
        watch: labelled queries scored at every dev evaluation, never stopped on or kept by (``qrels``,
            ``queries``, ``corpus`` files), logged as ``watch/<metric>``: how a label-free validation tracks them.
        patience: dev evaluations in a row without a better first dev metric after which training stops
            (early stopping); 0 = train to train.max_steps.
        keep_best: the run's encoder/ is the model of its best dev evaluation (the first dev metric; the
            starting model included), kept in best/, rather than the last step's.
        shared_encoder: one encoder for queries and documents (Siamese: SEED, ANCE, CPDAE) or separate
            towers (DPR); null = the model folder's own (a two-tower checkpoint keeps its towers), else shared.
        pooling: cls or mean; null = what the model folder records, else cls.
        similarity: dot or cosine; null = what the model folder records, else dot.
        scale: cosine's inverse temperature; null = 20.
        title: how a document's title enters the encoder: pair (title [SEP] text), join ("title text")
            or none; null = what the model folder records, else pair.
        query_max_length: tokens per query.
        document_max_length: tokens per document (FirstP: the first 512, as ANCE and SEED-Encoder).
        loss: the loss (``seedr.losses.LOSSES``: in_batch_softmax, nll, triplet).
        loss_options: options of the loss, e.g. {margin: 1.0, in_batch: false}.
        negatives: the negative strategy (``seedr.negatives.NEGATIVES``: ance, bm25, in_batch, static).
        negative_options: options of the negative strategy, e.g. {depth: 100}.
        negatives_per_query: hard negatives per query in a batch (DPR: 1, CPDAE: 7).
        positive_grade: the least relevance grade trained on as a positive; documents of a lower positive
            grade are only kept out of a query's negatives (mined and in-batch), as the other pairs mined
            from a pseudo-query's own document are (``seedr adapt``).
        epochs: when set, train.max_steps is this many passes over epoch_over.
        epoch_over: what an epoch passes over once: pairs (each labelled (query, positive)) or queries.
        drop_last: drop an epoch's last partial batch (true) or train on it (false).
        reinitialize: no pre-training: the model's architecture and vocabulary with fresh weights.
        few_shot: train on this many sampled queries (≥ 1) or this fraction (< 1) of them.
        seeds: few-shot: one run per seed (its sample and training seed), averaged in few-shot.md.
        encode_batch_size: encoding batch of dev evaluation and negative mining.
        train: the optimisation (``TrainConfig``), with fine-tuning's defaults: learning rate 2e-5 and a
            10% warm-up.
    """

    model: str = FINETUNE_MODEL
    train_data: str = ""
    train_split: str = "train"
    dev_qrels: str | None = None
    dev_queries: str | None = None
    dev_corpus: str | None = None
    dev_every: int = 0
    dev_metrics: list[str] = field(default_factory=lambda: ["MRR@10", "nDCG@10", "R@100"])
    dev_depth: int = 100
    watch: dict[str, str] = field(default_factory=dict)
    patience: int = 0
    keep_best: bool = False
    shared_encoder: bool | None = None
    pooling: str | None = None
    similarity: str | None = None
    scale: float | None = None
    title: str | None = None
    query_max_length: int = QUERY_MAX_LENGTH
    document_max_length: int = MAX_LENGTH
    loss: str = "triplet"
    loss_options: dict[str, Any] = field(default_factory=dict)
    negatives: str = "bm25"
    negative_options: dict[str, Any] = field(default_factory=dict)
    negatives_per_query: int = 1
    positive_grade: int = POSITIVE_GRADE
    epochs: float | None = None
    epoch_over: str = EPOCH_UNITS[0]
    drop_last: bool = False
    reinitialize: bool = False
    few_shot: float | None = None
    seeds: list[int] = field(default_factory=list)
    encode_batch_size: int = ENCODE_BATCH_SIZE
    train: TrainConfig = field(default_factory=_fine_tuning_defaults)

    def __post_init__(self) -> None:
        if self.pooling not in (None, "cls", "mean"):
            raise ValueError(f"pooling must be cls or mean, got {self.pooling!r}")
        if self.similarity not in (None, "dot", "cosine"):
            raise ValueError(f"similarity must be dot or cosine, got {self.similarity!r}")
        if self.watch and sorted(self.watch) != sorted(WATCH_FILES):
            raise ValueError(f"watch names {', '.join(WATCH_FILES)} (files), got {sorted(self.watch)}")
        if self.negatives_per_query < 0 or self.dev_every < 0 or self.patience < 0:
            raise ValueError("negatives_per_query, dev_every and patience cannot be negative")
        if self.positive_grade < 1:
            raise ValueError(f"positive_grade must be at least 1, got {self.positive_grade}")
        if self.few_shot is not None and self.few_shot <= 0:
            raise ValueError(f"few_shot must be a positive count or fraction, got {self.few_shot}")
        if self.title not in (None, *TITLE_MODES):
            raise ValueError(f"title must be one of {', '.join(TITLE_MODES)}, got {self.title!r}")
        if self.epoch_over not in EPOCH_UNITS:
            raise ValueError(f"epoch_over must be one of {', '.join(EPOCH_UNITS)}, got {self.epoch_over!r}")

    def identity(self) -> dict[str, Any]:
        """What this run trains (``seedr.config.loading.identity``, an experiment step's key): its settings, with
        ``train`` as ``TrainConfig.identity`` gives it — told whether ``epochs`` sets the run's length."""
        data = {**dataclasses.asdict(self), "train": self.train.identity(length_from_data=self.epochs is not None)}
        for name, default in _LATER_SETTINGS.items():  # at their defaults they compute what runs before them did
            if data[name] == default:
                del data[name]
        return data


#: Fine-tuning settings added after experiments recorded their steps, with the default that leaves a run
#: as it was: left out of ``FinetuneConfig.identity`` at that default, so no recorded step is re-keyed.
_LATER_SETTINGS = {"patience": 0, "keep_best": False, "positive_grade": POSITIVE_GRADE, "watch": {}}


__all__ = ["ADAPT_RECIPE", "EPOCH_UNITS", "LARGE_WARMUP_SHARE", "MAX_STEPS", "SCHEDULERS", "TITLE_MODES",
           "DataConfig",
           "FinetuneConfig", "ModelConfig", "Pooling", "PretrainConfig", "TrainConfig"]
