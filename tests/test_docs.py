"""The README and the documentation pages under docs/ stay clean, linked and in step with the code.

- Prose names no issue number and no commit hash: say what was decided or measured ("the ten-minute goal",
  "a fresh clone"). That holds for the generated claims table too: its texts come from the experiment
  files (re-rendered into the records), so they are fixed there. The records under docs/results/ and
  docs/bench/ are exempt. The shipped experiment files and recipes, which users read and run, name none
  either.
- docs/recipes.md lists every shipped recipe (written by hand, so a new recipe must be added to it).
- Every relative link points at a file or folder that exists.
- The README stays a short product page.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
RECIPES = ROOT / "seedr" / "recipes"
#: The README and the top-level documentation pages (docs/results/** and docs/bench/** are records).
PAGES = [README, *sorted(DOCS.glob("*.md"))]
README_MAX_LINES = 300

#: "issue 23", "#23"; an upstream project's issue cited as owner/name#N is a source, not our history.
ISSUE_NUMBER = re.compile(r"\bissues? \d+|(?<![\w/.-])#\d+\b", re.IGNORECASE)
COMMIT_HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")
#: [text](target) and ![alt](target), with an optional "title"; reference definitions ([name]: target).
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)
FENCED_CODE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def relative_links(text: str) -> list[str]:
    """The link targets of Markdown ``text`` that are paths (not URLs, mail addresses or anchors alone),
    outside code."""
    prose = INLINE_CODE.sub("", FENCED_CODE.sub("", text))
    targets = INLINE_LINK.findall(prose) + REFERENCE_LINK.findall(prose)
    return [target for target in targets
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) and not target.startswith("#")]


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_no_issue_number_or_commit_hash(page):
    if not page.exists():
        pytest.skip(f"{page_id(page)} does not exist")
    text = page.read_text(encoding="utf-8")
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        found += [f"line {number}: issue number {m.group()!r}" for m in ISSUE_NUMBER.finditer(line)]
        found += [f"line {number}: commit hash {m.group()!r}" for m in COMMIT_HASH.finditer(line)]
    assert not found, f"{page_id(page)}: say what was decided or measured instead:\n" + "\n".join(found)


SHIPPED_FILES = sorted([*(ROOT / "seedr" / "experiments").rglob("*.yaml"), *RECIPES.rglob("*.yaml")])


@pytest.mark.parametrize("path", SHIPPED_FILES, ids=page_id)
def test_shipped_experiments_and_recipes_name_no_issue_number(path):
    found = [f"line {number}: {m.group()!r}" for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             for m in ISSUE_NUMBER.finditer(line)]
    assert not found, f"{page_id(path)}: say what was decided or measured instead:\n" + "\n".join(found)


def test_every_recipe_is_on_the_recipes_page():
    page = (DOCS / "recipes.md").read_text(encoding="utf-8")
    recipes = sorted(RECIPES.glob("*/*.yaml"))
    assert recipes, f"no recipe files under {RECIPES}"
    missing = [str(recipe.relative_to(RECIPES)) for recipe in recipes if f"`{recipe.stem}`" not in page]
    assert not missing, f"docs/recipes.md lacks a row for: {', '.join(missing)}"
    listed = re.findall(r"^\| `([a-z0-9_]+)` \|", page, re.MULTILINE)
    stems = {recipe.stem for recipe in recipes}
    gone = [name for name in listed if name not in stems]
    assert not gone, f"docs/recipes.md lists recipes that no longer exist: {', '.join(gone)}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_relative_links_resolve(page):
    if not page.exists():
        pytest.skip(f"{page_id(page)} does not exist")
    broken = []
    for target in relative_links(page.read_text(encoding="utf-8")):
        path = target.split("#", 1)[0].split("?", 1)[0]
        if path and not (page.parent / path).exists():
            broken.append(target)
    assert not broken, f"{page_id(page)}: broken links: {', '.join(broken)}"


def test_readme_is_a_short_product_page():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, (f"README.md has {lines} lines (at most {README_MAX_LINES}): "
                                       "move the long content to a page under docs/")


def test_the_link_checker_sees_links():
    """The checker above finds links (and only paths) — so an empty result is not a silent pass."""
    text = "[a](guide.md#x) ![b](results/demo/plots/loss.png \"t\") [c](https://example.org) [d](#top)\n" \
           "`[e](not/a/link.md)`\n[f]: ../README.md\n```\n[g](inside/code.md)\n```\n"
    assert relative_links(text) == ["guide.md#x", "results/demo/plots/loss.png", "../README.md"]


def test_the_gpu_page_lists_every_queued_job_in_order():
    """docs/gpu.md's queue table is the queue's (gpu/queue.yaml): every job, in the order a lease runs them
    (it once left out ``objectives_at_equal_flops``)."""
    import re

    import yaml

    jobs = [job["name"] for job in yaml.safe_load((ROOT / "gpu" / "queue.yaml").read_text())["jobs"]]
    text = (ROOT / "docs" / "gpu.md").read_text()
    table = re.findall(r"^\| `([\w-]+)` \|", text.split("| job | what it measures | state |", 1)[1].split("\n\n")[0],
                       flags=re.MULTILINE)
    assert table == jobs
