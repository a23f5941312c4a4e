"""What every benchmark shares: sizes, the real data it runs on, timing, peak memory in a fresh
process, the machine description, and the section format ``bench/run.py`` turns into
``docs/bench/results.md`` and ``results.json``.

A benchmark module exposes ``run(tiny: bool, threads: int) -> Section`` and is also a script:
``python bench/bench_x.py [--size tiny|full]`` prints its section. ``--size tiny`` (``--tiny``, or
``SEEDR_BENCH_TINY=1``) makes every benchmark run in seconds, for the test that checks they all work;
its numbers mean nothing.
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import itertools
import json
import multiprocessing
import os
import platform
import resource
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

SHARED_DATA = Path(os.environ.get("SEEDR_SHARED_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))
WIKI = SHARED_DATA / "wiki"
NQ_OPEN = SHARED_DATA / "nq-open"
SCIFACT = SHARED_DATA / "scifact"
#: Embeddings one benchmark computes and a later one reuses (the wiki passages under MiniLM).
CACHE = Path(os.environ.get("SEEDR_BENCH_CACHE", Path(__file__).resolve().parents[1] / "runs" / "bench-cache"))

#: Libraries whose versions every results file records.
LIBRARIES = ("torch", "transformers", "sentence-transformers", "accelerate", "faiss-cpu", "bm25s", "numpy",
             "tokenizers", "seedr")


@dataclass
class Table:
    """One Markdown table: ``columns`` names, ``rows`` of already formatted cells."""

    caption: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)


#: A bf16 goal's measurement where ``measures_bf16`` is false.
NO_NATIVE_BF16 = "not measured: this CPU computes bf16 only by emulation (no AVX512-BF16 or AMX)"


def measures_bf16(tiny: bool) -> bool:
    """Whether the benchmarks time bf16 here: where this CPU computes it natively
    (``seedr.hardware.native_bf16``), and at the tiny size (seconds either way: it checks the code runs).
    Elsewhere oneDNN emulates bf16 hundreds of times more slowly than float32, so a full run would not
    finish; the bf16 goals are then marked not measured, and what needs vectors computes them in float32."""
    from seedr.hardware import native_bf16

    return tiny or native_bf16("cpu")


@dataclass
class Goal:
    """A goal of the issue, what was measured against it, and whether it was met (no rounding up)."""

    goal: str
    measured: str
    met: bool | None  # None: could not be measured at this size (e.g. no setting reached the recall)

    @property
    def status(self) -> str:
        return {True: "met", False: "MISSED", None: "not measured"}[self.met]


@dataclass
class Section:
    """A benchmark's results: how it was set up (shapes, data, precision, libraries compared), its
    tables, its goals, the raw numbers (``data``, for the JSON) and how long it ran."""

    key: str
    title: str
    setup: list[str]
    tables: list[Table] = field(default_factory=list)
    goals: list[Goal] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        payload = asdict(self)
        payload["goals"] = [{**asdict(goal), "status": goal.status} for goal in self.goals]
        return payload

    def markdown(self) -> str:
        lines = [f"## {self.title}", ""]
        lines += [f"- {line}" for line in self.setup]
        lines.append(f"- ran for {self.seconds:.0f} s")
        for table in self.tables:
            lines += ["", f"**{table.caption}**", "", "| " + " | ".join(table.columns) + " |",
                      "|" + "|".join("---" for _ in table.columns) + "|"]
            lines += ["| " + " | ".join(row) + " |" for row in table.rows]
        if self.goals:
            lines += ["", "| goal | measured | status |", "|---|---|---|"]
            lines += [f"| {goal.goal} | {goal.measured} | {goal.status} |" for goal in self.goals]
        return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------- command line


def tiny_from_env() -> bool:
    return os.environ.get("SEEDR_BENCH_TINY", "") not in ("", "0")


def add_size_options(parser: argparse.ArgumentParser) -> None:
    """``--size tiny|full`` (``--tiny`` for short, or ``SEEDR_BENCH_TINY=1``) and ``--threads``."""
    parser.add_argument("--size", choices=("tiny", "full"), default="tiny" if tiny_from_env() else "full",
                        help="full: the sizes of docs/bench/results.md (minutes); tiny: seconds, to check that "
                             "everything runs (its numbers mean nothing)")
    parser.add_argument("--tiny", dest="size", action="store_const", const="tiny", help="same as --size tiny")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="torch / faiss threads")


def arguments(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    add_size_options(parser)
    return parser.parse_args()


def main(run: Callable[[bool, int], Section], description: str) -> None:
    """The script form of a benchmark: run it and print its section."""
    args = arguments(description)
    set_threads(args.threads)
    print(timed_section(run, args.size == "tiny", args.threads).markdown())


def set_threads(threads: int) -> None:
    import faiss
    import torch

    torch.set_num_threads(threads)
    faiss.omp_set_num_threads(threads)


def timed_section(run: Callable[[bool, int], Section], tiny: bool, threads: int) -> Section:
    start = time.perf_counter()
    section = run(tiny, threads)
    section.seconds = time.perf_counter() - start
    return section


# ----------------------------------------------------------------------------------- the machine


def cpu_model() -> str:
    """The ``Model name:`` line of ``lscpu``."""
    try:
        output = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or "unknown"
    return next((line.split(":", 1)[1].strip() for line in output.splitlines() if line.startswith("Model name")),
                "unknown")


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    return set(next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), []))


def environment(threads: int) -> dict[str, Any]:
    """Date, CPU, threads and the version of every library compared."""
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    flags = cpu_flags()
    return {"date": datetime.now(UTC).isoformat(timespec="seconds"), "cpu": cpu_model(),
            "cores": os.cpu_count(), "threads": threads, "python": platform.python_version(),
            "bf16_instructions": sorted(flag for flag in flags if "bf16" in flag or flag == "amx_tile"),
            "versions": versions}


# ----------------------------------------------------------------------------------- real data


def iter_wiki_passages() -> Iterator:
    """DPR-style 100-word passages (``seedr.data.passages.split_passages``) of the Wikipedia shards in
    ``../shared/data/wiki``, in shard and article order, streamed."""
    from seedr.data.articles import read_articles
    from seedr.data.passages import split_passages

    def articles() -> Iterator:
        for shard in sorted(WIKI.glob("*.jsonl*")):
            yield from read_articles(shard)

    return split_passages(articles())


def wiki_passages(count: int) -> list:
    """The first ``count`` passages of ``iter_wiki_passages``."""
    passages = list(itertools.islice(iter_wiki_passages(), count))
    if len(passages) < count:
        raise ValueError(f"{WIKI} holds only {len(passages)} passages, {count} asked for")
    return passages


def embeddings_path(count: int) -> Path:
    """Where the MiniLM embeddings of the first ``count`` wiki passages are kept between benchmarks."""
    return CACHE / f"wiki-passages-{count}-minilm.npy"


def wiki_embeddings(count: int) -> np.ndarray:
    """MiniLM embeddings (float32, normalised) of the first ``count`` wiki passages: those the encoding
    benchmark wrote, else encoded now with seedr (float32) and kept."""
    import numpy as np

    path = embeddings_path(count)
    if path.exists():
        return np.load(path)
    from seedr.retrieval.encode import TextEncoder

    vectors = TextEncoder("minilm").encode([passage.text for passage in wiki_passages(count)])
    save_embeddings(count, vectors)
    return vectors


def save_embeddings(count: int, vectors: np.ndarray) -> None:
    import numpy as np

    path = embeddings_path(count)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)


def nq_questions(count: int) -> list[str]:
    """The first ``count`` Natural Questions open-domain dev questions (real queries for the wiki passages)."""
    from seedr.io import iter_jsonl

    path = next(NQ_OPEN.glob("*.jsonl*"))
    return [record["question"] for _, record in itertools.islice(iter_jsonl(path), count)]


# ----------------------------------------------------------------------------------- measuring


def best_of(repeats: int, function: Callable[[], Any]) -> tuple[float, Any]:
    """The shortest of ``repeats`` timed calls (the least disturbed by other work) and the last result."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def process_memory_mib(*fields: str) -> dict[str, float]:
    """Memory ``fields`` of this process's ``/proc/self/status`` (``VmHWM``, ``VmRSS``, ``RssAnon`` ...) in
    MiB; those the kernel does not report are absent (an empty mapping off Linux)."""
    values = {}
    try:
        with open("/proc/self/status") as status:
            for line in status:
                name, _, value = line.partition(":")
                if name in fields:
                    values[name] = int(value.split()[0]) / 1024  # reported in kB
    except OSError:
        pass
    return values


