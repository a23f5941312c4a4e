"""The repository stays light enough to clone quickly and to travel to a lent GPU machine (64 MiB with the
data a job carries): the tracked tree outside ``models/`` is at most 10 MB, and generated pages and runs
(``report.html``, TREC ``.trec`` files) are not tracked — a recorded report keeps Markdown, PNG and JSON,
and ``seedr report docs/results/NAME`` makes its page again."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The tracked tree outside models/ (the one weights folder the repository holds) may not exceed this: 8.4 MB
#: when the guard was set at 10 MB, 10.0 MB with thirty recorded experiments, so 12 MB leaves room for about
#: ten more records (a recorded experiment is 0.1-0.7 MB: Markdown, palette PNGs, results.json).
LIMIT_BYTES = 12_000_000


def tracked_files() -> list[Path]:
    try:
        listing = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / name for name in listing.stdout.decode().split("\0") if name]


def test_the_tracked_tree_outside_models_is_at_most_12_mb():
    files = [path for path in tracked_files() if not path.relative_to(ROOT).as_posix().startswith("models/")]
    sizes = {path: path.lstat().st_size for path in files if path.exists() or path.is_symlink()}
    total = sum(sizes.values())
    largest = sorted(sizes, key=sizes.get, reverse=True)[:5]
    assert total <= LIMIT_BYTES, f"{total:,} bytes tracked outside models/; largest: " + ", ".join(
        f"{path.relative_to(ROOT)} ({sizes[path]:,})" for path in largest)


def test_no_generated_page_or_run_is_tracked():
    generated = [path.relative_to(ROOT).as_posix() for path in tracked_files()
                 if path.name == "report.html" or path.suffix == ".trec"]
    assert generated == []
