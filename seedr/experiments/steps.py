"""The steps an experiment chains: each calls the library function its stage command calls.

``pretrain`` → ``seedr.training.pretrain.pretrain`` (``seedr pretrain``), ``finetune`` →
``seedr.training.finetune.finetune`` (``seedr finetune``), ``average`` →
``seedr.engine.averaging.average_encoders`` (``seedr average``), ``diagnose`` → the diagnostics of ``seedr
diagnose``, and the setup steps ``prepare`` and ``retrieval_task`` → ``seedr.data.prepare.prepare_corpus``
(``seedr prepare``, the latter plus a seeded held-out split) and ``open_qa`` →
``seedr.data.open_qa.build_open_qa`` (``seedr prepare --open-qa``) over a BM25 run it makes. Settings
use the stage config's keys (dotted for nested fields); a step that follows another starts from its
product (the pre-trained or fine-tuned encoder) unless its settings name a model.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path
from typing import Any, ClassVar

from seedr.config import from_dict, identity, merge_settings, read_recipe
from seedr.io import atomic_directory, atomic_write
from seedr.registry import Registry

STEPS: Registry[type[ExperimentStep]] = Registry("experiment step")


def check_options(registry: Registry[Any], name: str, options: dict[str, Any] | None, where: str) -> None:
    """``Registry.check`` with ``where`` (file and condition) in front of its message."""
    try:
        registry.check(name, options)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None


class ExperimentStep:
    """A kind of step: validate its settings, run it into a folder, name the model it produced."""

    #: Its name in ``STEPS`` (the key of the step in an experiment file).
    kind: ClassVar[str]
    #: Setting that names the model a step starts from, filled with the previous step's product.
    model_key: ClassVar[str | None] = None
    #: The stage whose shipped recipes (``seedr.recipes``) the setting ``config`` names, as the stage
    #: command's ``--config`` does (``settings_over_recipe``); steps of other kinds take no ``config``.
    recipe_stage: ClassVar[str] = ""

    def __init__(self, settings: dict[str, Any], where: str) -> None:
        self.settings = settings
        self.where = where

    def with_model(self, model: str | None) -> ExperimentStep:
        """This step starting from ``model`` (the previous step's product) unless it names its own."""
        if model is None or self.model_key is None:
            return self
        given: Any = merge_settings(self.settings)
        for part in self.model_key.split("."):  # named by a dotted key or inside a nested mapping
            given = given.get(part) if isinstance(given, dict) else None
        if given is not None:
            return self
        return type(self)(merge_settings(self.settings, {self.model_key: model}), self.where)

    def settings_over_recipe(self) -> dict[str, Any]:
        """The settings, nested, over the recipe their ``config`` names (a recipe's name or a YAML file,
        as ``--config``): the stage's defaults, then the recipe, then the settings, as the stage command
        layers them, so that an experiment names a shipped recipe instead of copying it. The step's
        folder is keyed on the config this builds, not on the recipe's name."""
        settings = merge_settings(self.settings)
        recipe = settings.pop("config", None)
        if recipe is None:
            return settings
        from seedr.recipes import recipe_path

        try:
            path = recipe_path(recipe, self.recipe_stage)
        except FileNotFoundError as error:
            raise ValueError(f"{self.where} {self.kind}.config: {error}") from None
        return merge_settings(read_recipe(path), settings)

    def config(self) -> Any:
        """The stage's config built from the settings: defaults applied, validated (``ValueError`` naming
        ``self.where`` and the key for settings the stage does not take)."""
        raise NotImplementedError

    def validate(self) -> None:
        """Raise ``ValueError`` naming ``self.where`` and the key for settings the stage does not take."""
        self.config()

    def resolved(self) -> Any:
        """What this step computes, in JSON-like data (``seedr.config.identity`` of its config): its folder
        is keyed on it, so settings that resolve alike share a step (a default given explicitly, a
        warm-up as a share or in steps) and a changed default gives a new one."""
        return identity(self.config())

    def run(self, out_dir: Path) -> dict[str, Any]:
        """Run into ``out_dir`` (resuming what an interrupted run left there); returns a summary."""
        raise NotImplementedError

    def product(self, out_dir: Path) -> str | None:
        """The model this step produced (for the next step and for retrieval), if any."""
        return str(out_dir / "encoder")

    def work(self) -> tuple[str, float | None]:
        """What kind of work this step is and how much of it, for the experiment's ETA: units of one kind
        take time in proportion to their size (``None``: not known until earlier units have run, e.g. a
        model another step produces). Set-up and analysis steps count one each of their kind."""
        return self.kind, 1.0

    def history_dirs(self, out_dir: Path) -> list[Path]:
        """Run folders whose training curves (and result JSONs) the report shows."""
        return [out_dir]

    def figures(self, out_dir: Path) -> list[Path]:
        """Figures of the step itself that the report shows."""
        return []


def model_parameters(model: str | None) -> float | None:
    """About how many weights the encoder of ``model`` multiplies per token (layers × 12 × hidden², from its
    ``config.json``), to size work for the ETA; ``None`` while the folder does not exist (another step's
    product not made yet)."""
    from seedr.modeling.encoder import resolve_model_path

    if model is None:
        return None
    try:
        config = json.loads((resolve_model_path(model) / "config.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return float(config.get("num_hidden_layers", 1) * 12 * config.get("hidden_size", 1) ** 2)


def _line_count(path: Path) -> int:
    with open(path, "rb") as stream:
        return sum(1 for _ in stream)


@STEPS.register("pretrain")
class PretrainStep(ExperimentStep):
    """``seedr pretrain``: settings are ``PretrainConfig`` keys (``objective_name``, ``objective.*``,
    ``model.*``, ``data.*``, ``train.*``)."""

    kind = "pretrain"
    model_key = "model.init"
    recipe_stage = "pretrain"

    def config(self) -> Any:
        from seedr.training.pretrain import PretrainConfig

        config = from_dict(PretrainConfig, self.settings_over_recipe(), f"{self.where} pretrain")
        self.objective_config(config)
        return config

    def objective_config(self, config: Any) -> Any:
        """The objective's own config (``objective.*`` over its defaults), as ``pretrain`` builds it."""
        from seedr.objectives import OBJECTIVES

        objective = OBJECTIVES.get(config.objective_name)
        return from_dict(objective.config_class, config.objective, f"{self.where} pretrain.objective")

    def resolved(self) -> Any:
        # ``objective`` holds the options as given: resolved, ``{}`` and the defaults spelled out are one step
        config = self.config()
        return {**identity(config), "objective": identity(self.objective_config(config))}

    def run(self, out_dir: Path) -> dict[str, Any]:
        from seedr.training.pretrain import pretrain

        return {"last": pretrain(self.config(), out_dir, resume=True)}

    def work(self) -> tuple[str, float | None]:
        """Training: tokens through the encoder × its parameters (the objectives' heads left out)."""
        config = self.config()
        parameters = model_parameters(config.model.init) if config.model.init else None
        train = config.train
        tokens = train.max_steps * (train.global_batch_size or train.batch_size) * config.data.max_seq_length
        return "training", None if parameters is None else tokens * parameters


@STEPS.register("finetune")
class FinetuneStep(ExperimentStep):
    """``seedr finetune``: settings are ``FinetuneConfig`` keys (``model``, ``train_data``, ``loss``,
    ``loss_options``, ``negatives``, ``negative_options``, ``pooling``, ``train.*`` ...)."""

    kind = "finetune"
    model_key = "model"
    recipe_stage = "finetune"

    def config(self) -> Any:
        from seedr.losses import LOSSES
        from seedr.negatives import NEGATIVES
        from seedr.training.finetune import FinetuneConfig

        config = from_dict(FinetuneConfig, self.settings_over_recipe(), f"{self.where} finetune")
        if config.few_shot is not None and len(config.seeds) > 1:
            raise ValueError(f"{self.where} finetune: few-shot with several seeds trains several encoders; give "
                             "one condition per seed (grid: {{seed: [...]}} with train.seed) and average them "
                             "with groups")
        check_options(LOSSES, config.loss, config.loss_options, f"{self.where} finetune.loss_options")
        check_options(NEGATIVES, config.negatives, config.negative_options,
                      f"{self.where} finetune.negative_options")
        return config

    def run(self, out_dir: Path) -> dict[str, Any]:
        from seedr.training.finetune import finetune

        return finetune(self.config(), out_dir, resume=True)

    def work(self) -> tuple[str, float | None]:
        """Training: tokens through the encoder (queries, positives and negatives) × its parameters; a run of
        epochs is sized once its training labels exist (made by a set-up step)."""
        config = self.config()
        train = config.train
        batch = train.global_batch_size or train.batch_size
        steps: float | None = train.max_steps
        if config.epochs is not None:
            labels = Path(config.train_data) / "qrels" / f"{config.train_split}.tsv"
            steps = config.epochs * _line_count(labels) / batch if labels.is_file() else None
        parameters = model_parameters(config.model)
        per_example = config.query_max_length + config.document_max_length * (1 + config.negatives_per_query)
        if steps is None or parameters is None:
            return "training", None
        return "training", steps * batch * per_example * parameters

    def product(self, out_dir: Path) -> str | None:
        config = self.config()
        if config.few_shot is not None:  # the one seed's run folder (seedr.training.few_shot.run_few_shot)
            return str(out_dir / f"seed-{(config.seeds or [config.train.seed])[0]}" / "encoder")
        return str(out_dir / "encoder")

    def history_dirs(self, out_dir: Path) -> list[Path]:
        config = self.config()
        if config.few_shot is not None:
            return [out_dir / f"seed-{(config.seeds or [config.train.seed])[0]}"]
        return [out_dir]


@dataclasses.dataclass
class AverageConfig:
    """``seedr average`` options (``seedr.engine.averaging``): the previous step's encoder (``model``), or
    the encoders of its run's ``checkpoints`` newest checkpoints instead, then the ``others`` models (e.g.
    ``minilm``, the model it was fine-tuned from: WiSE-FT), one weight each (default equal)."""

    model: str = ""
    checkpoints: int | None = None
    others: list[str] = dataclasses.field(default_factory=list)
    weights: list[float] | None = None

    def __post_init__(self) -> None:
        if self.checkpoints is not None and self.checkpoints < 1:
            raise ValueError(f"checkpoints must be at least 1, got {self.checkpoints}")
        members = (self.checkpoints or 1) + len(self.others)
        if members < 2:
            raise ValueError("averaging needs two or more models: give checkpoints ≥ 2 or others")
        if self.weights is not None and len(self.weights) != members:
            raise ValueError(f"{len(self.weights)} weights for {members} models (the checkpoints, oldest first, "
                             "or the model, then the others): give one per model")


@STEPS.register("average")
class AverageStep(ExperimentStep):
    """``seedr average`` of the previous step's encoder (or its newest checkpoints) and other models; the
    product is the averaged encoder."""

    kind = "average"
    model_key = "model"

    def config(self) -> AverageConfig:
        return from_dict(AverageConfig, merge_settings(self.settings), f"{self.where} average")

    def members(self) -> list[str]:
        """The models averaged, in order (the first is the template)."""
        from seedr.engine.averaging import checkpoint_encoders

        config = self.config()
        run = Path(config.model).parent if Path(config.model).name == "encoder" else Path(config.model)
        first = ([str(path) for path in checkpoint_encoders(run, config.checkpoints)]
                 if config.checkpoints else [config.model])
        return [*first, *config.others]

    def run(self, out_dir: Path) -> dict[str, Any]:
        from seedr.engine.averaging import average_encoders

        return average_encoders(self.members(), out_dir / "encoder", self.config().weights)

    def history_dirs(self, out_dir: Path) -> list[Path]:
        return []  # no training of its own: the members' curves are their steps'


@dataclasses.dataclass
class DiagnoseConfig:
    """``seedr diagnose`` options: texts for random-pair similarity (and CPDAE's words, and SEED-Encoder's
    reliance on [CLS] over ``reliance_texts`` of them), positive pairs for alignment / uniformity /
    anisotropy."""

    model: str = ""
    corpus: list[str] = dataclasses.field(default_factory=list)
    max_documents: int = 2000
    lengths: list[int] = dataclasses.field(default_factory=lambda: [64, 128, 256, 512])
    pairs: int = 256
    positives: str | None = None
    split: str = "train"
    positive_pairs: int = 256
    pooling: str = "cls"
    word_texts: int = 8
    reliance_texts: int = 64
    seed: int = 13


@STEPS.register("diagnose")
class DiagnoseStep(ExperimentStep):
    """``seedr diagnose`` on the previous step's run folder; writes ``diagnostics.json`` and ``.png``.

    ``model`` is the previous step's *run folder* (not its encoder): a CPDAE run adds its decoded words,
    a SEED-Encoder run its decoder's reliance on [CLS] by position.
    """

    kind = "diagnose"
    model_key = "model"

    def config(self) -> DiagnoseConfig:
        return from_dict(DiagnoseConfig, merge_settings(self.settings), f"{self.where} diagnose")

    def with_model(self, model: str | None) -> ExperimentStep:
        # the run folder holds the checkpoint CPDAE's decoder is rebuilt from; the encoder is inside it
        run_folder = str(Path(model).parent) if model is not None and Path(model).name == "encoder" else model
        return super().with_model(run_folder)

    def run(self, out_dir: Path) -> dict[str, Any]:
        from seedr.experiments.diagnostics import corpus_texts, diagnose, positive_pairs, write_diagnostics

        config = self.config()
        texts = corpus_texts(config.corpus, config.max_documents) if config.corpus else []
        pairs = (positive_pairs(config.positives, config.positive_pairs, config.seed, config.split,
                                config.max_documents) if config.positives else [])
        result = diagnose(config.model, texts, pairs, config.lengths, config.pairs, config.seed, config.pooling,
                          config.word_texts, show_progress=True, reliance_texts=config.reliance_texts)
        write_diagnostics(result, out_dir)
        return {"metrics": result["metrics"]}

    def product(self, out_dir: Path) -> str | None:
        return None

    def figures(self, out_dir: Path) -> list[Path]:
        return [out_dir / "diagnostics.png"]


@STEPS.register("prepare")
class PrepareStep(ExperimentStep):
    """``seedr prepare`` (a setup step): settings are ``PrepareOptions`` keys, e.g. ``corpus`` and
    ``passages: 100`` for DPR's 100-word passages; the product is the prepared folder."""

    kind = "prepare"

    def config(self) -> Any:
        from seedr.data.prepare import PrepareOptions

        return from_dict(PrepareOptions, merge_settings(self.settings), f"{self.where} prepare")

    def run(self, out_dir: Path) -> dict[str, Any]:
        from seedr.data.prepare import prepare_corpus

        summary = prepare_corpus(out_dir, self.config())
        return {"articles": summary.articles, "documents": summary.documents}

    def product(self, out_dir: Path) -> str | None:
        return str(out_dir)

    def history_dirs(self, out_dir: Path) -> list[Path]:
        return []


@dataclasses.dataclass
class OpenQAConfig:
    """Open-domain QA at a budget (``seedr.data.open_qa``): ``questions`` (NQ-open format) over the
    ``passages`` (a corpus, e.g. a ``prepare`` step's 100-word passages of the shared Wikipedia), split by
    the committed ``split`` — a file, or the name of one shipped with seedr (``nq-open-dev``:
    ``seedr/experiments/splits/nq-open-dev.json``); BM25 ranks every question ``depth`` deep for the
    training positives, hard negatives and pool distractors. The other fields are ``build_open_qa``'s."""

    questions: str = ""
    passages: list[str] = dataclasses.field(default_factory=list)
    split: str = ""
    depth: int = 100
    positives: int = 3
    hard_negatives: int = 30
    answer_passages: int = 5
    run_depth: int = 20
    random_passages: int = 20_000
    seed: int = 0


def shipped_split(split: str) -> str:
    """``split`` as a path: a name without a folder or suffix (``nq-open-dev``) is the split of that name
    shipped inside seedr (``seedr/experiments/splits/``), so an installed seedr runs the experiments
    that use it; anything else is a path."""
    if "/" in split or "\\" in split or Path(split).suffix:
        return split
    return str(Path(__file__).resolve().parent / "splits" / f"{split}.json")


@STEPS.register("open_qa")
class OpenQAStep(ExperimentStep):
    """Set-up step writing DPR-style training data (``train.json``), the scored test questions
    (``test.jsonl``) and their passage pool (``pool/corpus.jsonl``): ``seedr prepare --open-qa`` with
    the BM25 run made here. Tasks read ``{setup.NAME}/test.jsonl`` over ``{setup.NAME}/pool``, and
    fine-tuning trains on ``{setup.NAME}/train.json``."""

    kind = "open_qa"

    def config(self) -> OpenQAConfig:
        return from_dict(OpenQAConfig, merge_settings(self.settings), f"{self.where} open_qa")

    def validate(self) -> None:
        config = self.config()
        for name in ("questions", "split"):
            if not getattr(config, name):
                raise ValueError(f"{self.where} open_qa: {name} is required")
        if not config.passages:
            raise ValueError(f"{self.where} open_qa: passages is required")

    def run(self, out_dir: Path) -> dict[str, Any]:
        from seedr.data.corpus import read_corpus
        from seedr.data.inputs import input_files
        from seedr.data.open_qa import build_open_qa, read_split
        from seedr.data.qa import read_nq_open
        from seedr.retrieval.bm25 import BM25Index

        config = self.config()
        examples = read_nq_open(config.questions)
        split = read_split(shipped_split(config.split), config.questions, examples)
        passages = [passage for path in input_files(config.passages, "corpus") for passage in read_corpus(path)]
        wanted = set(split["train"]) | set(split["test"])
        bm25_run = BM25Index.build(passages, show_progress=True).search(
            {example.id: example.question for example in examples if example.id in wanted}, k=config.depth,
            show_progress=True)
        summary = build_open_qa(out_dir, examples, split, passages, bm25_run, depth=config.depth,
                                positives=config.positives, hard_negatives=config.hard_negatives,
                                answer_passages=config.answer_passages, run_depth=config.run_depth,
                                random_passages=config.random_passages, seed=config.seed, show_progress=True)
        return dataclasses.asdict(summary)

    def product(self, out_dir: Path) -> str | None:
        return str(out_dir)

    def history_dirs(self, out_dir: Path) -> list[Path]:
        return []


@dataclasses.dataclass
class ReqaSplitConfig:
    """ReQA SQuAD cut by article into fine-tuning data and a test side (``seedr.data.reqa_split``):
    ``test_fraction`` 0.99, 0.95 or 0.2 for ICLR 2020's 1% / 5% / 80% training splits."""

    squad: str = ""
    test_fraction: float = 0.2
    seed: int = 0
    validation_fraction: float = 0.1


@STEPS.register("reqa_split")
class ReqaSplitStep(ExperimentStep):
    """Set-up step ``seedr prepare --reqa-split``: fine-tuning reads the folder (``train_data:
    "{setup.NAME}"``) and a ``reqa`` task scores its test side (``squad: "{setup.NAME}/test.json"``)."""

    kind = "reqa_split"

    def config(self) -> ReqaSplitConfig:
        return from_dict(ReqaSplitConfig, merge_settings(self.settings), f"{self.where} reqa_split")

    def validate(self) -> None:
        config = self.config()
        if not config.squad:
            raise ValueError(f"{self.where} reqa_split: squad is required")
        if not 0 < config.test_fraction < 1:
            raise ValueError(f"{self.where} reqa_split: test_fraction must be in (0, 1), got {config.test_fraction}")

    def run(self, out_dir: Path) -> dict[str, Any]:
        from seedr.data.qa import read_squad
        from seedr.data.reqa_split import write_reqa_split

        config = self.config()
        summary = write_reqa_split(read_squad(config.squad), out_dir, config.test_fraction, config.seed,
                                   config.validation_fraction)
        return dataclasses.asdict(summary)

    def product(self, out_dir: Path) -> str | None:
        return str(out_dir)

    def history_dirs(self, out_dir: Path) -> list[Path]:
        return []


@dataclasses.dataclass
class RetrievalTaskConfig:
    """A labelled retrieval task in one folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/train.tsv``
    and ``qrels/heldout.tsv``), for fine-tuning on one part of the queries and testing on the other.

    ``source`` empty: the embedded Wikipedia leads with their description queries (``seedr prepare``),
    cut to the first ``documents`` documents, their queries split (seeded) into ``test_queries`` held-out
    and ``train_queries`` training queries. ``source`` a BEIR folder: its corpus, its training queries,
    and a seeded sample of ``test_queries`` of its test queries as the held-out set; with ``heldout_from:
    train`` the held-out sample comes from its *training* queries instead and the rest of them train: a
    development split, for choosing a recipe without looking at the test set.
    """

    source: str = ""
    documents: int | None = None
    test_queries: int = 1000
    train_queries: int = 2000
    tokenizer_vocab: int = 0
    seed: int = 13
    heldout_from: str = "test"


@STEPS.register("retrieval_task")
class RetrievalTaskStep(ExperimentStep):
    """Set-up step writing a retrieval task folder (``RetrievalTaskConfig``)."""

    kind = "retrieval_task"

    def config(self) -> RetrievalTaskConfig:
        return from_dict(RetrievalTaskConfig, merge_settings(self.settings), f"{self.where} retrieval_task")

    def validate(self) -> None:
        config = self.config()
        if config.heldout_from not in ("test", "train"):
            raise ValueError(f"{self.where} retrieval_task: heldout_from must be test or train, "
                             f"not {config.heldout_from!r}")
        if config.heldout_from == "train" and not config.source:
            raise ValueError(f"{self.where} retrieval_task: heldout_from: train needs a BEIR source folder")

    def run(self, out_dir: Path) -> dict[str, Any]:
        from seedr.data.corpus import load_corpus, write_corpus
        from seedr.data.prepare import PrepareOptions, prepare_corpus
        from seedr.data.queries import read_qrels, read_queries, sample_queries, write_qrels

        config = self.config()
        if config.source:
            source = Path(config.source)
            for needed in ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv", "qrels/test.tsv"):
                if not (source / needed).is_file():
                    raise FileNotFoundError(f"{source / needed}: the task needs a BEIR folder with corpus.jsonl, "
                                            "queries.jsonl, qrels/train.tsv and qrels/test.tsv")
            corpus = load_corpus(source / "corpus.jsonl")
            queries = read_queries(source / "queries.jsonl")
            test = read_qrels(source / "qrels" / "test.tsv", queries=queries, documents=corpus)
            train = read_qrels(source / "qrels" / "train.tsv", queries=queries, documents=corpus)
            if config.heldout_from == "train":   # a development split: the test queries stay unseen
                test_ids = sample_queries(list(train), count=min(config.test_queries, len(train) - 1),
                                          seed=config.seed)
                heldout = set(test_ids)
                train_ids = [qid for qid in train if qid not in heldout]
                labels = train
            else:
                test_ids = sample_queries(list(test), count=min(config.test_queries, len(test)), seed=config.seed)
                train_ids = list(train)
                labels = {**test, **train}
        else:
            prepared = out_dir.parent / f"{out_dir.name}-prepared"
            if not (prepared / "prepared.json").exists():
                prepare_corpus(prepared, PrepareOptions(tokenizer_vocab=config.tokenizer_vocab))
            corpus = load_corpus(prepared / "corpus.jsonl")
            if config.documents is not None:
                corpus = dict(list(corpus.items())[: config.documents])
            queries = read_queries(prepared / "queries.jsonl")
            labels = {qid: docs for qid, docs in read_qrels(prepared / "qrels" / "test.tsv").items()
                      if all(doc in corpus for doc in docs)}
            order = sample_queries(list(labels), fraction=1.0, seed=config.seed)
            test_ids = order[: config.test_queries]
            train_ids = order[config.test_queries: config.test_queries + config.train_queries]
        with atomic_directory(out_dir) as folder:
            write_corpus(folder / "corpus.jsonl", corpus.values())
            kept = {qid: queries[qid] for qid in [*test_ids, *train_ids]}
            with atomic_write(folder / "queries.jsonl") as stream:
                stream.writelines(json.dumps({"_id": qid, "text": text}) + "\n" for qid, text in kept.items())
            write_qrels(folder / "qrels" / "train.tsv", {q: labels[q] for q in train_ids}, format="beir")
            write_qrels(folder / "qrels" / "heldout.tsv", {q: labels[q] for q in test_ids}, format="beir")
            if not config.source and (out_dir.parent / f"{out_dir.name}-prepared" / "tokenizer").is_dir():
                shutil.copytree(out_dir.parent / f"{out_dir.name}-prepared" / "tokenizer", folder / "tokenizer")
        return {"documents": len(corpus), "test_queries": len(test_ids), "train_queries": len(train_ids)}

    def product(self, out_dir: Path) -> str | None:
        return str(out_dir)

    def history_dirs(self, out_dir: Path) -> list[Path]:
        return []


#: ``{conditions.NAME}`` in a step's settings: the model condition NAME's steps produced.
_CONDITION_REFERENCE = re.compile(r"\{conditions\.([^{}]+)\}")


def condition_references(value: Any) -> list[str]:
    """The conditions named by ``{conditions.NAME}`` anywhere in ``value`` (strings, lists, mappings)."""
    if isinstance(value, dict):
        return [name for item in value.values() for name in condition_references(item)]
    if isinstance(value, list):
        return [name for item in value for name in condition_references(item)]
    return _CONDITION_REFERENCE.findall(value) if isinstance(value, str) else []


def build_step(kind: str, settings: dict[str, Any], where: str) -> ExperimentStep:
    """The step of ``kind`` with ``settings`` (``where`` names it in errors)."""
    return STEPS.get(kind)(settings, where)


#: Settings that name a model or tokenizer to load, where an experiment's steps and retrievals take one.
MODEL_SETTINGS = ("model", "model.init", "model.tokenizer", "negative_options.model")


def _flatten(settings: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested settings as dotted keys (``{"model": {"init": x}}`` → ``{"model.init": x}``)."""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _check_models_reachable(settings: dict[str, Any], where: str) -> None:
    """Refuse a model or tokenizer that this install cannot reach — neither a built-in name (``minilm``,
    ``seedr-base``) nor an existing folder — when the file is read, at every scale (a paper scale is only
    validated, so this is where it learns that ``models/x`` exists only in some checkout). Placeholders
    (``{conditions.X}``) and a step's own chain are filled at run time and not checked here."""
    from seedr.modeling.encoder import BUILTIN_MODELS

    for key, value in _flatten(merge_settings(settings)).items():
        if key not in MODEL_SETTINGS or not isinstance(value, str) or "{" in value or value in BUILTIN_MODELS:
            continue
        if not Path(value).expanduser().is_dir():
            raise ValueError(f"{where}: {key}: {value!r} is neither a built-in model "
                             f"({', '.join(sorted(BUILTIN_MODELS))}) nor a folder here")


def validate(experiment: Any) -> None:
    """Check every step, retrieval and task of a resolved experiment; raise on the first problem."""
    from seedr.experiments.tasks import TASKS, FuseConfig, RetrieveConfig, fuses

    where = str(experiment.path)
    for name, step in experiment.setup.items():
        build_step(step.kind, step.settings, f"{where}: setup.{name}").validate()
    for name, task in experiment.tasks.items():
        TASKS.get(task.kind)(name, task.settings, task.metrics, f"{where}: tasks.{name}").validate()
    earlier: list[str] = []
    for condition in experiment.conditions.values():
        for index, step in enumerate(condition.steps):
            at = f"{where}: conditions.{condition.name}.steps[{index}]"
            build_step(step.kind, step.settings, at).validate()
            for name in condition_references(step.settings):  # conditions run in the file's order
                other = experiment.conditions.get(name)
                if name not in earlier or other is None or not any(
                        build_step(s.kind, s.settings, at).product(Path()) for s in other.steps):
                    raise ValueError(f"{at}: {{conditions.{name}}} is not a condition defined before "
                                     f"{condition.name!r} whose steps produce a model")
        earlier.append(condition.name)
        if fuses(condition.retrieve):
            _validate_fusion(experiment, condition, from_dict(FuseConfig, condition.retrieve,
                                                              f"{where}: conditions.{condition.name}.retrieve"))
        elif condition.retrieve not in ("bm25", "none"):
            retrieve = from_dict(RetrieveConfig, merge_settings(condition.retrieve),
                                 f"{where}: conditions.{condition.name}.retrieve")
            if not condition.steps and not retrieve.model:
                raise ValueError(f"{where}: conditions.{condition.name} has no steps: its retrieve needs a model "
                                 "(or retrieve: bm25)")
    retrieving = {name for name, condition in experiment.conditions.items() if condition.retrieve != "none"}
    if retrieving and not experiment.tasks:
        raise ValueError(f"{where}: conditions retrieve but there are no tasks to evaluate them on")
    diagnosing = {name for name, condition in experiment.conditions.items()
                  if any(step.kind == "diagnose" for step in condition.steps)}
    systems = retrieving | set(experiment.groups)

    def evaluated_on(system: str) -> set[str]:
        """The tasks a condition or group is scored on (a group: those all its members share)."""
        members = experiment.groups.get(system, [system])
        return {task for task in experiment.tasks
                if all(experiment.conditions[member].evaluates(task) for member in members)}

    for group, members in experiment.groups.items():
        missing = sorted(set(members) - retrieving)
        if missing:
            raise ValueError(f"{where}: groups.{group} names unknown condition(s) {missing}")
        if len({frozenset(evaluated_on(member)) for member in members}) > 1:
            raise ValueError(f"{where}: groups.{group}: its members are not scored on the same tasks")
    if retrieving and experiment.baseline not in systems:
        raise ValueError(f"{where}: baseline {experiment.baseline!r} is not a retrieving condition or group")
    if retrieving and evaluated_on(experiment.baseline) != set(experiment.tasks):
        raise ValueError(f"{where}: the baseline {experiment.baseline!r} must be scored on every task (its "
                         "tasks: leave it out)")
    for index, claim in enumerate(experiment.claims):
        known = diagnosing if claim.task == "diagnostics" else systems
        for system in (claim.condition, claim.against):
            if system not in known:
                raise ValueError(f"{where}: claims[{index}] names {system!r}, not a condition or group that "
                                 f"{'ends in diagnose' if claim.task == 'diagnostics' else 'retrieves'}")
        if claim.task == "diagnostics":
            continue
        if claim.task not in experiment.tasks or claim.metric not in experiment.tasks[claim.task].metrics:
            raise ValueError(f"{where}: claims[{index}]: task {claim.task!r} does not report {claim.metric!r}")
        for system in (claim.condition, claim.against):
            if claim.task not in evaluated_on(system):
                raise ValueError(f"{where}: claims[{index}]: {system!r} is not scored on {claim.task!r} (its tasks)")
        if claim.expect not in ("higher", "lower", "similar"):
            raise ValueError(f"{where}: claims[{index}].expect must be higher, lower or similar")
    if experiment.case_study is not None:
        study, field = experiment.case_study, f"{where}: case_study"
        if study.task not in experiment.tasks or experiment.tasks[study.task].kind != "qrels":
            qrels_tasks = sorted(name for name, task in experiment.tasks.items() if task.kind == "qrels")
            raise ValueError(f"{field}: task {study.task!r} is not a qrels task of this experiment; "
                             f"qrels tasks: {qrels_tasks}")
        if not isinstance(study.systems, list) or len(set(study.systems)) != 2 or len(study.systems) != 2:
            raise ValueError(f"{field}: systems must name two different conditions, got {study.systems!r}")
        unknown = [system for system in study.systems if system not in retrieving]
        if unknown:  # a group has no single run to show a top document of
            raise ValueError(f"{field}: {unknown} not a retrieving condition; "
                             f"retrieving: {sorted(retrieving)}")
        if not isinstance(study.queries, int) or study.queries < 1:
            raise ValueError(f"{field}: queries must be a positive number of queries, got {study.queries!r}")
    if experiment.test not in ("permutation", "ttest"):
        raise ValueError(f"{where}: test must be permutation or ttest")
    # last: the structure's errors come first; then what this install can load
    for condition in experiment.conditions.values():
        for index, step in enumerate(condition.steps):
            _check_models_reachable(step.settings, f"{where}: conditions.{condition.name}.steps[{index}]")
        if isinstance(condition.retrieve, dict):
            _check_models_reachable(condition.retrieve, f"{where}: conditions.{condition.name}.retrieve")


def _validate_fusion(experiment: Any, condition: Any, config: Any) -> None:
    """A fusing condition has no steps, fuses retrieving conditions defined before it that do not fuse,
    and selects on a task of the experiment by one of its metrics."""
    from seedr.experiments.tasks import fuses

    where = f"{experiment.path}: conditions.{condition.name}.retrieve"
    if condition.steps:
        raise ValueError(f"{where}: a condition that fuses others' runs has no steps")
    earlier = list(experiment.conditions)[:list(experiment.conditions).index(condition.name)]
    for part in config.fuse:
        other = experiment.conditions.get(part)
        if other is None or other.retrieve == "none" or fuses(other.retrieve):
            raise ValueError(f"{where}: fuse names {part!r}, not a retrieving condition that does not fuse "
                             "others itself")
        if any(condition.evaluates(task) and not other.evaluates(task) for task in experiment.tasks):
            raise ValueError(f"{where}: fuse names {part!r}, which is not scored on every task that "
                             f"{condition.name!r} is")
        if part not in earlier:  # conditions run in the file's order: its runs must be there first
            raise ValueError(f"{where}: fuse names {part!r}, defined after {condition.name!r}: define the "
                             "conditions a fusion fuses before it")
    if config.select_on is not None:
        task = experiment.tasks.get(config.select_on)
        if task is None:
            raise ValueError(f"{where}: select_on {config.select_on!r} is not a task of this experiment; tasks: "
                             f"{', '.join(experiment.tasks)}")
        if config.metric is not None and config.metric not in task.metrics:
            raise ValueError(f"{where}: task {config.select_on!r} does not report {config.metric!r}")
        for part in config.choosers:  # their runs on select_on choose: they must have some
            other = experiment.conditions.get(part)
            if other is None or part not in earlier or fuses(other.retrieve) or not other.evaluates(config.select_on):
                raise ValueError(f"{where}: {part!r} cannot choose the fusion: it is not a retrieving condition "
                                 f"defined before {condition.name!r}, fusing none itself and scored on "
                                 f"{config.select_on!r}")


def record_step(out_dir: Path, step: ExperimentStep, summary: dict[str, Any], seconds: float,
                code: dict[str, str]) -> None:
    """Mark a step finished: ``step.json`` holds its settings, the configuration they resolved to (its
    key), the code that computed it (``seedr.config.code_fingerprint``: the report says which code
    computed a reused step), its summary and wall time (written last)."""
    with atomic_write(out_dir / "step.json") as stream:
        json.dump({"settings": step.settings, "resolved": step.resolved(), "code": code, "summary": summary,
                   "seconds": seconds}, stream, indent=2, default=str)


__all__ = ["STEPS", "AverageConfig", "DiagnoseConfig", "ExperimentStep", "RetrievalTaskConfig", "build_step",
           "check_options", "condition_references", "record_step", "shipped_split", "validate"]
