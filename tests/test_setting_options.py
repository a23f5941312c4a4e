"""#57, #64: a training stage's setting keywords (``finetune(dev_every=...)`` sets the setting ``dev_every``)
are fields of its pipeline config declared with ``seedr.pipeline.resolution.setting``: their help is the
setting's description in the ``Attributes:`` of its settings dataclass (``seedr config --describe``), and the
command's ``--help`` and the API's docstring are made from that field."""

from __future__ import annotations

import inspect
import re

import pytest
import typer.main

import seedr
from seedr.config.loading import describe_settings
from seedr.pipeline.adapt import AdaptStageConfig
from seedr.pipeline.finetune import AnceRefreshConfig, FinetuneStageConfig
from seedr.pipeline.options import declared
from seedr.pipeline.pretrain import PretrainStageConfig
from seedr.pipeline.resolution import SETTINGS_CLASSES, setting_description, setting_help, setting_keywords

#: Each stage with setting keywords: its config, and the API function made from it.
STAGES = {"pretrain": (PretrainStageConfig, seedr.pretrain),
          "finetune": (FinetuneStageConfig, seedr.finetune), "adapt": (AdaptStageConfig, seedr.adapt)}
#: Keywords that take more than the setting does, so say it themselves: rows in memory or repeated paths (a
#: corpus), a comma-separated list (--seeds), a key of a mapping setting that the chosen strategy's own class
#: documents (negative_options.rounds).
OWN_TEXT = {("pretrain", "corpus"), ("finetune", "seeds"), ("finetune", "rounds")}


def _options(stage: str) -> dict[str, typer.core.click.Parameter]:
    from seedr.cli import app

    return {parameter.name: parameter for parameter in typer.main.get_command(app).commands[stage].params}


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_every_setting_keyword_is_documented_from_its_setting_once(stage):
    config_class, function = STAGES[stage]
    keywords = setting_keywords(config_class)
    assert len(keywords) >= 3
    described = {line.split(" = ", 1)[0]: line.split(": ", 1)[1]
                 for line in describe_settings(SETTINGS_CLASSES[stage]())}
    helps = {field.name: option.help for field, option in declared(config_class)}
    doc = " ".join((function.__doc__ or "").split())
    options = _options(stage)
    for keyword, setting in keywords.items():
        assert inspect.signature(function).parameters[keyword].default is None, keyword
        assert f"{keyword}: {' '.join(helps[keyword].split())}" in doc, keyword  # the API's Args:
        assert options[keyword].help == helps[keyword] and options[keyword].default is None, keyword
        assert options[keyword].opts == [f"--{keyword.replace('_', '-')}"], keyword
        if (stage, keyword) in OWN_TEXT:
            continue
        assert helps[keyword] == setting_help(stage, setting.key), keyword
        assert setting_description(stage, setting.key).startswith(described[setting.key].rstrip(".")), keyword


def test_the_help_of_a_setting_drops_the_docstring_markup():
    text = setting_help("finetune", "negatives")
    assert text.startswith("The negative strategy") and "``" not in text and "Default: bm25" in text
    assert not re.search(r"``", setting_help("pretrain", "model.init"))
    assert "``" in setting_description("finetune", "negatives")


def test_a_stage_with_its_own_recipe_gives_that_recipe_s_values_as_defaults():
    assert "Default: 25 (the adapt recipe)" in setting_help("adapt", "dev_every")
    assert "Default: 4 (the adapt recipe)" in setting_help("adapt", "patience")
    assert "the adapt recipe" not in setting_help("finetune", "dev_every")


def test_a_setting_keyword_sets_its_setting_and_an_unknown_one_is_refused():
    resolved = seedr.resolve_settings("finetune", config="dpr", dev_every=7, rounds=3, seeds=[1, 2])
    assert resolved.dev_every == 7 and resolved.negative_options["rounds"] == 3 and resolved.seeds == [1, 2]
    pretraining = seedr.resolve_settings("pretrain", objective="mlm", corpus="docs.jsonl")
    assert pretraining.data.corpus == ["docs.jsonl"]
    with pytest.raises(TypeError, match=r"finetune: unknown option\(s\) \['patience'\]"):
        seedr.resolve_settings("finetune", patience=3)  # adapt's keyword, not finetune's
    assert setting_keywords(AnceRefreshConfig) == {name: setting_keywords(FinetuneStageConfig)[name]
                                                   for name in ("model", "train")}
