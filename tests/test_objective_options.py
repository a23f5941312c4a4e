"""One registry of the objectives, found from their folders (``seedr.objectives.OBJECTIVES``): each objective's
options live once, torch-free, in its folder's ``options.py``, its objective takes them as its ``config_class``,
and a new folder is a new objective with no other file touched."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap

import pytest
import torch
from helpers import tiny_bert

import seedr
import seedr.objectives
from seedr.config.loading import attribute_descriptions
from seedr.modeling.encoder import load_tokenizer
from seedr.objectives import OBJECTIVES

#: The objectives' names, which recipes, experiment files and recorded results use.
NAMES = ["bfs", "cocondenser", "condenser", "contriever", "cpdae", "cpdae_cls", "ict", "ict_bfs_wlp", "mlm", "prop",
         "retromae", "seed", "simcse", "tsdae", "wlp"]


def test_every_objective_takes_its_folder_s_options_class():
    assert OBJECTIVES.names() == NAMES
    for name in OBJECTIVES:
        assert OBJECTIVES.get(name).name == name
        assert OBJECTIVES.get(name).config_class is OBJECTIVES.options(name), name
        assert OBJECTIVES.get(name).__module__ == f"seedr.objectives.{name}.objective"


def test_an_unknown_objective_lists_the_valid_ones():
    with pytest.raises(KeyError, match="unknown objective 'sed'; valid names: bfs, cocondenser"):
        OBJECTIVES.options("sed")
    assert "sed" not in OBJECTIVES and "two_tower" not in OBJECTIVES  # a shared module is no objective


def test_every_option_is_described_and_every_objective_says_what_it_trains():
    for name in OBJECTIVES:
        options = OBJECTIVES.options(name)
        described = attribute_descriptions(options)
        assert set(described) >= {field.name for field in dataclasses.fields(options)}, name
        assert isinstance(options.trained_representation, str)
        assert "trained_representation" not in {field.name for field in dataclasses.fields(options)}  # not a setting
    assert OBJECTIVES.options("mlm").trained_representation == ""  # MLM reads no pooled vector
    assert "{pooling}" in OBJECTIVES.options("seed").trained_representation


def test_the_options_import_no_torch():
    probe = ("import sys\nfrom seedr.objectives import OBJECTIVES\n"
             "for name in OBJECTIVES:\n    OBJECTIVES.options(name)()\n"
             "print(len(OBJECTIVES.names()), sorted({'torch', 'transformers', 'numpy'} & set(sys.modules)))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == f"{len(NAMES)} []"


TOY_OPTIONS = '''
    """A throwaway objective's options."""
    from dataclasses import dataclass
    from typing import ClassVar

    from seedr.objectives.mlm.options import MLMConfig


    @dataclass
    class ToyConfig(MLMConfig):
        """Attributes:
            weight: what the MLM loss is multiplied by."""

        trained_representation: ClassVar[str] = ""
        weight: float = 1.0
'''
TOY_OBJECTIVE = '''
    """A throwaway objective: MLM, weighted."""
    from seedr.modeling.outputs import ObjectiveOutput
    from seedr.objectives.mlm.objective import MaskedLanguageModel
    from seedr.objectives.toy.options import ToyConfig


    class Toy(MaskedLanguageModel):
        name = "toy"
        config_class = ToyConfig

        def forward(self, **batch):
            output = super().forward(**batch)
            return ObjectiveOutput(loss=self.config.weight * output.loss, parts=output.parts)
'''


@pytest.fixture
def toy_folder(tmp_path, monkeypatch):
    """``toy/`` with its ``options.py`` and ``objective.py`` (and an empty ``__init__.py``), in a folder the
    package ``seedr.objectives`` also reads from: no file of seedr is touched."""
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "options.py").write_text(textwrap.dedent(TOY_OPTIONS))
    (folder / "objective.py").write_text(textwrap.dedent(TOY_OBJECTIVE))
    monkeypatch.setattr(seedr.objectives, "__path__", [*seedr.objectives.__path__, str(tmp_path)])
    yield folder
    for module in [name for name in sys.modules if name.startswith("seedr.objectives.toy")]:
        del sys.modules[module]


def test_a_new_folder_is_a_registered_objective(toy_folder):
    assert "toy" in OBJECTIVES.names()
    resolved = seedr.resolve_settings("pretrain", settings={"objective_name": "toy", "objective.weight": 0.5})
    assert resolved.objective == {"mask_probability": 0.15, "mlm_head_from": None, "save_head": False, "weight": 0.5}
    with pytest.raises(ValueError, match="weigth"):
        seedr.resolve_settings("pretrain", settings={"objective_name": "toy", "objective.weigth": 0.5})

    toy = OBJECTIVES.get("toy")
    assert toy.config_class is OBJECTIVES.options("toy")
    tokenizer = load_tokenizer("minilm")
    torch.manual_seed(0)
    objective = toy(tiny_bert(tokenizer), tokenizer, toy.config_class(**resolved.objective))
    batch = objective.collate([tokenizer("a throwaway objective trains")["input_ids"]] * 2)
    output = objective(**batch)
    assert torch.isfinite(output.loss) and output.loss.item() == pytest.approx(0.5 * output.parts["mlm"].item())
    assert OBJECTIVES.describe("toy") == "A throwaway objective: MLM, weighted."
