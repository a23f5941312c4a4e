"""#57: a training stage's keyword arguments that are settings are described once, in the ``Attributes:`` of
their settings dataclass (``seedr config --describe``), and the API's docstrings and the commands' ``--help``
take their text from there (``seedr.api.setting_options``)."""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest
import typer.main

import seedr
from seedr.api.arguments import ARGUMENTS
from seedr.api.setting_options import (
    PLACEHOLDER,
    SETTING_OPTIONS,
    SETTINGS_CLASSES,
    setting_description,
    setting_help,
)
from seedr.config.loading import describe_settings


def _options(stage: str) -> dict[str, Any]:
    """``{parameter: click option}`` of the command ``seedr STAGE``."""
    from seedr.cli import app

    command = typer.main.get_command(app).commands[stage]
    return {parameter.name: parameter for parameter in command.params}


def _option_helps(stage: str) -> dict[str, str]:
    """``{parameter: help}`` of the command ``seedr STAGE``'s options."""
    return {name: option.help or "" for name, option in _options(stage).items()}


#: Keywords whose API or command takes more than the setting does, so documents it itself: rows held in
#: memory (the API's corpus), a comma-separated list (the command's --seeds), repeated paths (--corpus).
OWN_TEXT = {"api": {("pretrain", "corpus")},
            "command": {("finetune", "seeds"), ("pretrain", "corpus")}}
#: Keywords that set a key of a mapping setting, which the chosen strategy's own class documents.
STRATEGY_KEYS = {("finetune", "rounds")}


@pytest.mark.parametrize("stage", sorted(SETTING_OPTIONS))
def test_every_setting_keyword_is_the_apis_and_documented_from_its_setting(stage):
    function = getattr(seedr, stage)
    assert set(SETTING_OPTIONS[stage]) <= set(inspect.signature(function).parameters)
    doc = " ".join((function.__doc__ or "").split())
    assert PLACEHOLDER not in doc
    described = {line.split(" = ", 1)[0]: line.split(": ", 1)[1]
                 for line in describe_settings(SETTINGS_CLASSES[stage]())}
    helps = _option_helps(stage)
    generated = 0
    for keyword, key in SETTING_OPTIONS[stage].items():
        if key not in described:  # a key of a mapping setting (negative_options.rounds): its strategy documents it
            continue
        text = setting_description(stage, keyword)
        assert text.startswith(described[key].rstrip(".")), keyword  # seedr config --describe's own text
        if (stage, keyword) not in OWN_TEXT["api"]:
            assert f"{keyword}: {' '.join(text.split())}" in doc, keyword
            generated += 1
        if keyword in helps and (stage, keyword) not in OWN_TEXT["command"]:
            assert helps[keyword] == setting_help(stage, keyword), keyword
    assert generated >= min(3, len(SETTING_OPTIONS[stage]))  # documented from the table, not skipped


def test_the_help_of_a_setting_drops_the_docstring_markup():
    text = setting_help("finetune", "negatives")
    assert text.startswith("The negative strategy") and "``" not in text and "Default: bm25" in text
    assert not re.search(r"``", setting_help("pretrain", "model"))


@pytest.mark.parametrize("stage", sorted(SETTING_OPTIONS))
def test_every_setting_keyword_is_a_command_option_made_from_the_table(stage):
    """#57: the command's option of a setting keyword is made from the table (``setting_option``): every
    keyword of ``SETTING_OPTIONS`` is an option of ``seedr STAGE``, named ``--kebab-case``, defaulting to
    None (the recipe and the settings class decide), with the setting's help and the API's range."""
    options = _options(stage)
    assert set(SETTING_OPTIONS[stage]) <= set(options), "a setting keyword of the API that the command lacks"
    for keyword in SETTING_OPTIONS[stage]:
        option = options[keyword]
        assert option.opts == [f"--{keyword.replace('_', '-')}"] and option.default is None, keyword
        if (stage, keyword) in OWN_TEXT["command"] | STRATEGY_KEYS:
            continue
        assert option.help == setting_help(stage, keyword), keyword
        bounds = ARGUMENTS.get(stage, {}).get(keyword)
        if bounds is not None and not bounds.open:
            assert (option.min, option.max) == (bounds.low, bounds.high), keyword
        elif bounds is not None:  # an open bound: parsed by the bound's own check, shown as it is (#65)
            assert (option.min, option.max) == (None, None) and option.metavar.endswith("]"), keyword


def test_a_stage_with_its_own_recipe_gives_that_recipe_s_values_as_defaults():
    assert "Default: 25 (the adapt recipe)" in setting_help("adapt", "dev_every")
    assert "Default: 4 (the adapt recipe)" in setting_help("adapt", "patience")
    assert "the adapt recipe" not in setting_help("finetune", "dev_every")
