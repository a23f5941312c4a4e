"""One home per default (#57): a setting's default is written once — in its settings dataclass
(``seedr/config/``, an objective's ``options.py``) or as a named constant there or in the module it belongs to — and library functions and
stage options name it instead of writing the number again, so that changing a default changes it
everywhere (``document_max_length``'s 512 was written in six places)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from seedr.config.settings import ENCODE_BATCH_SIZE, MAX_LENGTH, QUERY_MAX_LENGTH, FinetuneConfig

#: The lengths and batch sizes that library functions, stage options and other dataclasses take.
SHARED = {"max_length", "max_seq_length", "document_max_length", "query_max_length", "passage_length",
          "batch_size", "encode_batch_size"}
ROOT = Path(__file__).resolve().parents[1]


def literal_defaults(source: str) -> list[tuple[int, str]]:
    """``(line, name)`` of every parameter or annotated field of ``SHARED`` whose default is a number
    literal, in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args
            positional = arguments.posonlyargs + arguments.args
            pairs = [*zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults),
                     *zip(arguments.kwonlyargs, arguments.kw_defaults)]
            found += [(default.lineno, argument.arg) for argument, default in pairs
                      if argument.arg in SHARED and isinstance(default, ast.Constant)
                      and type(default.value) is int]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and node.target.id in SHARED and isinstance(node.value, ast.Constant) and type(node.value.value) is int:
            found.append((node.lineno, node.target.id))
    return found


def _settings_home(path: Path) -> bool:
    """A home of settings' defaults: ``seedr/config/``, or an objective's options (``objective.*``, in the
    configuration's layer: ``seedr/objectives/<name>/options.py``, ``seedr/objectives/two_tower_options.py``)."""
    parts = path.relative_to(ROOT / "seedr").parts
    return parts[0] == "config" or (parts[0] == "objectives" and path.name.endswith("options.py"))


def test_no_length_or_batch_default_is_written_outside_its_home():
    found = [f"{path.relative_to(ROOT)}:{line} {name}"
             for path in sorted((ROOT / "seedr").rglob("*.py")) if not _settings_home(path)
             for line, name in literal_defaults(path.read_text(encoding="utf-8"))]
    assert not found, "name the setting's constant instead of its number:\n" + "\n".join(found)


@pytest.mark.parametrize("source", ["def f(batch_size: int = 64): ...", "def f(*, max_length: int = 512): ...",
                                    "class C:\n    document_max_length: int = 512\n"])
def test_the_scan_finds_a_literal_default(source):
    assert literal_defaults(source)


#: A value that means "decide from the input" wherever it is written (a format, a dtype), not a tuned default.
SENTINELS = {"auto"}


def setting_defaults() -> dict[str, set[object]]:
    """Each field of the settings dataclasses (``seedr.config.settings``) with the default it takes."""
    import seedr.config.settings as settings

    found: dict[str, set[object]] = {}
    for value in vars(settings).values():
        if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == settings.__name__:
            for field in dataclasses.fields(value):
                if field.default is not dataclasses.MISSING and field.default is not None:
                    found.setdefault(field.name, set()).add(field.default)
    return found


def repeated_defaults(source: str, defaults: dict[str, set[object]]) -> list[tuple[int, str]]:
    """``(line, name)`` of every parameter or annotated field named as a setting whose default is a literal
    of that setting's own default, in ``source``: a second home of the default."""
    found = []
    for node in ast.walk(ast.parse(source)):
        pairs: list[tuple[str, ast.expr | None]] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args
            positional = arguments.posonlyargs + arguments.args
            pairs = [(argument.arg, default) for argument, default in [
                *zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults),
                *zip(arguments.kwonlyargs, arguments.kw_defaults)]]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            pairs = [(node.target.id, node.value)]
        for name, default in pairs:
            if name in defaults and isinstance(default, ast.Constant) and default.value not in SENTINELS \
                    and not isinstance(default.value, bool) and any(
                        type(value) is type(default.value) and value == default.value for value in defaults[name]):
                found.append((default.lineno, name))
    return found


def test_no_setting_default_is_written_a_second_time():
    """A parameter named as a setting, defaulting to that setting's default, names its constant in
    ``seedr.config.settings`` instead (a different value is a different default, e.g. the diagnostics' seed)."""
    defaults = setting_defaults()
    assert defaults["seed"] == {42} and "packing" in defaults and "positive_grade" in defaults
    found = [f"{path.relative_to(ROOT)}:{line} {name}"
             for path in sorted((ROOT / "seedr").rglob("*.py")) if not _settings_home(path)
             for line, name in repeated_defaults(path.read_text(encoding="utf-8"), defaults)]
    assert not found, "name the setting's constant instead of its value:\n" + "\n".join(found)


def test_the_second_home_scan_finds_a_repeated_default():
    defaults = setting_defaults()
    assert repeated_defaults("def f(seed: int = 42): ...", defaults)
    assert repeated_defaults('class C:\n    packing: str = "full_sentences"\n', defaults)
    assert not repeated_defaults("def f(seed: int = 13, format: str = 'auto'): ...", defaults)


def test_the_settings_take_the_named_defaults():
    config = FinetuneConfig()
    assert (config.document_max_length, config.query_max_length, config.encode_batch_size) == (
        MAX_LENGTH, QUERY_MAX_LENGTH, ENCODE_BATCH_SIZE)
