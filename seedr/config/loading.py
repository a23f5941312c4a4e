"""Typed configuration: dataclasses filled from a YAML recipe, then ``key=value`` overrides from the
command line; every run folder records the resolved config, library versions and seed."""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import re
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from docstring_parser import parse

from seedr.io import DataError, read_text

C = TypeVar("C")


#: How many nodes a YAML document's aliases may add to it once expanded. Aliases are shared, not copied,
#: when the text is read, but anything that walks the data (substituting variables, writing JSON) copies
#: them: nine levels of ten aliases (a "billion laughs", 750 bytes) are 10⁹ strings. seedr's own files add
#: none; a few hundred is a generous use.
MAX_ALIASED_NODES = 100_000


class YAMLExpansionError(yaml.YAMLError):
    """YAML whose aliases expand without bound (an alias bomb) or refer to themselves: one line, which the
    readers (``read_recipe``, ``seedr.experiments.spec.load_experiment``) give with the file's name."""


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_aliases(root: yaml.Node) -> None:
    """Refuse a composed document whose aliases expand to more than ``MAX_ALIASED_NODES`` extra nodes,
    or which holds itself. The composer hands an alias the node of its anchor, so the document is a
    graph: its expanded size is counted over it (each node once, iteratively: no recursion limit)."""
    sizes: dict[int, int] = {}  # id → nodes of the node's subtree, expanded
    ancestors: set[int] = set()  # the nodes being counted, above the one at hand
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, counted = stack.pop()
        if counted:
            ancestors.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(child)] for child in _children(node))
            continue
        if id(node) in sizes:
            continue
        if id(node) in ancestors:
            raise YAMLExpansionError(f"line {node.start_mark.line + 1}: an alias refers to itself (a YAML "
                                     "structure that holds itself has no end)")
        ancestors.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))
    added = sizes[id(root)] - len(sizes)
    if added > MAX_ALIASED_NODES:
        raise YAMLExpansionError(f"its aliases expand it by {added} nodes, more than {MAX_ALIASED_NODES} (an "
                                 "alias bomb): refused")


class _Loader(yaml.SafeLoader):
    """YAML with YAML 1.2 booleans: only true/false are booleans, so ``mixed_precision: no`` stays a string;
    aliases that expand without bound are refused (``_check_aliases``)."""

    def compose_document(self) -> yaml.Node:
        """The document's node graph, checked before anything is built from it."""
        node = super().compose_document()
        _check_aliases(node)
        return node


_Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool",
                              re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


def yaml_problem(error: yaml.YAMLError) -> str:
    """PyYAML's message on one line (it spans several, with a caret under the offending column)."""
    return " ".join(str(error).split())


def parse_yaml(text: str) -> Any:
    """Parse YAML text with YAML 1.2 booleans (see ``_Loader``); ``YAMLExpansionError`` (a
    ``yaml.YAMLError``) for an alias bomb or an alias that holds itself."""
    try:
        return yaml.load(text, Loader=_Loader)
    except RecursionError:  # nesting deeper than Python's stack: a crafted file, said as YAML's own error
        raise yaml.YAMLError("nested too deeply") from None


