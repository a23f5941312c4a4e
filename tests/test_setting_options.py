"""#57: a training stage's keyword arguments that are settings are described once, in the ``Attributes:`` of
their settings dataclass (``seedr config --describe``), and the API's docstrings and the commands' ``--help``
take their text from there (``seedr.api.setting_options``)."""

from __future__ import annotations

import inspect
import re

import pytest
import typer.main

import seedr
from seedr.api.setting_options import (
    PLACEHOLDER,
    SETTING_OPTIONS,
    SETTINGS_CLASSES,
    setting_description,
    setting_help,
)
from seedr.config.loading import describe_settings


def _option_helps(stage: str) -> dict[str, str]:
    """``{parameter: help}`` of the command ``seedr STAGE``'s options."""
    from seedr.cli import app

    command = typer.main.get_command(app).commands[stage]
    return {parameter.name: parameter.help or "" for parameter in command.params}


#: Keywords whose API or command takes more than the setting does, so documents it itself: rows held in
#: memory (the API's corpus), a comma-separated list (the command's --seeds), repeated paths (--corpus).
OWN_TEXT = {"api": {("pretrain", "corpus")},
            "command": {("finetune", "seeds"), ("pretrain", "corpus")}}


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
    assert generated >= 4


def test_the_help_of_a_setting_drops_the_docstring_markup():
    text = setting_help("finetune", "negatives")
    assert text.startswith("The negative strategy") and "``" not in text and "Default: bm25" in text
    assert not re.search(r"``", setting_help("pretrain", "model"))
