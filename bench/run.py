"""Run every benchmark and write ``docs/bench/results.md`` and ``docs/bench/results.json``.

    make bench                                   # = .venv/bin/python bench/run.py
    .venv/bin/python bench/run.py --size tiny --out /tmp/bench   # seconds: checks that everything runs

The benchmarks run one after the other in this process (the memory benchmark starts its own
processes); the encoding benchmark's embeddings are kept in a temporary folder for the search and
memory benchmarks. The results files are generated: never edit them by hand, run this again.
"""

from __future__ import annotations

import argparse
import importlib
import shlex
import sys
import tempfile
from pathlib import Path

import common

#: In the order they run: search and memory reuse the embeddings the encoding benchmark computes;
#: bench_index_scale measures the encode folder named by $SEEDR_INDEX_EMBEDDINGS (not measured without one).
BENCHMARKS = ("bench_pretrain", "bench_finetune", "bench_encode", "bench_ceiling", "bench_search", "bench_memory",
              "bench_int8", "bench_index_scale", "bench_help")
REPOSITORY = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common.add_size_options(parser)
    parser.add_argument("--out", type=Path, default=REPOSITORY / "docs" / "bench")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, help="run only these benchmarks")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="seedr-bench-cache-") as cache:
        common.CACHE = Path(cache)  # fresh embeddings every run, gone afterwards
        common.set_threads(args.threads)
        sections = []
        for name in args.only or BENCHMARKS:
            print(f"== {name}", flush=True)
            section = common.timed_section(importlib.import_module(name).run, args.size == "tiny", args.threads)
            print(section.markdown(), flush=True)
            sections.append(section)
    command = "make bench" if args.size == "full" and not args.only and args.out == REPOSITORY / "docs" / "bench" else \
        " ".join(shlex.quote(part) for part in ["python", "bench/run.py", *sys.argv[1:]])
    common.write_results(sections, common.environment(args.threads), command, args.out)
    print(f"wrote {args.out / 'results.md'} and {args.out / 'results.json'}")


if __name__ == "__main__":
    main()
