"""Dense indexes at the size of a whole corpus: Flat, HNSW and IVF over every vector of
one ``seedr encode`` folder, built and searched as ``seedr index`` and ``seedr search`` do.

The folder is ``$SEEDR_INDEX_EMBEDDINGS`` (``docs/results/whole-wikipedia/run.sh`` makes the one of
the whole shared Wikipedia: 658,860 passages, MiniLM); ``--size tiny`` encodes the first 24 wiki
passages into shards of 10 instead. For each index: build time and peak resident memory (``VmHWM``
of a fresh process that loads the folder and runs ``DenseIndex.build``, interpreter and imports
included) against the bytes of the vectors, and its size on disk. For each search setting, in a fresh
process that loads the index: queries/s of the faiss search alone (all questions in one call, best
of 3; the questions are encoded once beforehand with the folder's recorded encoder) and R@100 against
Flat's exact top 100. The largest index is searched memory-mapped too (``seedr search --mmap``), with
that process's peak resident memory and its anonymous part (what the page cache cannot give back).
Questions: NQ-open's dev questions.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_search import recall
from common import (
    Goal,
    Section,
    Table,
    best_of,
    in_fresh_process,
    iter_wiki_passages,
    main,
    nq_questions,
    number,
    process_memory_mib,
    ratio,
)

#: The encode folder measured at full size.
EMBEDDINGS_VARIABLE = "SEEDR_INDEX_EMBEDDINGS"


def sizes(tiny: bool, count: int) -> dict[str, object]:
    if tiny:
        return {"queries": 8, "k": 10, "nlist": 2, "pq": "PQ8x4np", "train_sample": None, "ef": (16, 32),
                "nprobe": (1, 2)}
    # about 4·√N lists (faiss' guideline), at least 39 training vectors each (below that faiss warns), a
    # power of two: 2,048 for the whole Wikipedia, 512 for bench_search's 20,000 passages
    nlist = 2 ** int(np.log2(max(1.0, min(4 * np.sqrt(count), count / 39))))
    return {"queries": 3610, "k": 100, "nlist": nlist, "pq": "PQ48np", "train_sample": min(count, 64 * nlist),
            "ef": (64, 128, 256, 512), "nprobe": (8, 16, 32, 64, 128)}


def factories(size: dict[str, object]) -> dict[str, tuple[str, tuple[int, ...]]]:
    """faiss factory → (its search parameter, the values tried); Flat first: the reference of recall."""
    nlist = size["nlist"]
    return {"Flat": ("", ()), "HNSW32": ("efSearch", size["ef"]), f"IVF{nlist},Flat": ("nprobe", size["nprobe"]),
            f"IVF{nlist},{size['pq']}": ("nprobe", size["nprobe"])}


def tiny_embeddings(out: Path) -> Path:
    """The first 24 wiki passages encoded by MiniLM into shards of 10, as ``seedr encode`` writes them."""
    from seedr.retrieval.encode import TextEncoder, encode_corpus_to_shards

    return encode_corpus_to_shards(TextEncoder("minilm"), itertools.islice(iter_wiki_passages(), 24), out,
                                   shard_size=10, show_progress=False)


def build_child(embeddings: str, factory: str, train_sample: int | None, out: str, threads: int) -> float:
    """``seedr index``'s work: load the folder (memory-mapped shards) and build; returns seconds."""
    import faiss

    from seedr.retrieval.embeddings import load_embeddings
    from seedr.retrieval.faiss_index import DenseIndex

    faiss.omp_set_num_threads(threads)
    start = time.perf_counter()
    ids, vectors = load_embeddings(embeddings)
    index = DenseIndex.build(vectors, ids, factory=factory, train_sample=train_sample, gpu=False)
    seconds = time.perf_counter() - start
    index.save(out)
    return seconds


def search_child(index_dir: str, queries: str, k: int, parameter: str, values: tuple[int, ...], mmap: bool,
                 threads: int) -> tuple[list[tuple[int | None, float, np.ndarray]], dict[str, float]]:
    """Load an index (read or memory-mapped) and time its faiss search at each parameter value:
    ``[(value, seconds, positions)]`` and the process's resident memory after the last search."""
    import faiss

    from seedr.retrieval.faiss_index import DenseIndex

    faiss.omp_set_num_threads(threads)
    index = DenseIndex.load(index_dir, mmap=mmap)
    vectors = np.load(queries)
    results = []
    for value in values or (None,):
        if value is not None:
            index.set_search_parameters(**{parameter: value})
        seconds, (_, positions) = best_of(3, lambda: index.index.search(vectors, k))
        results.append((value, seconds, positions))
    return results, process_memory_mib("VmHWM", "RssAnon")


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.iterdir() if path.is_file())


GOALS = ("an HNSW or IVF setting with R@100 ≥ 0.99 of Flat at ≥ 5× Flat's queries/s",
         "Flat index building at peak memory ≤ 2× the vectors")


def not_measured() -> Section:
    """The section of a full run given no encode folder: the goals, not measured, and how to measure them."""
    section = Section("index_scale", "8. Dense indexes over a whole corpus", [
        f"not measured: {EMBEDDINGS_VARIABLE} names no `seedr encode` folder. The whole shared Wikipedia's "
        "(658,860 passages, hours of encoding on a CPU) is made by docs/results/whole-wikipedia/run.sh, which "
        "then runs this benchmark on it"])
    section.goals += [Goal(goal, "no encode folder given", None) for goal in GOALS]
    return section


