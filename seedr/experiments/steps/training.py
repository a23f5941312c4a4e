"""The steps that train or examine an encoder: ``pretrain`` → ``seedr.pipeline.pretrain`` (``seedr
pretrain``), ``finetune`` → ``seedr.pipeline.finetune`` (``seedr finetune``), each over the config the
pipeline's settings resolution builds (``seedr.pipeline.resolution``), ``average`` →
``seedr.pipeline.average`` (``seedr average``) and ``diagnose`` → ``seedr.pipeline.diagnose`` (``seedr
diagnose``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from seedr.config.loading import from_dict, merge_settings
from seedr.experiments.steps.base import STEPS, ExperimentStep
from seedr.losses import LOSSES
from seedr.negatives import NEGATIVES
from seedr.objectives import OBJECTIVES
from seedr.pipeline import average as averaging
from seedr.pipeline import diagnose as diagnosing
from seedr.pipeline import finetune as finetuning
from seedr.pipeline import pretrain as pretraining
from seedr.pipeline.average import AverageConfig as AveragingConfig
from seedr.pipeline.diagnose import DiagnoseConfig as DiagnosingConfig
from seedr.pipeline.resolution import finetuning_config, pretraining_config
from seedr.registry import Registry


def check_options(registry: Registry[Any], name: str, options: dict[str, Any] | None, where: str) -> None:
    """``Registry.check`` with ``where`` (file and condition) in front of its message."""
    try:
        registry.check(name, options)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None


@STEPS.register("pretrain")
class PretrainStep(ExperimentStep):
    """``seedr pretrain``: settings are ``PretrainConfig`` keys (``objective_name``, ``objective.*``,
    ``model.*``, ``data.*``, ``train.*``)."""

    kind = "pretrain"
    model_key = "model.init"
    recipe_stage = "pretrain"

    def config(self) -> Any:
        # the objective's options spelled out, its defaults included: the step is keyed on what it computes
        return pretraining_config(self.settings_over_recipe(), f"{self.where} pretrain",
                                  f"{self.where} pretrain.objective")

    def chosen_code(self) -> list[str]:
        return [OBJECTIVES.get(self.config().objective_name).__module__]

    def run(self, out_dir: Path) -> dict[str, Any]:
        return {"last": pretraining.train(self.config(), out_dir, resume=True)}


@STEPS.register("finetune")
class FinetuneStep(ExperimentStep):
    """``seedr finetune``: settings are ``FinetuneConfig`` keys (``model``, ``train_data``, ``loss``,
    ``loss_options``, ``negatives``, ``negative_options``, ``pooling``, ``train.*`` ...)."""

    kind = "finetune"
    model_key = "model"
    recipe_stage = "finetune"

    def config(self) -> Any:
        config = finetuning_config(self.settings_over_recipe(), f"{self.where} finetune")
        if config.few_shot is not None and len(config.seeds) > 1:
            raise ValueError(f"{self.where} finetune: few-shot with several seeds trains several encoders; give "
                             "one condition per seed (grid: {{seed: [...]}} with train.seed) and average them "
                             "with groups")
        check_options(LOSSES, config.loss, config.loss_options, f"{self.where} finetune.loss_options")
        check_options(NEGATIVES, config.negatives, config.negative_options,
                      f"{self.where} finetune.negative_options")
        return config

    def chosen_code(self) -> list[str]:
        config = self.config()
        return [LOSSES.get(config.loss).__module__, NEGATIVES.get(config.negatives).__module__]

    def run(self, out_dir: Path) -> dict[str, Any]:
        return finetuning.train(self.config(), out_dir, resume=True)

    def run_folder(self, out_dir: Path) -> Path:
        config = self.config()
        if config.few_shot is not None:  # the one seed's run folder (seedr.training.few_shot.run_few_shot)
            return out_dir / f"seed-{(config.seeds or [config.train.seed])[0]}"
        return out_dir


@dataclasses.dataclass
class AverageConfig:
    """``seedr average`` options (``seedr.modeling.averaging``): the previous step's encoder (``model``), or
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
    reports_run = False  # no training of its own: the members' curves are their steps'

    def config(self) -> AverageConfig:
        return from_dict(AverageConfig, merge_settings(self.settings), f"{self.where} average")

    def members(self) -> list[str]:
        """The models averaged, in order (the first is the template)."""
        config = self.config()
        run = Path(config.model).parent if Path(config.model).name == "encoder" else Path(config.model)
        first = averaging.checkpoint_members(run, config.checkpoints) if config.checkpoints else [config.model]
        return [*first, *config.others]

    def run(self, out_dir: Path) -> dict[str, Any]:
        """``seedr average MEMBERS --out OUT/encoder --weight ...``."""
        averaged = AveragingConfig(models=self.members(), out=out_dir / "encoder", weight=self.config().weights)
        return averaging.run(averaged)[1]


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
        """``seedr diagnose MODEL --out OUT`` with the step's options (the runner holds OUT, made fresh)."""
        config = self.config()
        diagnosed = DiagnosingConfig(
            model=config.model, out=out_dir, corpus=config.corpus or None, max_documents=config.max_documents,
            lengths=config.lengths, pairs=config.pairs, positives=config.positives, split=config.split,
            positive_count=config.positive_pairs, pooling=config.pooling, word_texts=config.word_texts,
            reliance_texts=config.reliance_texts, seed=config.seed)
        result, _, _ = diagnosing.diagnose_into(diagnosed)
        return {"metrics": result["metrics"]}

    def product(self, out_dir: Path) -> str | None:
        return None

    def figures(self, out_dir: Path) -> list[Path]:
        return [out_dir / "diagnostics.png"]
