"""Settings resolution: a training stage's *config* (``seedr.config.settings``' resolved dataclass) from its
defaults, a *recipe* (a YAML file, or a name shipped with seedr), the stage's setting keywords and the
*overrides* (``--set``, ``settings=``), each over the one before; and the setting keywords themselves.

A setting keyword is an option of a training stage that sets one setting: ``finetune``'s ``dev_every`` sets
``dev_every``, ``pretrain``'s ``model`` sets ``model.init``. Each is a field of its stage's config declared
with ``setting``, whose help is the setting's description in the ``Attributes:`` of its settings dataclass
(the text ``seedr config --describe`` shows), and whose default is None: the recipe, then the settings class,
decide. The command's option and the API's keyword are made from that field, so the three cannot say
different things of one setting.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections.abc import Mapping
from typing import Any

from seedr.config.loading import attribute_descriptions, from_dict, merge_settings, read_recipe
from seedr.config.settings import ADAPT_RECIPE, FinetuneConfig, PretrainConfig
from seedr.modeling.folders import pretrained_seed, seed_pooling
from seedr.objectives import OBJECTIVES
from seedr.pipeline.common import CONFIG_STAGES, Settings, is_paths, model_name, path_strings
from seedr.pipeline.options import OPTION, Bound, Option
from seedr.recipes import recipe_path

#: The metadata key of a setting keyword's ``Setting``.
SETTING = "seedr.setting"

#: The settings class of each stage with setting keywords.
SETTINGS_CLASSES: dict[str, type] = {"pretrain": PretrainConfig, "finetune": FinetuneConfig,
                                     "adapt": FinetuneConfig}

#: A stage that runs a recipe of its own when none is given: ``(recipe, the stage it is a recipe of)``.
OWN_RECIPES: dict[str, tuple[str, str]] = {"adapt": (ADAPT_RECIPE, "finetune")}


@dataclasses.dataclass(frozen=True)
class Setting:
    """The setting a keyword sets.

    Attributes:
        key: its dotted key in the stage's settings (``model.init``).
        paths: it holds a list of paths (``data.corpus``): one path given becomes a list of one.
    """

    key: str
    paths: bool = False


@functools.cache
def _descriptions(stage: str) -> dict[str, str]:
    return attribute_descriptions(SETTINGS_CLASSES[stage])


@functools.cache
def _defaults(stage: str) -> Any:
    """The settings ``stage`` runs with when given none: its class's defaults, under its own recipe if any."""
    if stage not in OWN_RECIPES:
        return SETTINGS_CLASSES[stage]()
    name, recipe_stage = OWN_RECIPES[stage]
    return from_dict(SETTINGS_CLASSES[stage], read_recipe(recipe_path(name, recipe_stage)))


def _default(stage: str, key: str) -> Any:
    value: Any = _defaults(stage)
    for part in key.split("."):
        value = getattr(value, part)
    return value


def setting_description(stage: str, key: str) -> str:
    """The description of ``stage``'s setting ``key``, with its default when the settings class (or the
    stage's own recipe) gives one (a recipe may set another), as the settings class documents it."""
    text = _descriptions(stage)[key]
    default = _default(stage, key)
    if default not in (None, "", [], {}) and stage in OWN_RECIPES:
        recipe = OWN_RECIPES[stage][0]
        text = f"{text} Default: ``{default}`` (the ``{recipe}`` recipe), or the given recipe's."
    elif default not in (None, "", [], {}):
        text = f"{text} Default: ``{default}``, or the recipe's."
    return text


def setting_help(stage: str, key: str) -> str:
    """``setting_description`` as ``--help`` and the API's ``Args:`` say it: the docstring's ``literal``
    markup dropped."""
    text = re.sub(r"``([^`]+)``", r"\1", setting_description(stage, key))
    return text[:1].upper() + text[1:]


def setting(stage: str, key: str, *, help: str | None = None, bound: Bound | None = None,
            cli_type: Any = None, parser: Any = None, paths: bool = False, required: bool = False) -> Any:
    """A config field that is a setting keyword of ``stage``, setting ``key``: default None (the recipe,
    then the settings class, decide) unless ``required``; its help the setting's (``setting_help``) unless
    the keyword takes more than the setting does (rows in memory, a comma-separated list) and says so in
    ``help``."""
    declared = Option(help or setting_help(stage, key), bound=bound, cli_type=cli_type, parser=parser)
    return dataclasses.field(default=dataclasses.MISSING if required else None,
                             metadata={OPTION: declared, SETTING: Setting(key, paths)})


def setting_keywords(config_class: type) -> dict[str, Setting]:
    """``{keyword: Setting}`` of each setting keyword of a stage's config class, in order."""
    return {field.name: field.metadata[SETTING] for field in dataclasses.fields(config_class)
            if SETTING in field.metadata}


