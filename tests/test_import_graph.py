"""The import graph of ``seedr/`` has no cycle: every ``import`` counts, at module level, inside functions
and under ``TYPE_CHECKING`` alike (read with ``ast``, nothing imported), so a circle cannot be hidden by
moving an import into a function. Importing ``a.b.c`` runs the ``__init__`` of ``a.b`` first, so it also
counts as importing ``a.b`` (unless ``a.b`` is a package of the importer itself, which is already running)."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "seedr"


def _modules(root: Path) -> dict[str, Path]:
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _imported_names(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """``(name, line)`` of everything the module imports, as written (``from a import b`` gives ``a.b``
    when that is a module, else ``a``)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            names += [(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base, node.lineno)
                      for alias in node.names]
    return names


def import_graph(root: Path = PACKAGE) -> dict[str, dict[str, int]]:
    """``{module: {imported seedr module: line}}``, the packages whose ``__init__`` an import runs included."""
    modules = _modules(root)
    graph: dict[str, dict[str, int]] = {module: {} for module in modules}
    for module, path in modules.items():
        running = {module.rsplit(".", depth)[0] for depth in range(1, module.count(".") + 1)}
        for name, line in _imported_names(module, path, modules):
            while name and name not in modules:  # ``from a.b import function``: the module a.b
                name = name.rpartition(".")[0]
            while name and name != module and name not in running:
                graph[module].setdefault(name, line)
                name = name.rpartition(".")[0]
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as one cycle through it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(set(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_cycle_through(graph, component) for component in components]


def _cycle_through(graph: dict[str, dict[str, int]], component: set[str]) -> list[str]:
    """One cycle of a component, for the message: from its first module back to it (breadth first)."""
    start = min(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node]):
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if target in component and target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    return sorted(component)


def _described(graph: dict[str, dict[str, int]], cycle: list[str]) -> str:
    return " -> ".join(f"{a} (line {graph[a][b]})" for a, b in itertools.pairwise(cycle)) + f" -> {cycle[-1]}"


def test_seedr_imports_without_a_cycle():
    graph = import_graph()
    assert len(graph) > 100 and "seedr.modeling.encoder" in graph["seedr.modeling.dual_encoder"]
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(_described(graph, cycle) for cycle in found)


def test_modeling_reaches_no_objective_negative_or_pipeline():
    """``seedr.modeling`` is a leaf of the components above it: nothing it imports, however indirectly,
    is an objective, a negative strategy, an experiment or a stage (the model card is told what a run
    trained with; it never looks the registries up)."""
    graph = import_graph()
    reached = set()
    todo = [module for module in graph if module.startswith("seedr.modeling")]
    while todo:
        module = todo.pop()
        for target in graph[module]:
            if target not in reached:
                reached.add(target)
                todo.append(target)
    above = sorted(module for module in reached if module.startswith(
        ("seedr.objectives", "seedr.negatives", "seedr.experiments", "seedr.stages", "seedr.training.publish")))
    assert not above


def test_the_library_never_imports_the_command_line():
    """Step keys leave the command line out of the code they hash (``seedr.config.COMMAND_LINE_SOURCE``),
    which holds only while nothing else in seedr imports a stage, ``seedr.cli`` or ``seedr.__main__``."""
    from seedr.config import COMMAND_LINE_SOURCE

    def command_line(module: str) -> bool:
        path = "/".join(module.split(".")[1:])
        return any(path == entry.removesuffix(".py").rstrip("/") or path.startswith(entry)
                   for entry in COMMAND_LINE_SOURCE)

    graph = import_graph()
    assert command_line("seedr.stages.encode") and command_line("seedr.cli") and not command_line("seedr.config")
    found = sorted(f"{module} (line {line}) imports {target}" for module, targets in graph.items()
                   if not command_line(module) for target, line in targets.items() if command_line(target))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("source", [
    # a circle closed by an import inside a function, and one through a package's __init__
    {"pkg/__init__.py": "", "pkg/a.py": "from pkg.b import f\n",
     "pkg/b.py": "def f():\n    from pkg.a import g\n"},
    {"pkg/__init__.py": "", "pkg/sub/__init__.py": "from pkg.sub import x\n", "pkg/sub/x.py": "import pkg.y\n",
     "pkg/y.py": "from pkg.sub.z import h\n", "pkg/sub/z.py": ""},
])
def test_the_walk_finds_a_hidden_cycle(tmp_path, source):
    for name, text in source.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert cycles(import_graph(tmp_path / "pkg"))


def test_a_package_importing_its_own_modules_is_no_cycle(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg import a, b\n")  # a registry's __init__
    (tmp_path / "pkg" / "a.py").write_text("from pkg.b import f\n")
    (tmp_path / "pkg" / "b.py").write_text("def f():\n    pass\n")
    assert cycles(import_graph(tmp_path / "pkg")) == []
