"""The step ``adapt`` → ``seedr.pipeline.adapt`` (``seedr adapt``, ``seedr.adapt``): a model adapted
to a corpus without labels — pairs mined from its documents, an optional continued pre-training, fine-tuning
validated on held-out pairs with patience, the best model kept as the step's encoder."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from seedr.config.loading import from_dict, identity, merge_settings, read_recipe
from seedr.config.settings import ADAPT_RECIPE
from seedr.experiments.steps.base import STEPS, ExperimentStep
from seedr.experiments.steps.training import check_options
from seedr.io.run_folders import PRETRAINING
from seedr.losses import LOSSES
from seedr.negatives import NEGATIVES
from seedr.objectives import OBJECTIVES
from seedr.pipeline import adapt as adaptation
from seedr.pipeline.resolution import finetuning_config, pretraining_config
from seedr.recipes import recipe_path
from seedr.training.mined_pairs import PAIR_SOURCES


@dataclasses.dataclass
class AdaptOptions:
    """What ``seedr adapt`` takes beside the fine-tuning settings.

    Attributes:
        corpus: the documents (paths; a BEIR folder stands for its ``corpus.jsonl``).
        pairs: pair sources (``ict``, ``title``, ``bfs``, ``wlp``, ``crop``); null: every one the corpus gives.
        pretrain: a pre-training recipe (``seed``, ``cpdae``, ``mlm`` ...) run on the training documents
            first, or null.
        pretrain_settings: the pre-training's settings over that recipe (``train.max_steps`` ...).
        seed: the training seed of both stages and of the mined pairs (or ``train.seed``); null: the recipe's.
        max_documents: read only the corpus's first documents.
        validation: documents held out for validation (≥ 1) or their share (< 1); null: 10%, at most 1,000.
    """

    corpus: list[str] = dataclasses.field(default_factory=list)
    pairs: list[str] | None = None
    pretrain: str | None = None
    pretrain_settings: dict[str, Any] = dataclasses.field(default_factory=dict)
    seed: int | None = None
    max_documents: int | None = None
    validation: float | None = None

    def __post_init__(self) -> None:
        if not self.corpus:
            raise ValueError("corpus is required: the documents to mine pairs from")
        unknown = sorted(set(self.pairs or []) - set(PAIR_SOURCES))
        if self.pairs is not None and (unknown or not self.pairs):
            raise ValueError(f"pairs: unknown pair source(s) {unknown or '(none given)'}; sources: "
                             f"{', '.join(PAIR_SOURCES)}")
        if self.max_documents is not None and self.max_documents < 2:
            raise ValueError(f"max_documents must be at least 2 (some to train on, some held out), got "
                             f"{self.max_documents}")
        if self.validation is not None and self.validation <= 0:
            raise ValueError(f"validation must be a share (< 1) or a number of documents (≥ 1), got {self.validation}")
        if self.pretrain_settings and self.pretrain is None:
            raise ValueError("pretrain_settings without pretrain: name the pre-training recipe")


@dataclasses.dataclass
class AdaptPlan:
    """An adapt step resolved: its options, the fine-tuning config and the continued pre-training's, if any."""

    options: AdaptOptions
    finetuning: Any
    pretraining: Any = None


@STEPS.register("adapt")
class AdaptStep(ExperimentStep):
    """``seedr adapt``: settings are ``AdaptOptions`` keys (``corpus``, ``pairs``, ``pretrain``,
    ``pretrain_settings``, ``seed``, ``max_documents``, ``validation``) and fine-tuning keys (``model``,
    ``train.*``, ``dev_every``, ``patience`` ...) over the ``adapt`` recipe (or the one ``config`` names);
    adapt sets the training and dev files itself. The product is the best validation's encoder."""

    kind = "adapt"
    model_key = "model"
    recipe_stage = "finetune"

    def _split(self) -> tuple[dict[str, Any], dict[str, Any], bool]:
        """The adapt options, the fine-tuning settings (over their recipe), and whether they name a pooling."""
        settings = merge_settings(self.settings)
        names = {field.name for field in dataclasses.fields(AdaptOptions)}
        options = {key: settings.pop(key) for key in list(settings) if key in names}
        if isinstance(options.get("corpus"), str):
            options["corpus"] = [options["corpus"]]
        if isinstance(options.get("pairs"), str):
            options["pairs"] = [options["pairs"]]
        for key in ("train_data", "dev_qrels", "dev_queries", "dev_corpus", "few_shot", "seeds"):
            if key in settings:
                raise ValueError(f"{self.where} adapt.{key}: adapt mines its training and validation data itself "
                                 "and trains one run; give corpus (and pairs, validation) instead")
        pooling_given = "pooling" in settings
        recipe = settings.pop("config", ADAPT_RECIPE)
        try:
            path = recipe_path(recipe, "finetune")
        except FileNotFoundError as error:
            raise ValueError(f"{self.where} adapt.config: {error}") from None
        return options, merge_settings(read_recipe(path), settings), pooling_given

    def config(self) -> AdaptPlan:
        given, settings, _ = self._split()
        try:
            options = from_dict(AdaptOptions, given, f"{self.where} adapt")
        except ValueError as error:  # AdaptOptions' own checks name no place
            message = str(error)
            raise ValueError(message if message.startswith(self.where) else f"{self.where} adapt: {message}") from None
        seeded = {"train": {"seed": options.seed}} if options.seed is not None else {}
        finetuning = finetuning_config(merge_settings(settings, seeded), f"{self.where} adapt")
        options.seed = finetuning.train.seed  # one seed, however it was written, for both stages and the pairs
        seeded = {"train": {"seed": options.seed}}
        check_options(LOSSES, finetuning.loss, finetuning.loss_options, f"{self.where} adapt.loss_options")
        check_options(NEGATIVES, finetuning.negatives, finetuning.negative_options,
                      f"{self.where} adapt.negative_options")
        pretraining = None
        if options.pretrain is not None:
            try:
                path = recipe_path(options.pretrain, "pretrain")
            except FileNotFoundError as error:
                raise ValueError(f"{self.where} adapt.pretrain: {error}") from None
            layered = merge_settings(read_recipe(path), options.pretrain_settings, seeded,
                                     {"model": {"init": finetuning.model}})
            pretraining = pretraining_config(layered, f"{self.where} adapt.pretrain_settings",
                                             f"{self.where} adapt.pretrain_settings.objective")
        return AdaptPlan(options, finetuning, pretraining)

    def resolved(self) -> Any:
        return identity(self.config())

    def chosen_code(self) -> list[str]:
        plan = self.config()
        chosen = [LOSSES.get(plan.finetuning.loss).__module__, NEGATIVES.get(plan.finetuning.negatives).__module__]
        if plan.pretraining is not None:
            chosen.append(OBJECTIVES.get(plan.pretraining.objective_name).__module__)
        return chosen

    def run(self, out_dir: Path) -> dict[str, Any]:
        plan = self.config()
        options = plan.options
        # with its tracking's diagnostics.json, which the experiment's results read
        return adaptation.adapt(out_dir, options.corpus, plan.finetuning, sources=options.pairs,
                                validation=options.validation, max_documents=options.max_documents,
                                pretraining=plan.pretraining, pooling_given=self._split()[2], resume=True)

    def history_dirs(self, out_dir: Path) -> list[Path]:
        stage = [out_dir / PRETRAINING] if self.config().pretraining is not None else []
        return [*stage, out_dir]

    def figures(self, out_dir: Path) -> list[Path]:
        return [out_dir / "validation.png"]


__all__ = ["AdaptOptions", "AdaptPlan", "AdaptStep"]
