"""#57: the house stays readable from the top: no module of ``seedr/`` over 500 lines, and each command of
``seedr/stages/`` its options, one call of the API and its printing (a command's body, its signature of
options left out, at most 80 lines)."""

from __future__ import annotations

import ast
from pathlib import Path

SEEDR = Path(__file__).resolve().parents[1] / "seedr"
MODULE_LINES = 500
STAGE_FUNCTION_LINES = 80


def test_no_module_is_over_500_lines():
    long = [f"{path.relative_to(SEEDR.parent)}: {count} lines" for path in sorted(SEEDR.rglob("*.py"))
            if (count := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES]
    assert not long, "split these by job:\n" + "\n".join(long)


def body_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The lines of a function's body, its docstring included, its signature (the options) not."""
    return function.end_lineno - function.body[0].lineno + 1


def test_no_stage_function_is_over_80_lines_of_body():
    long = []
    for path in sorted((SEEDR / "stages").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and body_lines(node) > STAGE_FUNCTION_LINES:
                long.append(f"{path.relative_to(SEEDR.parent)}:{node.lineno} {node.name}: {body_lines(node)} lines")
    assert not long, "move the logic into the API function:\n" + "\n".join(long)


def test_the_body_count_leaves_the_options_out():
    source = "def command(\n    a: int = 1,\n    b: int = 2,\n) -> None:\n    x = a\n    return None\n"
    function = ast.parse(source).body[0]
    assert isinstance(function, ast.FunctionDef) and body_lines(function) == 2
