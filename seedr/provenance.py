"""Where a result comes from: the record every run folder carries (``record_run``: ``config.yaml`` and
``run.json`` with the environment), and the fingerprint of the code that computed it
(``code_fingerprint``), on which experiment steps are keyed.

A step's fingerprint covers the code the step runs and nothing else: the modules it names (its library
entry point, the objective, loss or negative strategy its settings choose) and every seedr module they
import, inside functions too, each by its syntax tree without docstrings — so a comment, a docstring, a
README or a layout edit keeps every key, a change to one objective's code re-keys the steps that pre-train
with it (and, through their model paths, the steps downstream of them) and no others. A registry's package
``__init__`` (``seedr.objectives``, which finds its members' folders, ``seedr.losses``, ``seedr.negatives``,
which import every member to register it) counts by its own text only: the member a step uses is named by
the step (``seedr.objectives.seed.objective``, and the options and decoder it imports).
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import copy
import dataclasses
import functools
import hashlib
import json
import platform
import sys
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from seedr.config.loading import to_dict
from seedr.cpu import cpu_description
from seedr.io import atomic_write
from seedr.io.run_folders import stored_paths
from seedr.version import __version__

#: The root of seedr's sources, whose modules a fingerprint reads.
PACKAGE_ROOT = Path(__file__).resolve().parent

#: The command line: option parsing and printing over the library, which never imports it
#: (``tests/test_import_graph.py`` holds that), so it cannot change what a step computes.
COMMAND_LINE_SOURCE = ("stages/", "cli.py", "__main__.py")


def environment() -> dict[str, str]:
    """Versions of Python and of the libraries a result depends on, and the CPU it ran on (its vector
    extensions say whether ``auto`` precision ran in bf16 there: ``seedr.hardware.native_bf16``)."""
    cpu = cpu_description()
    versions = {"python": sys.version.split()[0], "platform": platform.platform(), "cpu": str(cpu["model"]),
                "cpu_extensions": ", ".join(cpu["extensions"]) or "none"}
    for package in ("seedr", "torch", "transformers", "tokenizers", "accelerate", "sentence-transformers",
                    "faiss-cpu", "bm25s", "ir-measures", "numpy"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _computation(tree: ast.Module) -> bytes:
    """What a module computes, blind to its comments, docstrings and formatting: its syntax tree (which
    holds no comments and no layout) without the bare string statements that docstrings are."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [statement for statement in body if not (
                isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str))]
            node.body = kept or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False, include_attributes=False).encode()


@dataclasses.dataclass(frozen=True)
class _Module:
    name: str
    path: Path
    package: bool


def _modules(root: Path) -> dict[str, _Module]:
    """Every module under ``root`` (the ``seedr`` package folder) by dotted name."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if package else parts)
        found[name] = _Module(name, path, package)
    return found


def _resolve(module: _Module, node: ast.Import | ast.ImportFrom, modules: dict[str, _Module],
             exports: dict[str, dict[str, str]]) -> dict[str, str]:
    """``{name bound by the import: the seedr module it comes from}``; a name a package re-exports comes
    from the module that defines it."""
    if isinstance(node, ast.Import):
        return {(alias.asname or alias.name.split(".")[0]): alias.name for alias in node.names
                if alias.name in modules}
    package = module.name if module.package else module.name.rpartition(".")[0]
    base = node.module or ""
    if node.level:
        parts = package.split(".")[:len(package.split(".")) - node.level + 1]
        base = ".".join(parts + ([node.module] if node.module else []))
    bound = {}
    for alias in node.names:
        if f"{base}.{alias.name}" in modules:
            bound[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif alias.name in exports.get(base, {}):
            bound[alias.asname or alias.name] = exports[base][alias.name]
        elif base in modules:
            bound[alias.asname or alias.name] = base
    return bound


def _definitions(tree: ast.Module) -> dict[str, ast.stmt]:
    """The module's top-level functions, classes and assigned names."""
    found: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update({target.id: node for target in targets if isinstance(target, ast.Name)})
    return found


