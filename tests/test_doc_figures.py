"""Every figure of the documentation that cites a record is the record's.

The citation convention: a paragraph of ``docs/*.md`` or ``README.md`` cites a record when it links
``results/NAME/`` or names `` `NAME` `` (in it or in its section's heading), NAME a recorded experiment
(``docs/results/NAME/results.json``). Each decimal figure in such a paragraph is pinned in
``tests/doc_figures.json`` — keyed by its file, the words before it and the figure as written — to the
value it states: ``NAME:path`` into that results.json (e.g. ``label_free:tasks.scifact.systems.minilm.
nDCG@10.mean``), or ``elsewhere: WHY`` for a figure the paragraph quotes from another source (a paper, an
earlier run). The test reads each pinned value and compares it, rounded as written, with the figure; an
edited figure has no pin (its key changed) and fails, as does a re-recorded value that moved it.
``python tests/test_doc_figures.py --pin`` pins new figures to the first recorded value they match
(claims first, then the tasks' figures), and marks the others UNMATCHED, for a reason to be written.

The generated pages are checked against their records elsewhere (``docs/claims.md``:
``tests/test_claims_summary.py``), and so are not read here.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
PINS = Path(__file__).with_name("doc_figures.json")
GENERATED = {"claims.md"}
#: A decimal figure as prose writes it, signed or not; not a version, a section (§4.6.1) or an exponent.
FIGURE = re.compile(r"(?<![\w.§/@-])([-+−]?)(\d+\.\d+)(?![\w.]*\d)(?!\.\d)")
CONTEXT = 40


def recorded() -> set[str]:
    return {path.parent.name for path in RESULTS.glob("*/results.json")}


def citations() -> Iterator[tuple[str, str, str, list[str]]]:
    """(key, sign, figure, cited records) for every figure of a paragraph that cites a record."""
    names = recorded()
    for path in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]:
        if path.name in GENERATED:
            continue
        heading = ""
        for paragraph in path.read_text(encoding="utf-8").split("\n\n"):
            if paragraph.startswith("#"):
                heading = paragraph.split("\n")[0]
            cited = (set(re.findall(r"results/([\w-]+)/", paragraph))
                     | set(re.findall(r"`([\w-]+)`", heading + paragraph))) & names
            if not cited:
                continue
            flat = " ".join(paragraph.split())
            for match in FIGURE.finditer(flat):
                before = flat[max(0, match.start() - CONTEXT):match.start()]
                yield (f"{path.relative_to(ROOT)}: …{before}{match.group(0)}", match.group(1), match.group(2),
                       sorted(cited))


def _values(node: Any, path: str = "") -> Iterator[tuple[str, float]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _values(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _values(value, f"{path}.{index}")
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield path, float(node)
    elif isinstance(node, str):
        try:
            yield path, float(node)
        except ValueError:
            pass


def lookup(name: str, path: str) -> Any:
    node: Any = json.loads((RESULTS / name / "results.json").read_text(encoding="utf-8"))
    for part in path.split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return float(node)


def states(sign: str, figure: str, value: float) -> bool:
    """Whether ``value``, rounded as ``figure`` is written, is it (an unsigned figure states a size)."""
    decimals = len(figure.split(".")[1])
    written = float(figure) * (-1 if sign in ("-", "−") else 1)
    rounded = round(value if sign else abs(value), decimals)
    return abs(rounded - written) < 10 ** -(decimals + 3)


def _preferred(path: str) -> tuple[int, str]:
    return (0 if path.startswith("claims") else 1 if path.startswith("tasks") else 2, path)


def pin() -> None:
    pins = json.loads(PINS.read_text(encoding="utf-8")) if PINS.exists() else {}
    kept = {}
    for key, sign, figure, cited in citations():
        if key in pins and pins[key] != "UNMATCHED":
            kept[key] = pins[key]
            continue
        found = sorted((_preferred(path), name) for name in cited
                       for path, value in _values(json.loads((RESULTS / name / "results.json").read_text()))
                       if states(sign, figure, value))
        kept[key] = f"{found[0][1]}:{found[0][0][1]}" if found else "UNMATCHED"
    PINS.write_text(json.dumps(kept, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def test_every_figure_citing_a_record_is_the_records():
    pins = json.loads(PINS.read_text(encoding="utf-8"))
    seen, problems = set(), []
    for key, sign, figure, _ in citations():
        seen.add(key)
        where = pins.get(key)
        if where is None or where == "UNMATCHED":
            problems.append(f"{key}: no record states it (pin it: python tests/test_doc_figures.py --pin)")
        elif not where.startswith("elsewhere: "):
            name, path = where.split(":", 1)
            if not states(sign, figure, lookup(name, path)):
                problems.append(f"{key}: the record's {where} is {lookup(name, path)!r}")
    problems += [f"{key}: pinned, but no such figure in the docs" for key in set(pins) - seen]
    assert not problems, "\n".join(problems)


def test_an_edited_figure_fails(tmp_path, monkeypatch):
    """The check reads the docs as they are: a pinned figure changed by one digit is caught."""
    key, sign, figure, _ = next(item for item in citations()
                                 if not json.loads(PINS.read_text())[item[0]].startswith("elsewhere"))
    name, path = json.loads(PINS.read_text())[key].split(":", 1)
    edited = f"{float(figure) + 10 ** -len(figure.split('.')[1]):.{len(figure.split('.')[1])}f}"
    assert states(sign, figure, lookup(name, path)) and not states(sign, edited, lookup(name, path))


if __name__ == "__main__" and sys.argv[1:] == ["--pin"]:
    pin()
