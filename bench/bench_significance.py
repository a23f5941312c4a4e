"""Peak memory of the paired randomisation test: resamples drawn in chunks vs all at once.

``seedr.evaluation.significance.permutation_test`` draws its resamples in chunks of about
``RESAMPLE_CHUNK_VALUES`` values (scipy's ``batch``); drawing all of them at once — what it did before —
holds resamples × questions values several times over (3,610 NQ-open questions × 10,000 resamples:
GBs, the peak issue 11 saw in a two-run ``seedr evaluate``). Both run on real per-question scores:
the Top-20 answer coverage of two BM25 settings (k1 0.9 and 1.2) over passages cut from the first
``--articles`` articles of the shared Wikipedia, for all NQ-open dev questions. The p-values are
checked equal first; then each variant's peak traced memory (``tracemalloc``, which numpy reports to)
and time are printed.

Run:  .venv/bin/python bench/bench_significance.py --articles 100 --resamples 10000
"""

from __future__ import annotations

import argparse
import itertools
import time
import tracemalloc
from pathlib import Path

import numpy as np

from seedr.data.articles import read_articles
from seedr.data.passages import split_passages
from seedr.evaluation.qa_coverage import coverage_per_question, first_hit_ranks, read_qa_file
from seedr.evaluation.significance import align, permutation_test, resample_chunk
from seedr.retrieval.bm25 import BM25Index

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


def per_question_hits(articles: int) -> tuple[np.ndarray, np.ndarray]:
    passages = list(split_passages(itertools.islice(read_articles(DATA / "wiki" / "enwiki-2015-00.jsonl.xz"),
                                                    articles)))
    questions, answers = read_qa_file(DATA / "nq-open")
    collection = {passage.id: passage for passage in passages}
    hits = {}
    for k1 in (0.9, 1.2):
        run = BM25Index.build(passages, k1=k1).search(questions, k=20)
        hits[k1] = coverage_per_question(first_hit_ranks(run, collection, answers, depth=20), [20])["Top-20"]
    _, scores = align(hits)
    return scores[1.2], scores[0.9]


def measured(system: np.ndarray, baseline: np.ndarray, resamples: int, chunk: int) -> tuple[float, int, float]:
    tracemalloc.start()
    start = time.perf_counter()
    p_value = permutation_test(system, baseline, n_resamples=resamples, seed=0, chunk=chunk)
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return p_value, peak, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--articles", type=int, default=100)
    parser.add_argument("--resamples", type=int, default=10_000)
    args = parser.parse_args()
    system, baseline = per_question_hits(args.articles)
    chunk = resample_chunk(len(system), args.resamples)
    print(f"{len(system)} questions, {args.resamples} resamples; chunks of {chunk}")
    results = {name: measured(system, baseline, args.resamples, size)
               for name, size in (("chunked", chunk), ("all at once", args.resamples))}
    if len({p_value for p_value, _, _ in results.values()}) != 1:
        raise SystemExit(f"p-values differ: {results}")
    for name, (p_value, peak, seconds) in results.items():
        print(f"{name:12s} p = {p_value:.4f}  peak {peak / 2**20:8.1f} MiB  {seconds:6.2f} s")


if __name__ == "__main__":
    main()
