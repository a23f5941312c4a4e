"""Search: faiss Flat against HNSW, IVF and IVF-PQ, and BM25 (bm25s), on the same real passages.

The corpus is the MiniLM embeddings (384 dimensions, normalised, inner product) of the wiki passages
the encoding benchmark encoded (seedr, bf16 autocast, float32 vectors); the queries are Natural
Questions open-domain dev questions (``../shared/data/nq-open``) encoded with the same model.
Indexes are built with seedr's ``DenseIndex.build`` (faiss factory strings; PQ with ``np``: no
polysemous training) and searched for the top 100 with the faiss index itself, all queries in one
call; queries/s is the best of three searches. Recall@100 is measured against Flat's exact top 100
(the share of Flat's documents the approximate index also returns). BM25 is seedr's ``BM25Index``
(bm25s, Lucene BM25, stemmed) over the passages' title and text: documents indexed per second, and
queries per second for seedr's search (every document scored, deterministic ties) and for bm25s'
own ``retrieve``.
"""

from __future__ import annotations

import time

import numpy as np
from common import (
    Goal,
    Section,
    Table,
    best_of,
    main,
    nq_questions,
    number,
    ratio,
    wiki_embeddings,
    wiki_passages,
)


def sizes(tiny: bool) -> dict[str, int]:
    if tiny:
        return {"passages": 24, "queries": 8, "nlist": 4, "pq": "PQ8x4np", "k": 10}
    return {"passages": 20000, "queries": 1000, "nlist": 512, "pq": "PQ48np", "k": 100}


def settings(size: dict[str, int]) -> list[tuple[str, str, dict[str, int]]]:
    """(label, factory, search parameters) for every index setting tried."""
    nlist, pq = size["nlist"], size["pq"]
    grid = [("Flat", "Flat", {})]
    grid += [(f"HNSW32 efSearch {ef}", "HNSW32", {"efSearch": ef}) for ef in (64, 128, 256, 512)]
    probes = [p for p in (4, 8, 16, 32, 64) if p <= nlist]
    grid += [(f"IVF{nlist},Flat nprobe {p}", f"IVF{nlist},Flat", {"nprobe": p}) for p in probes]
    grid += [(f"IVF{nlist},{pq} nprobe {p}", f"IVF{nlist},{pq}", {"nprobe": p}) for p in probes]
    grid += [(f"IVF{nlist},{pq},RFlat nprobe {p} (re-rank 4·k)", f"IVF{nlist},{pq},RFlat",
              {"nprobe": p, "k_factor_rf": 4}) for p in probes]
    return grid


def recall(found: np.ndarray, exact: np.ndarray) -> float:
    """Mean share of each query's exact top k that ``found`` also holds."""
    return float(np.mean([len(set(f) & set(e)) / len(e) for f, e in zip(found, exact)]))


def run(tiny: bool, threads: int) -> Section:
    import bm25s
    import faiss

    from seedr.hardware import native_bf16
    from seedr.retrieval.bm25 import BM25Index
    from seedr.retrieval.encode import TextEncoder
    from seedr.retrieval.faiss_index import DenseIndex

    size = sizes(tiny)
    k = size["k"]
    vectors = wiki_embeddings(size["passages"])
    passages = wiki_passages(size["passages"])
    ids = [passage.id for passage in passages]
    questions = nq_questions(size["queries"])
    queries = TextEncoder("minilm").encode(questions)

    indexes: dict[str, tuple[DenseIndex, float]] = {}
    rows, measured = [], []
    exact, flat_qps = None, None
    for label, factory, parameters in settings(size):
        if factory not in indexes:
            start = time.perf_counter()
            indexes[factory] = (DenseIndex.build(vectors, ids, factory=factory), time.perf_counter() - start)
        index, build_seconds = indexes[factory]
        if parameters:
            index.set_search_parameters(**parameters)
        seconds, (_, positions) = best_of(3, lambda index=index: index.index.search(queries, k))
        qps = len(queries) / seconds
        if exact is None:
            exact, flat_qps = positions, qps
        r = recall(positions, exact)
        measured.append((label, qps, r))
        size_bytes = len(faiss.serialize_index(index.index)) / len(ids)
        rows.append([label, number(build_seconds), number(size_bytes), number(qps), ratio(qps / flat_qps),
                     f"{r:.4f}"])

    good = [(label, qps, r) for label, qps, r in measured[1:] if r >= 0.99 and qps >= 5 * flat_qps]
    best = max(good, key=lambda item: item[1]) if good else None

    start = time.perf_counter()
    bm25 = BM25Index.build(passages)
    index_seconds = time.perf_counter() - start
    question_map = {str(i): question for i, question in enumerate(questions)}
    seedr_seconds, _ = best_of(1 if tiny else 2, lambda: bm25.search(question_map, k=k))
    tokens = bm25.tokenizer.tokenize(questions, update_vocab=False, return_as="ids", show_progress=False)
    raw_seconds, _ = best_of(1 if tiny else 2, lambda: bm25.retriever.retrieve(tokens, k=min(k, len(ids)),
                                                                                 show_progress=False, n_threads=threads))

    # the encoding benchmark's bf16 vectors where this CPU computes bf16 natively, else float32 (common.wiki_embeddings)
    vectors_precision = "bf16" if native_bf16("cpu") else "float32"
    section = Section("search", "5. Search", [
        (f"corpus: {len(ids):,} wiki passages encoded by seedr ({vectors_precision}), MiniLM, 384 dims, "
        f"inner product; queries: {len(questions):,} NQ-open dev questions; top {k}"),
        (f"faiss {faiss.__version__}, {threads} threads, all queries in one search call, best of 3; "
        "recall against Flat's exact top k"),
        f"bm25s {bm25s.__version__} through seedr's BM25Index (k1 0.9, b 0.4, Lucene, Snowball stemmer, title + text)",
    ])
    section.tables.append(Table(f"Dense indexes (Recall@{k} relative to Flat)",
                                ["index", "build s", "index bytes/passage", "queries/s", "× Flat",
                                 f"R@{k} vs Flat"], rows))
    section.tables.append(Table("BM25 (bm25s)", ["operation", "rate"], [
        ["index (documents/s)", number(len(ids) / index_seconds)],
        ["seedr BM25Index.search (queries/s)", number(len(questions) / seedr_seconds)],
        ["bm25s retrieve (queries/s)", number(len(questions) / raw_seconds)]]))
    section.goals.append(Goal(f"an HNSW or IVF setting with R@{k} ≥ 0.99 at ≥ 5× Flat's queries/s",
                              f"{best[0]}: R@{k} {best[2]:.4f} at {ratio(best[1] / flat_qps)}" if best
                              else "no setting tried reaches both", best is not None))
    section.data = {"passages": len(ids), "queries": len(questions), "k": k,
                    "dense": [{"index": label, "queries_per_second": qps, "recall_vs_flat": r}
                              for label, qps, r in measured],
                    "bm25": {"index_documents_per_second": len(ids) / index_seconds,
                             "seedr_queries_per_second": len(questions) / seedr_seconds,
                             "bm25s_queries_per_second": len(questions) / raw_seconds}}
    return section


if __name__ == "__main__":
    main(run, __doc__.split("\n\n")[0])
