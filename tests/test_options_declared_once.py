"""#64: each option declared once. A stage's config dataclass (``seedr.pipeline``) is the one source of each of
its options: the command's typer options and the API function's keyword arguments are generated from it
(``seedr.stages.options.options_of``, ``seedr.api.keywords.keywords_of``), and no stage command writes a
``typer.Option`` of its own."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest
import typer

import seedr
from seedr.cli import app
from seedr.experiments.configs import DemoConfig, ExperimentConfig
from seedr.pipeline.adapt import AdaptStageConfig
from seedr.pipeline.average import AverageConfig
from seedr.pipeline.diagnose import DiagnoseConfig
from seedr.pipeline.encode import EncodeConfig
from seedr.pipeline.evaluate import EvaluateConfig
from seedr.pipeline.fuse import FuseConfig
from seedr.pipeline.finetune import AnceRefreshConfig, FinetuneStageConfig
from seedr.pipeline.index import IndexConfig
from seedr.pipeline.prepare import PrepareConfig
from seedr.pipeline.pretrain import PretrainStageConfig
from seedr.pipeline.report import ReportConfig
from seedr.pipeline.settings import SettingsConfig
from seedr.pipeline.options import Bound, check_options, declared, default_of, has_default, option
from seedr.pipeline.search import SearchConfig
from seedr.stages.options import flag_of

#: Each stage the pipeline holds: its config, and the API function that takes its options (``seedr config``'s
#: ``resolve_settings`` takes the stage's setting keywords besides: ``tests/test_setting_options.py``).
STAGE_CONFIGS = {"encode": EncodeConfig, "index": IndexConfig, "search": SearchConfig, "prepare": PrepareConfig,
                 "average": AverageConfig, "diagnose": DiagnoseConfig, "report": ReportConfig,
                 "experiment": ExperimentConfig, "demo": DemoConfig, "pretrain": PretrainStageConfig,
                 "finetune": FinetuneStageConfig, "adapt": AdaptStageConfig, "config": SettingsConfig,
                 "fuse": FuseConfig, "evaluate": EvaluateConfig}
API_FUNCTIONS = {"encode": seedr.encode, "index": seedr.index, "search": seedr.search, "prepare": seedr.prepare,
                 "average": seedr.average, "diagnose": seedr.diagnose, "report": seedr.report,
                 "experiment": seedr.experiment, "demo": seedr.demo, "pretrain": seedr.pretrain,
                 "finetune": seedr.finetune, "adapt": seedr.adapt, "ance_refresh": seedr.ance_refresh,
                 "fuse": seedr.fuse, "evaluate": seedr.evaluate}
#: A command whose run is not ``seedr.pipeline.<stage>.run``: the API function's name, the config the command
#: makes and the run (``module:function``) it reaches. ``seedr finetune --ance-refresh-only`` is
#: ``ance_refresh``; ``seedr config`` resolves as ``resolve_settings`` does; the experiment and demo stages run
#: the pipeline's stages, a layer above it (``seedr.experiments.stage``).
OTHER_RUNS = {"ance_refresh": (AnceRefreshConfig, "seedr.pipeline.finetune:ance_refresh"),
              "resolve_settings": (SettingsConfig, "seedr.pipeline.settings:run"),
              "experiment": (ExperimentConfig, "seedr.experiments.stage:run"),
              "demo": (DemoConfig, "seedr.experiments.stage:run_demo")}

STAGES = Path(seedr.__file__).parent / "stages"


@pytest.mark.parametrize("stage", sorted(STAGE_CONFIGS))
def test_a_command_s_options_are_its_config_s_fields(stage):
    config_class = STAGE_CONFIGS[stage]
    command = typer.main.get_command(app).commands[stage]
    parameters = {parameter.name: parameter for parameter in command.params if parameter.name != "help"}
    offered = {field.name: (field, option) for field, option in declared(config_class) if option.command_line}
    assert set(parameters) == set(offered)
    for name, (field, option) in offered.items():
        parameter = parameters[name]
        assert parameter.help == option.help, name
        if option.argument:  # a positional argument of the command (``seedr average a b``)
            assert parameter.param_type_name == "argument", name
        else:
            assert flag_of(field, option).split("/")[0] in parameter.opts, name
        assert parameter.required == (not has_default(field) or option.cli_required), name
        if has_default(field) and default_of(field) not in (None, [], False):
            assert parameter.default == default_of(field), name


@pytest.mark.parametrize("stage", sorted(API_FUNCTIONS))
def test_an_api_function_s_keywords_are_its_config_s_fields(stage):
    config_class = OTHER_RUNS[stage][0] if stage in OTHER_RUNS else STAGE_CONFIGS[stage]
    parameters = inspect.signature(API_FUNCTIONS[stage]).parameters
    fields = [(field, option) for field, option in declared(config_class) if option.api]
    assert list(parameters) == [field.name for field, _ in fields]
    for field, option in fields:
        parameter = parameters[field.name]
        assert (parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD) == option.positional, field.name
        expected = default_of(field) if has_default(field) else inspect.Parameter.empty
        assert parameter.default == expected, field.name
        assert f"    {field.name}: " in API_FUNCTIONS[stage].__doc__, field.name


def test_an_api_function_refuses_a_keyword_its_config_lacks():
    with pytest.raises(TypeError, match="unexpected keyword argument 'batchsize'"):
        seedr.encode("minilm", "corpus.jsonl", "out", batchsize=8)


def _written_options(path: Path) -> list[int]:
    """The lines of ``path`` that call ``typer.Option`` or ``typer.Argument`` by hand."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("Option", "Argument") and ast.unparse(node.func.value) == "typer":
            lines.append(node.lineno)
    return lines


@pytest.mark.parametrize("stage", sorted(STAGE_CONFIGS))
def test_no_stage_command_writes_an_option_by_hand(stage):
    assert _written_options(STAGES / f"{stage}.py") == []


def test_the_check_finds_an_option_written_by_hand(tmp_path):
    (tmp_path / "stage.py").write_text("import typer\n\ndef command(k: int = typer.Option(1, '--k')):\n    pass\n")
    assert _written_options(tmp_path / "stage.py") == [3]


def test_a_config_checks_its_bounds_wherever_it_is_made():
    @dataclasses.dataclass(kw_only=True)
    class Config:
        k: int = option(10, help="Documents per query.", bound=Bound(int, 1))
        depth: int | None = option(None, help="How deep.", bound=Bound(int, 1))

        def __post_init__(self) -> None:
            check_options(self)

    assert Config(depth=None).k == 10
    with pytest.raises(ValueError, match="^k must be an integer at least 1, got 0$"):
        Config(k=0)
    with pytest.raises(TypeError, match=r"^depth must be an integer at least 1, got '3' \(str\)$"):
        Config(depth="3")
