"""The objectives' options live once, torch-free, in ``seedr.config.objective_options``: every objective takes its
registered options class as its ``config_class``, and the two registries name the same objectives."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

from seedr.config.loading import attribute_descriptions
from seedr.config.objective_options import OBJECTIVE_OPTIONS
from seedr.objectives import OBJECTIVES


def test_every_objective_takes_its_registered_options_class():
    assert list(OBJECTIVE_OPTIONS) == list(OBJECTIVES)
    for name in OBJECTIVES:
        assert OBJECTIVES.get(name).config_class is OBJECTIVE_OPTIONS.get(name), name


def test_every_option_is_described_and_every_objective_says_what_it_trains():
    for name in OBJECTIVE_OPTIONS:
        options = OBJECTIVE_OPTIONS.get(name)
        described = attribute_descriptions(options)
        assert set(described) >= {field.name for field in dataclasses.fields(options)}, name
        assert isinstance(options.trained_representation, str)
        assert "trained_representation" not in {field.name for field in dataclasses.fields(options)}  # not a setting
    assert OBJECTIVE_OPTIONS.get("mlm").trained_representation == ""  # MLM reads no pooled vector
    assert "{pooling}" in OBJECTIVE_OPTIONS.get("seed").trained_representation


def test_the_options_import_no_torch():
    probe = ("import sys, seedr.config.objective_options as options\n"
             "for name in options.OBJECTIVE_OPTIONS:\n    options.OBJECTIVE_OPTIONS.get(name)()\n"
             "print(sorted({'torch', 'transformers', 'numpy'} & set(sys.modules)))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