def peak_rss_mib() -> float:
    """This process's peak resident memory in MiB: ``VmHWM`` of ``/proc/self/status``.

    Not ``ru_maxrss``: Linux carries the parent's high-water mark into a child across ``fork``/``exec``
    (``exec`` saves the old address space's peak into the new process's rusage), so a process started
    by a big parent would report the parent's peak. ``VmHWM`` belongs to the new address space alone.
    """
    peak = process_memory_mib("VmHWM").get("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB


def _peak_rss_child(function: Callable[..., Any], args: tuple) -> tuple[Any, float]:
    result = function(*args)
    return result, peak_rss_mib()


#: The libraries a measurement's process has imported before it starts (below).
PRELOADED = ["numpy", "torch", "transformers", "sentence_transformers", "faiss", "seedr.engine.trainer", "common"]


@functools.cache
def _fresh_processes() -> multiprocessing.context.BaseContext:
    """Where fresh processes come from: forked from a server that has imported ``PRELOADED`` and done
    nothing else (``forkserver``), so that every process starts with an untouched heap, allocator and
    thread pool, as a new ``spawn`` process would, without importing torch and transformers again: 8 s a
    process on the 2-core CPU with another job beside it, 0.1 s forked (a full ``make bench`` starts
    dozens; its tiny run in the test suite spent most of its time so)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOADED)
    return context


def in_fresh_process(function: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """Run ``function(*args)`` (a module-level function) in a new Python process; returns its result
    and that process's peak resident memory in MiB (interpreter and imports included, those inherited
    from the server as far as the process maps them)."""
    with ProcessPoolExecutor(1, mp_context=_fresh_processes()) as pool:
        return pool.submit(_peak_rss_child, function, args).result()


def _system_child(function: Callable[..., Any], args: tuple, threads: int, keep_freed_memory: bool) -> Any:
    if keep_freed_memory:
        from seedr.allocator import keep_freed_memory as apply_policy

        apply_policy()
    set_threads(threads)
    return function(*args)


def system_in_fresh_process(function: Callable[..., Any], *args: Any, threads: int, keep_freed_memory: bool) -> Any:
    """``function(*args)``, the measurement of one benchmarked system, alone in a new process with
    ``threads`` threads, so that no system inherits another's heap or allocator state.
    ``keep_freed_memory`` starts the process as the ``seedr`` command starts (its allocator policy,
    ``seedr.allocator``, applied before the run allocates): seedr's systems run so, as its users run
    them; the others with the platform's allocator, as theirs run (and, where a row says so, with
    seedr's policy too, to show its share)."""
    return in_fresh_process(_system_child, function, args, threads, keep_freed_memory)[0]