#: Inside ``sources_as_first_read``: each library root's files (path, time, size) as first read there.
_FIRST_READ: contextvars.ContextVar[dict[Path, tuple[tuple[str, int, int], ...]] | None] = contextvars.ContextVar(
    "seedr_sources_first_read", default=None)


@contextlib.contextmanager
def sources_as_first_read() -> Iterator[None]:
    """Within it, the library's sources are fingerprinted as they were when first read there: one
    experiment keys all its units on one version of the code, so an edit saved while it runs (the process
    runs the code it loaded) cannot give a later unit another key than the one its plan gave it."""
    token = _FIRST_READ.set({})
    try:
        yield
    finally:
        _FIRST_READ.reset(token)


def _source_state(root: Path) -> tuple[tuple[str, int, int], ...]:
    """Each file under ``root`` by path, time and size (the key of what is read from them, so that they
    are read again only when one has changed), as first read inside ``sources_as_first_read``."""
    first_read = _FIRST_READ.get()
    if first_read is not None and root in first_read:
        return first_read[root]
    state = tuple((str(path), path.stat().st_mtime_ns, path.stat().st_size) for path in sorted(root.rglob("*.py")))
    if first_read is not None:
        first_read[root] = state
    return state


def _source_graph(root: Path) -> tuple[dict[str, bytes], dict[str, set[str]]]:
    """``_read_sources`` of ``root`` (``_source_state``)."""
    return _read_sources(root, _source_state(root))


@functools.lru_cache(maxsize=4)
def _module_computations(root: Path, state: tuple[tuple[str, int, int], ...]) -> dict[str, bytes]:
    """Each module's ``_computation`` under ``root``, as ``_read_sources`` has them: all that a
    fingerprint of the whole library needs, which every training run records, read in a seventh of the
    time that ``_read_sources`` takes over every definition (0.4 s against 3 s on this machine's CPU)."""
    return {name: _computation(ast.parse(module.path.read_bytes(), str(module.path)))
            for name, module in _modules(root).items()}


@functools.lru_cache(maxsize=4)
def _read_sources(root: Path, state: tuple[tuple[str, int, int], ...]) -> tuple[dict[str, bytes], dict[str, set[str]]]:
    """For every module and every top-level definition (``module:name``) under ``root``: its
    ``_computation`` and what it uses. A module uses every seedr module it imports; a definition uses the
    modules imported inside it, those whose names it reads from its module's imports, and the module's
    other definitions it reads. A package ``__init__`` uses nothing (see the module docstring)."""
    modules = _modules(root)
    trees = {name: ast.parse(module.path.read_bytes(), str(module.path)) for name, module in modules.items()}
    exports = {name: {alias.asname or alias.name: node.module for node in trees[name].body
                      if isinstance(node, ast.ImportFrom) and node.module in modules for alias in node.names}
               for name, module in modules.items() if module.package}
    computations: dict[str, bytes] = {}
    uses: dict[str, set[str]] = {}
    for name, module in modules.items():
        tree = trees[name]
        imports = [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]
        uses[name] = set() if module.package else {
            target for node in imports for target in _resolve(module, node, modules, exports).values()}
        top_level = {bound: target for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)
                     for bound, target in _resolve(module, node, modules, exports).items()}
        definitions = _definitions(tree)
        for definition, node in definitions.items():
            read = {child.id for child in ast.walk(node) if isinstance(child, ast.Name)} - {definition}
            inner = [child for child in ast.walk(node) if isinstance(child, ast.Import | ast.ImportFrom)]
            uses[f"{name}:{definition}"] = (
                {target for child in inner for target in _resolve(module, child, modules, exports).values()}
                | {top_level[word] for word in read if word in top_level}
                | {f"{name}:{word}" for word in read if word in definitions})
            computations[f"{name}:{definition}"] = _computation(ast.Module(body=[copy.deepcopy(node)],
                                                                           type_ignores=[]))
        computations[name] = _computation(tree)
    return computations, uses


def code_closure(entry_points: Iterable[str], root: Path = PACKAGE_ROOT) -> list[str]:
    """The code ``entry_points`` run — modules (``seedr.training.pretrain``) or top-level definitions
    (``seedr.experiments.steps.setup:PrepareStep``) — and everything they use, transitively, sorted."""
    _, uses = _source_graph(root)
    unknown = sorted(set(entry_points) - set(uses))
    if unknown:
        raise ValueError(f"no such seedr module or definition: {', '.join(unknown)}")
    reached, todo = set(), list(entry_points)
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo += uses[name]
    return sorted(reached)