def given_settings(keywords: Mapping[str, Setting], values: Mapping[str, Any]) -> dict[str, Any]:
    """The setting keywords given (not None) as settings (``model`` → ``model.init``), paths and runs as
    the strings a config holds."""
    given: dict[str, Any] = {}
    for name, value in values.items():
        if value is None:
            continue
        setting_of = keywords[name]
        if setting_of.paths and is_paths(value):  # rows held in memory are the stage's to write
            value = path_strings(value)
        elif isinstance(value, os.PathLike):  # a path, a TrainingRun
            value = model_name(value)
        given[setting_of.key] = value
    return given


def given_of(config: Any) -> dict[str, Any]:
    """``given_settings`` of a stage config's own setting keywords."""
    keywords = setting_keywords(type(config))
    return given_settings(keywords, {name: getattr(config, name) for name in keywords})


def pretraining_config(layered: Mapping[str, Any], where: str = "config",
                       objective_where: str = "objective") -> PretrainConfig:
    """A pre-training's config from its layered settings, with every option of its objective, its defaults
    included, as the run records them (``where``: what an unknown key's error names)."""
    config = from_dict(PretrainConfig, dict(layered), where)
    options_class = OBJECTIVES.options(config.objective_name)
    config.objective = dataclasses.asdict(from_dict(options_class, config.objective, objective_where))
    return config


def finetuning_config(layered: Mapping[str, Any], where: str = "config") -> FinetuneConfig:
    """A fine-tuning's config from its layered settings, its dev metrics checked against its dev depth
    (``seedr.evaluation.metrics.check_dev_metrics``)."""
    from seedr.evaluation.metrics import check_dev_metrics

    config = from_dict(FinetuneConfig, dict(layered), where)
    try:
        check_dev_metrics(config)
    except ValueError as error:
        raise ValueError(str(error) if where == "config" else f"{where}: {error}") from None
    return config


def resolve(stage: str, recipe: str | os.PathLike | None = None, overrides: Settings | None = None,
            given: Mapping[str, Any] | None = None, *, processes: int | None = None) -> Any:
    """The config of ``stage`` (``pretrain`` or ``finetune``): its defaults, then ``recipe``, then ``given``
    (settings its keywords set), then ``overrides``. Nothing runs; unknown keys raise ``ValueError`` listing
    the valid ones. With ``processes``, the gradient accumulation is the one a run on that many processes
    takes, as its ``config.yaml`` records it; without, it is left to the run, which knows its launcher.

    Fine-tuning a seed that a seedr pre-training made (``seedr.modeling.folders.pretrained_seed``: SEED-Encoder,
    CPDAE, the two-tower objectives) pools as its objective trained, whatever the recipe says, unless
    ``overrides`` (``--set``) or ``given`` set ``pooling``; the run's first line says which. The similarity
    stays the recipe's: SEED-Encoder's and CPDAE's decoders read one vector alone and train no score between
    two, and a recipe's similarity goes with its scale and learning rate (cosine × 20 in
    ``sentence_encoder``), which a dot product of unnormalised vectors would not suit; the recipes written for
    the two-tower seeds, whose softmax does train an inner product, leave it null, that is to the seed
    (``reqa_squad``).
    """
    if stage not in CONFIG_STAGES:
        raise ValueError(f"no settings for stage {stage!r}; stages with settings: {', '.join(CONFIG_STAGES)}")
    recipe_settings = read_recipe(recipe_path(os.fspath(recipe), stage)) if recipe is not None else {}
    if stage == "finetune":
        # what the user asked for, apart from the recipe's defaults
        asked = merge_settings(dict(given or {}), dict(overrides or {}))
        finetuning = finetuning_config(merge_settings(recipe_settings, asked))
        seed = pretrained_seed(finetuning.model) if "pooling" not in asked else None
        finetuning.pooling = seed_pooling(finetuning.pooling, seed.pooling if seed else None, "pooling" in asked)
        config: Any = finetuning
    else:
        config = pretraining_config(merge_settings(recipe_settings, dict(given or {}), dict(overrides or {})))
    if config.train.report_to:  # Accelerate, and torch with it, only when trackers are asked for
        from seedr.engine.run_metrics import check_trackers

        check_trackers(config.train.report_to)
    if processes is not None:
        config.train.resolve_accumulation(processes)
    return config


__all__ = ["OWN_RECIPES", "SETTING", "SETTINGS_CLASSES", "Setting", "finetuning_config", "given_of",
           "given_settings", "pretraining_config", "resolve", "setting", "setting_description",
           "setting_help", "setting_keywords"]