# ----------------------------------------------------------------------------------- formatting


def ratio(value: float) -> str:
    return f"{value:.2f}×"


def number(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if value < 10 else f"{value:.1f}"


def write_results(sections: list[Section], env: dict[str, Any], command: str, out_dir: Path) -> None:
    """``results.json`` (everything) and ``results.md`` (the tables and a summary of the goals)."""
    from seedr.io import atomic_write

    out_dir.mkdir(parents=True, exist_ok=True)
    payload = {"command": command, "environment": env, "sections": [s.to_json() for s in sections]}
    versions = ", ".join(f"{name} {version}" for name, version in env["versions"].items())
    lines = ["# seedr benchmarks", "",
             f"Generated by `{command}` on {env['date']} (do not edit: run it again).", "",
             (f"- CPU (`lscpu` model name): {env['cpu']}; {env['cores']} cores, {env['threads']} threads used; "
             f"bf16 instructions: {', '.join(env['bf16_instructions']) or 'none'}"),
             f"- Python {env['python']}; {versions}",
             ("- Each comparison is measured within one run, side by side: on a shared or noisy machine the "
             "ratios hold better than the absolute rates."), "",
             "## Goals", "", "| benchmark | goal | measured | status |", "|---|---|---|---|"]
    for section in sections:
        lines += [f"| {section.title} | {goal.goal} | {goal.measured} | {goal.status} |" for goal in section.goals]
    lines.append("")
    text = "\n".join(lines) + "\n" + "\n".join(section.markdown() for section in sections)
    for name, content in (("results.json", json.dumps(payload, indent=2) + "\n"), ("results.md", text)):
        with atomic_write(out_dir / name) as stream:
            stream.write(content)
