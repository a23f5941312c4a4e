"""Run every benchmark and write ``docs/bench/results.md`` and ``docs/bench/results.json``.

    make bench                                   # = .venv/bin/python bench/run.py
    .venv/bin/python bench/run.py --tiny --out /tmp/bench   # seconds: checks that everything runs

The benchmarks run one after the other in this process (the memory benchmark starts its own
processes); the encoding benchmark's embeddings are kept in a temporary folder for the search and
memory benchmarks. The results files are generated: never edit them by hand, run this again.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import sys
import tempfile
from pathlib import Path

#: In the order they run: search and memory reuse the embeddings the encoding benchmark computes.
BENCHMARKS = ("bench_pretrain", "bench_finetune", "bench_encode", "bench_ceiling", "bench_search", "bench_memory")
REPOSITORY = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", default=os.environ.get("SEEDR_BENCH_TINY", "") not in ("", "0"),
                        help="every benchmark at a tiny size, in seconds (the numbers mean nothing)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=REPOSITORY / "docs" / "bench")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, help="run only these benchmarks")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="seedr-bench-cache-") as cache:
        os.environ["SEEDR_BENCH_CACHE"] = cache  # before common is imported: fresh embeddings every run
        import common

        common.set_threads(args.threads)
        sections = []
        for name in args.only or BENCHMARKS:
            print(f"== {name}", flush=True)
            section = common.timed_section(importlib.import_module(name).run, args.tiny, args.threads)
            print(section.markdown(), flush=True)
            sections.append(section)
    command = "make bench" if not args.tiny and not args.only and args.out == REPOSITORY / "docs" / "bench" else \
        " ".join(shlex.quote(part) for part in ["python", "bench/run.py", *sys.argv[1:]])
    common.write_results(sections, common.environment(args.threads), command, args.out)
    print(f"wrote {args.out / 'results.md'} and {args.out / 'results.json'}")


if __name__ == "__main__":
    main()
