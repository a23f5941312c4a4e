"""The keyword arguments of the training stages that are settings, and what documents them: one table.

``pretrain(model=...)`` sets ``model.init``, ``finetune(dev_every=...)`` sets ``dev_every``: each such keyword
(and the command-line option that passes it) is a setting of ``seedr.config.settings``, described once in
the ``Attributes:`` section of its dataclass, which ``seedr config --describe`` lists. The API's docstrings
(``documents_settings``) and the commands' options (``seedr.stages.common.setting_option``: flag, help and
range) are made from this table and that text, so the three cannot say different things of one setting.
A stage that starts from a recipe of its own (``adapt``) gives that recipe's values as its defaults.
"""

from __future__ import annotations

import functools
import re
import textwrap
from collections.abc import Callable
from typing import Any

from seedr.config.loading import attribute_descriptions, from_dict, read_recipe
from seedr.config.settings import ADAPT_RECIPE, FinetuneConfig, PretrainConfig
from seedr.recipes import recipe_path

#: Each training stage's keyword arguments that are settings, and the key each sets.
SETTING_OPTIONS: dict[str, dict[str, str]] = {
    "pretrain": {"objective": "objective_name", "model": "model.init", "size": "model.size",
                 "tokenizer": "model.tokenizer", "corpus": "data.corpus"},
    "finetune": {"model": "model", "train": "train_data", "negatives": "negatives", "loss": "loss",
                 "dev_qrels": "dev_qrels", "dev_queries": "dev_queries", "dev_corpus": "dev_corpus",
                 "dev_every": "dev_every", "rounds": "negative_options.rounds", "few_shot": "few_shot",
                 "seeds": "seeds"},
    "adapt": {"model": "model", "dev_every": "dev_every", "patience": "patience"},
}

#: The settings class of each stage in ``SETTING_OPTIONS``.
SETTINGS_CLASSES: dict[str, type] = {"pretrain": PretrainConfig, "finetune": FinetuneConfig,
                                     "adapt": FinetuneConfig}

#: A stage that runs a recipe of its own when none is given: ``(recipe, the stage it is a recipe of)``.
OWN_RECIPES: dict[str, tuple[str, str]] = {"adapt": (ADAPT_RECIPE, "finetune")}

#: What an API docstring writes where a keyword's description is the setting's (``documents_settings``).
PLACEHOLDER = "<setting>"


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


def setting_description(stage: str, keyword: str) -> str:
    """The description of the setting the keyword ``keyword`` of ``stage`` sets, with its default when the
    settings class gives one (a recipe may set another), as the settings class documents it."""
    key = SETTING_OPTIONS[stage].get(keyword, keyword)
    text = _descriptions(stage)[key]
    default = _default(stage, key)
    if default not in (None, "", [], {}) and stage in OWN_RECIPES:
        recipe = OWN_RECIPES[stage][0]
        text = f"{text} Default: ``{default}`` (the ``{recipe}`` recipe), or the given recipe's."
    elif default not in (None, "", [], {}):
        text = f"{text} Default: ``{default}``, or the recipe's."
    return text


def setting_help(stage: str, keyword: str) -> str:
    """``setting_description`` for a command's ``--help``: the docstring's ``literal`` markup dropped."""
    text = setting_description(stage, keyword)
    text = re.sub(r"``([^`]+)``", r"\1", text)
    return text[:1].upper() + text[1:]


def documents_settings(stage: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Fill each ``name: <setting>`` line of the decorated function's ``Args:`` with the description of the
    setting its keyword ``name`` sets (``setting_description``), wrapped as the docstring is."""
    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        def describe(match: re.Match[str]) -> str:
            indent, name = match.group(1), match.group(2)
            first = f"{indent}{name}: "
            return textwrap.fill(setting_description(stage, name), width=112, initial_indent=first,
                                 subsequent_indent=indent + "    ")

        function.__doc__ = re.sub(rf"^( +)(\w+): {re.escape(PLACEHOLDER)}$", describe, function.__doc__ or "",
                                  flags=re.MULTILINE)
        return function

    return decorate


__all__ = ["OWN_RECIPES", "PLACEHOLDER", "SETTING_OPTIONS", "SETTINGS_CLASSES", "documents_settings",
           "setting_description", "setting_help"]