def run(tiny: bool, threads: int) -> Section:
    from seedr.retrieval.embeddings import read_manifest
    from seedr.retrieval.encode import TextEncoder

    with tempfile.TemporaryDirectory(prefix="seedr-bench-index-") as scratch:
        scratch = Path(scratch)
        if tiny:
            embeddings = tiny_embeddings(scratch / "embeddings")
        elif os.environ.get(EMBEDDINGS_VARIABLE):
            embeddings = Path(os.environ[EMBEDDINGS_VARIABLE])
        else:
            return not_measured()
        manifest = read_manifest(embeddings)
        count, dim = manifest["count"], manifest["dim"]
        vector_mib = count * dim * 4 / 2**20
        size = sizes(tiny, count)
        k = size["k"]
        questions = nq_questions(size["queries"])
        queries = scratch / "queries.npy"
        np.save(queries, TextEncoder.from_settings(manifest["encoder"]).encode_queries(questions))

        built, searched, rows = {}, {}, []
        for label, (parameter, values) in factories(size).items():
            out = scratch / label.replace(",", "-")
            seconds, peak = in_fresh_process(build_child, str(embeddings), label, size["train_sample"], str(out),
                                             threads)
            built[label] = {"seconds": seconds, "peak_rss_mib": peak, "disk_bytes": folder_bytes(out), "folder": out}
            results, memory = in_fresh_process(search_child, str(out), str(queries), k, parameter, values, False,
                                               threads)[0]
            searched[label] = {"results": results, "memory": memory}
        exact = searched["Flat"]["results"][0][2]
        flat_qps = len(questions) / searched["Flat"]["results"][0][1]
        measured = []
        for label, (parameter, _) in factories(size).items():
            for value, seconds, positions in searched[label]["results"]:
                setting = label if value is None else f"{label} {parameter} {value}"
                qps, r = len(questions) / seconds, recall(positions, exact)
                measured.append((setting, qps, r))
                rows.append([setting, number(qps), ratio(qps / flat_qps), f"{r:.4f}"])
        largest = max(built, key=lambda label: built[label]["disk_bytes"])
        parameter, values = factories(size)[largest]
        (mapped, mapped_memory), mapped_peak = in_fresh_process(search_child, str(built[largest]["folder"]),
                                                                str(queries), k, parameter, values[-1:], True,
                                                                threads)
        mapped_qps = len(questions) / mapped[0][1]
        mapped_same = bool(np.array_equal(mapped[0][2], searched[largest]["results"][-1][2]))

    good = [(setting, qps, r) for setting, qps, r in measured if setting != "Flat" and r >= 0.99 and qps >= 5 * flat_qps]
    best = max(good, key=lambda item: item[1]) if good else None
    section = Section("index_scale", "8. Dense indexes over a whole corpus", [
        (f"embeddings: {embeddings} ({count:,} vectors of {dim} dimensions, float32: {number(vector_mib)} MiB; "
         f"encoder {'/'.join(Path(manifest['encoder']['model']).parts[-2:])}, {manifest['encoder'].get('pooling')} pooling)"),
        (f"queries: {len(questions):,} NQ-open dev questions, encoded once with the folder's encoder; top {k}; "
         f"faiss, {threads} threads, all queries in one search call, best of 3; recall against Flat's exact top {k}"),
        (f"IVF: {size['nlist']} lists trained on {size['train_sample'] or count:,} vectors (seed 0); "
         f"{size['pq']}: product quantisation without polysemous training; each build and each index's searches in a fresh process (VmHWM: interpreter, imports, "
         "ids and index included)"),
    ])
    section.tables.append(Table("Building (as `seedr index`)", ["index", "build s", "peak RSS MiB",
                                                               "× the vectors", "size on disk MiB"],
                                [[label, number(value["seconds"]), number(value["peak_rss_mib"]),
                                  ratio(value["peak_rss_mib"] / vector_mib), number(value["disk_bytes"] / 2**20)]
                                 for label, value in built.items()]))
    section.tables.append(Table(f"Searching (faiss search alone; R@{k} relative to Flat)",
                                ["setting", "queries/s", "× Flat", f"R@{k} vs Flat"], rows))
    section.tables.append(Table(f"Memory-mapped search of the largest index ({largest}, as `seedr search --mmap`)",
                                ["setting", "queries/s", "peak RSS MiB", "anonymous RSS MiB at the end",
                                 "loaded: peak RSS MiB", "same results as loaded"],
                                [[f"{largest}" + (f" {parameter} {values[-1]}" if values else ""), number(mapped_qps),
                                  number(mapped_peak), number(mapped_memory["RssAnon"]),
                                  number(searched[largest]["memory"]["VmHWM"]), "yes" if mapped_same else "no"]]))
    section.goals.append(Goal(f"{GOALS[0].replace('R@100', f'R@{k}')} ({count:,} vectors)",
                              f"{best[0]}: R@{k} {best[2]:.4f} at {ratio(best[1] / flat_qps)}" if best
                              else "no setting tried reaches both", best is not None))
    flat_peak = built["Flat"]["peak_rss_mib"]
    section.goals.append(Goal(f"{GOALS[1]} ({count:,} vectors)",
                              f"{number(flat_peak)} MiB against {number(vector_mib)} MiB "
                              f"({ratio(flat_peak / vector_mib)})", flat_peak <= 2 * vector_mib))
    section.data = {"embeddings": str(embeddings), "count": count, "dim": dim, "k": k, "queries": len(questions),
                    "build": {label: {key: value for key, value in entry.items() if key != "folder"}
                              for label, entry in built.items()},
                    "search": [{"setting": setting, "queries_per_second": qps, "recall_vs_flat": r}
                               for setting, qps, r in measured],
                    "memory_mapped": {"index": largest, "queries_per_second": mapped_qps, "peak_rss_mib": mapped_peak,
                                      "anonymous_rss_mib": mapped_memory["RssAnon"], "same_results": mapped_same}}
    return section


if __name__ == "__main__":
    main(run, __doc__.split("\n\n")[0])