def _coerce(value: Any, annotation: Any, where: str) -> Any:
    """Convert a YAML/CLI value to the field's declared type (nested dataclasses included)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(annotation) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            return None
        for option in options:
            try:
                return _coerce(value, option, where)
            except ValueError:
                if len(options) == 1:  # an optional setting: what its type says of the value ("not finite")
                    raise
            except TypeError:
                pass
        raise ValueError(f"{where}: {value!r} fits none of {options}")
    if origin is typing.Literal:
        if value not in typing.get_args(annotation):
            raise ValueError(f"{where}: {value!r} is not one of {typing.get_args(annotation)}")
        return value
    if dataclasses.is_dataclass(annotation):
        if not isinstance(value, dict):
            raise ValueError(f"{where}: expected a mapping")
        return from_dict(annotation, value, where)
    if origin in (list, tuple):
        (item,) = typing.get_args(annotation)[:1] or (Any,)
        if isinstance(value, str):
            value = [v for v in value.split(",") if v]
        return origin(_coerce(v, item, where) for v in value)
    if annotation is bool:
        if isinstance(value, str):
            if value.lower() in ("true", "yes", "1", "on"):
                return True
            if value.lower() in ("false", "no", "0", "off"):
                return False
            raise ValueError(f"{where}: {value!r} is not a boolean")
        return bool(value)
    if annotation in (int, float):
        what = "an integer" if annotation is int else "a number"
        if isinstance(value, bool) or (annotation is int and isinstance(value, float) and not value.is_integer()):
            raise ValueError(f"{where}: {value!r} is not {what}")
        try:
            number = annotation(value)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: {str(value)[:40]!r} is not {what}") from None
        except OverflowError:  # float() of an integer of hundreds of digits
            raise ValueError(f"{where}: {str(value)[:20]}... is too large") from None
        if annotation is int and abs(number) > 2**63 - 1:  # no count is that large; float arithmetic would overflow
            raise ValueError(f"{where}: {str(value)[:20]}... is too large")
        if not math.isfinite(number):  # YAML reads .nan and .inf, and float() "nan": never a setting
            raise ValueError(f"{where}: {value!r} is not a finite number")
        return number
    if annotation is str:
        if isinstance(value, dict | list):
            raise ValueError(f"{where}: {value!r} is not a string")
        return str(value)
    return value


def from_dict(cls: type[C], data: dict[str, Any], where: str = "config") -> C:
    """Build dataclass ``cls`` from a mapping; unknown keys are an error listing the valid ones."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = set(data) - set(fields)
    if unknown:
        raise ValueError(f"{where}: unknown option(s) {sorted(unknown)}"
                         f"{_did_you_mean(sorted(unknown), list(fields), where)}; valid: {sorted(fields)}")
    values = {}
    for key, value in data.items():
        default = _default(fields[key])
        if dataclasses.is_dataclass(default) and isinstance(value, dict):
            # a partial mapping completes the field's own default (fine-tuning's TrainConfig has its own
            # learning rate and batch), not the defaults of the nested class
            value = merge_settings(dataclasses.asdict(default), value)
        values[key] = _coerce(value, hints[key], f"{where}.{key}")
    try:
        config = cls(**values)
    except ValueError as error:  # a __post_init__ check: say which section the option is in
        leaf = where.rsplit(".", 1)[-1]
        if f"{leaf}." in str(error) or str(error).startswith(where):
            raise
        raise ValueError(f"{where}.{error}" if str(error).split(" ", 1)[0].isidentifier()
                         else f"{where}: {error}") from None
    return config


def _did_you_mean(unknown: list[str], valid: list[str], where: str) -> str:
    """The valid key nearest to each unknown one (``difflib``), as the user writes it, e.g. ``, did you mean
    `train.batch_size`?`` for ``train.batchsize``: a typo is found at a glance, not in a list of every key.
    ``where`` is the section's path; its first part is dropped when it is a label rather than a key (``config``,
    or an experiment step's name, which has spaces): ``config.train`` → ``train.``, ``objective`` kept."""
    parts = where.split(".")
    if parts[0] == "config" or not parts[0].isidentifier():
        parts = parts[1:]
    prefix = "".join(f"{part}." for part in parts)
    near = [match for name in unknown for match in difflib.get_close_matches(name, valid, n=1)]
    return f", did you mean {' or '.join(f'`{prefix}{key}`' for key in dict.fromkeys(near))}?" if near else ""


def _default(field: dataclasses.Field) -> Any:
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None if field.default is dataclasses.MISSING else field.default


def merge_settings(*layers: Mapping[str, Any] | None) -> dict[str, Any]:
    """``layers`` of settings in one nested mapping, each over those before it: a dotted key
    ``train.max_steps`` is the key ``max_steps`` of the mapping ``train``, mappings merge key by key and
    anything else is replaced (a mapping too, by a later non-mapping; a non-mapping by a dotted key into
    it). No layer is changed: the result shares nothing mutable with them.

    The one rule wherever settings are layered — a recipe under ``--set`` overrides (``load_config``), a
    config field's own defaults under a partial mapping (``from_dict``), an experiment's defaults and
    scale under a condition's settings (``seedr.experiments.spec``), a step's settings before its config
    is built (``seedr.experiments.steps``) — so ``train.max_steps: 3`` and ``train: {max_steps: 3}`` mean
    the same everywhere, and the later layer wins whichever spelling either uses. ``merge_settings(s)``
    is ``s`` with its dotted keys nested.
    """
    merged: dict[str, Any] = {}
    for layer in layers:
        for key, value in (layer or {}).items():
            *parents, leaf = key.split(".") if isinstance(key, str) else [key]
            target = merged
            for parent in parents:
                if not isinstance(target.get(parent), dict):
                    target[parent] = {}
                target = target[parent]
            if isinstance(value, Mapping):
                current = target.get(leaf)
                target[leaf] = merge_settings(current if isinstance(current, dict) else None, value)
            else:
                target[leaf] = copy.deepcopy(value)
    return merged


def read_recipe(recipe: str | Path) -> dict[str, Any]:
    """The options of the YAML file ``recipe`` (``DataError`` naming the file, and the line where YAML
    says, when it is malformed or not a mapping)."""
    try:
        loaded = parse_yaml(read_text(recipe)) or {}
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise DataError(recipe, f"malformed YAML: {yaml_problem(error)}", line=mark.line + 1 if mark else None) from None
    if not isinstance(loaded, dict):
        raise DataError(recipe, "expected a mapping of options at the top level")
    return loaded