def source_fingerprint(entry_points: Iterable[str] | None = None, root: Path = PACKAGE_ROOT) -> str:
    """A hash of what ``entry_points`` run compute (``code_closure``); without entry points, of every
    module of the library but the command line's (``COMMAND_LINE_SOURCE``)."""
    if entry_points is None:
        computations = _module_computations(root, _source_state(root))
        command_line = tuple(entry.removesuffix(".py") for entry in COMMAND_LINE_SOURCE)
        names = [name for name in computations if not "/".join(name.split(".")[1:]).startswith(command_line)]
    else:
        computations, _ = _source_graph(root)
        names = code_closure(entry_points, root)
    digest = hashlib.sha256()
    for name in sorted(names):
        digest.update(name.encode() + b"\0" + hashlib.sha256(computations[name]).digest())
    return digest.hexdigest()[:12]


def code_fingerprint(entry_points: Iterable[str] | None = None) -> dict[str, str]:
    """The code that computes a result: seedr's version and the ``source_fingerprint`` of what it runs
    (``entry_points``; the whole library when not given). Results keyed on it (experiment steps) are
    recomputed when that code changes — a fixed bug or a changed default — even while the version number
    stands still; an edit to a stage's options or help, to a comment or a docstring, to the layout of the
    code or to code the step does not run, does not recompute them."""
    return {"version": __version__,
            "source": source_fingerprint(None if entry_points is None else sorted(entry_points))}


def _recorded_code(out_dir: Path) -> dict | None:
    """The ``code`` that ``run.json`` in ``out_dir`` records, None if it records none (or cannot be read)."""
    try:
        code = json.loads((out_dir / "run.json").read_text(encoding="utf-8")).get("code")
    except (OSError, ValueError, AttributeError):
        return None
    return code if isinstance(code, dict) else None


def record_run(out_dir: str | Path, config: Any, seed: int | None, command: str | None = None,
               code: dict[str, str] | None = None) -> None:
    """Write ``config.yaml`` (resolved) and ``run.json`` (seed, versions, command, start time) into a run
    folder.

    A training run's ``run.json`` also records the ``code_fingerprint`` of the code that started it
    (``code``, given when it starts); a record written again when the run is resumed keeps that one, so
    that each resume by other code can say so (``other_code``)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    recorded = stored_paths(to_dict(config) if dataclasses.is_dataclass(config) else config, out_dir)
    with atomic_write(out_dir / "config.yaml") as stream:  # paths inside the run relative to it: it may move
        yaml.safe_dump(recorded, stream, sort_keys=False)
    info = {"seed": seed, "command": command or " ".join(sys.argv), "versions": environment(),
            "started": datetime.now(UTC).isoformat(timespec="seconds")}
    started_by = code if code is not None else _recorded_code(out_dir)
    if started_by is not None:
        info["code"] = started_by
    with atomic_write(out_dir / "run.json") as stream:
        json.dump(info, stream, indent=2)


def other_code(out_dir: str | Path) -> str | None:
    """The one line a training run resumed in ``out_dir`` prints when the code resuming it is not the code
    that started it (``code_fingerprint``, recorded by ``record_run``): its result mixes the two, which
    nothing else would say. A ``run.json`` of an older seedr, which records no code, cannot be checked."""
    recorded, current = _recorded_code(Path(out_dir)), code_fingerprint()
    if recorded is None:
        return (f"warning: resuming {out_dir}, whose run.json records no code fingerprint (an older seedr): "
                "whether the code changed since it started cannot be checked")
    if recorded == current:
        return None
    same_version = recorded.get("version") == current["version"]
    before, now = ((code["source"] if same_version else f"seedr {code.get('version')} {code.get('source')}")
                   for code in (recorded, current))
    return (f"warning: resuming {out_dir}, started by other code (fingerprint {before} → {now}); "
            "the result mixes the two")