def parse_overrides(overrides: list[str] | None) -> dict[str, Any]:
    """The command line's ``--set key=value`` / ``a.b=value`` as settings (values read as YAML, so
    ``train.max_steps=20`` is a number and ``data.corpus=[a, b]`` a list), later ones winning."""
    layers = []
    for override in overrides or []:
        key, sep, value = override.partition("=")
        if not sep:
            raise ValueError(f"override {override!r} is not of the form key=value")
        layers.append({key.strip(): parse_yaml(value) if value.strip() else value})
    return merge_settings(*layers)


def load_config(cls: type[C], recipe: str | Path | None = None, overrides: list[str] | None = None) -> C:
    """``cls`` from its defaults, then the YAML ``recipe``, then ``key=value`` / ``a.b=value`` overrides."""
    return from_dict(cls, merge_settings(read_recipe(recipe) if recipe is not None else {},
                                         parse_overrides(overrides)))


def to_dict(config: Any) -> dict[str, Any]:
    return dataclasses.asdict(config)


def identity(value: Any) -> Any:
    """A resolved config as what it computes, in JSON-like data, to key its results on (an experiment
    step's folder): its fields, nested configs included, except that a config with an ``identity()``
    method gives its own — ``TrainConfig`` keys its warm-up by the steps it comes to, so that two
    spellings of one computation share their results."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if hasattr(value, "identity"):
            return value.identity()
        return {field.name: identity(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {key: identity(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [identity(item) for item in value]
    return value


def attribute_descriptions(cls: type, prefix: str = "") -> dict[str, str]:
    """``{"prefix.name": description}`` for every field of the dataclass ``cls`` that the ``Attributes:``
    (or ``Args:``) section of its docstring, or of a base class's, describes — the fields of nested
    dataclass fields included, under their dotted keys. What ``describe_settings`` takes for the keys of a
    mapping field whose options another class holds: ``attribute_descriptions(SeedConfig, "objective")``.
    """
    documented: dict[str, str] = {}
    for klass in reversed(cls.__mro__):  # a subclass's entry wins over its base's
        documented.update({param.arg_name: " ".join(param.description.split())
                           for param in parse(klass.__doc__ or "").params if param.description})
    hints = typing.get_type_hints(cls)
    found = {}
    for field in dataclasses.fields(cls):
        key = f"{prefix}.{field.name}" if prefix else field.name
        if field.name in documented:
            found[key] = documented[field.name]
        if dataclasses.is_dataclass(hints[field.name]):
            found.update(attribute_descriptions(hints[field.name], key))
    return found


def describe_settings(config: Any, descriptions: Mapping[str, str] | None = None, prefix: str = "") -> list[str]:
    """``key = value: description`` for every settable key of the dataclass instance ``config``, in field
    order: a nested dataclass's keys under its field's name (``train.max_steps``), a mapping field's entries
    as theirs (``objective.attention_span``; ``objective = {}`` while it is empty), each value as a recipe
    or ``--set`` writes it. A field's description is its entry in the ``Attributes:`` section of its class
    docstring, and a field without one is an error, so the listing cannot drift from the code; a mapping's
    entries take theirs from ``descriptions`` (dotted keys, ``attribute_descriptions``) and are listed
    without one when it has none. The listing of ``seedr pretrain --help`` and ``seedr finetune --help``.
    """
    documented = attribute_descriptions(type(config), prefix.rstrip("."))
    lines = []
    for field in dataclasses.fields(config):
        key, value = f"{prefix}{field.name}", getattr(config, field.name)
        if key not in documented:
            raise ValueError(f"{type(config).__name__}.{field.name} has no description in the "
                             "Attributes section of its docstring")
        if dataclasses.is_dataclass(value):
            lines += describe_settings(value, descriptions, f"{key}.")
        elif isinstance(value, Mapping) and value:
            lines += _describe_entries(value, descriptions or {}, f"{key}.")
        else:
            lines.append(f"{key} = {_yaml_value(value)}: {documented[key]}")
    return lines


def _describe_entries(mapping: Mapping[str, Any], descriptions: Mapping[str, str], prefix: str) -> list[str]:
    lines = []
    for name, value in mapping.items():
        key = f"{prefix}{name}"
        if isinstance(value, Mapping) and value:
            lines += _describe_entries(value, descriptions, f"{key}.")
        else:
            lines.append(f"{key} = {_yaml_value(value)}" + (f": {descriptions[key]}" if key in descriptions else ""))
    return lines


def _yaml_value(value: Any) -> str:
    """A value as it is written in a recipe or a ``--set`` (null, true/false, numbers, names, [a, b])."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, list | tuple | Mapping):
        return yaml.safe_dump(value, default_flow_style=True, width=math.inf).strip()
    return str(value) if value != "" else '""'


