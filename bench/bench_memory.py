"""Memory and scale: peak resident memory to encode and to index at three corpus sizes, and what
that projects to for MS MARCO's and DPR Wikipedia's passage collections.

Each measurement runs in a fresh Python process (peak ``VmHWM``: interpreter, imports and model
included, as a user's ``seedr encode`` / ``seedr index`` process would hold):

- encode: ``encode_corpus_to_shards`` — what ``seedr encode`` runs — of the first N wiki passages
  (streamed, title [SEP] text, MiniLM under bf16 autocast where this CPU computes bf16 natively, else in
  float32; float32 shards of 50,000 passages);
- index: ``DenseIndex.build`` — what ``seedr index`` runs — over the first N of the MiniLM embeddings
  of the wiki passages (memory-mapped, as ``load_embeddings`` maps a single shard): Flat (float32),
  SQfp16 (float16) and IVF-PQ.

The projection is arithmetic on these measurements, not a measurement: peak memory is fitted as
``a + b·N`` (least squares over the three sizes; for encoding N is capped at the shard size, since
``seedr encode`` holds one shard at a time) and evaluated at 8.8M and 21M passages; index size is the
measured bytes per passage × N; CPU time is N / the measured passages/s; GPU time scales that by this
CPU's measured matmul rate (at the precision it encoded in) over a GPU's datasheet bf16 rate, i.e. assumes
the GPU reaches the same fraction of its peak as this CPU did.
"""

from __future__ import annotations

import itertools
import tempfile
import time
from pathlib import Path

import numpy as np
from common import (
    Goal,
    Section,
    Table,
    embeddings_path,
    in_fresh_process,
    main,
    measures_bf16,
    number,
    wiki_embeddings,
)

#: Passages in the two collections the projection is for.
COLLECTIONS = {"MS MARCO passages": 8_841_823, "DPR Wikipedia (psgs_w100)": 21_015_324}
#: NVIDIA A100 SXM4 dense bf16 tensor-core rate (NVIDIA A100 datasheet), GFLOP/s.
GPU_NAME, GPU_BF16_GFLOPS = "A100 (312 TFLOP/s dense bf16, datasheet)", 312_000.0
SHARD_SIZE = 50_000
FACTORIES = {"float32 (Flat)": "Flat", "float16 (SQfp16)": "SQfp16"}


def sizes(tiny: bool) -> dict[str, object]:
    if tiny:
        return {"encode": [4, 6, 8], "index": [16, 20, 24], "pq": "IVF2,PQ8x4np", "batch": 4}
    return {"encode": [1000, 2000, 4000], "index": [5000, 10000, 20000], "pq": "IVF512,PQ48np", "batch": 64}


def encode_child(count: int, batch: int, threads: int, bf16: bool) -> float:
    """Encode the first ``count`` wiki passages into shards as ``seedr encode`` does (under bf16 autocast
    or in float32); returns seconds."""
    import torch
    from common import iter_wiki_passages

    from seedr.retrieval.encode import TextEncoder, encode_corpus_to_shards

    torch.set_num_threads(threads)
    encoder = TextEncoder("minilm", device="cpu", dtype="bfloat16" if bf16 else "float32")
    with tempfile.TemporaryDirectory(prefix="seedr-bench-") as out:
        start = time.perf_counter()
        encode_corpus_to_shards(encoder, itertools.islice(iter_wiki_passages(), count), out, shard_size=SHARD_SIZE,
                                batch_size=batch, show_progress=False)
        return time.perf_counter() - start


def index_child(path: str, count: int, factory: str, threads: int) -> float:
    """Build ``factory`` over the first ``count`` embeddings of ``path`` and save it, as ``seedr index``
    does (``faiss.write_index`` to the file: ``faiss.serialize_index`` would copy the whole index into
    memory and count it in the peak); returns its bytes per passage."""
    import faiss

    from seedr.retrieval.faiss_index import DenseIndex

    faiss.omp_set_num_threads(threads)
    vectors = np.load(path, mmap_mode="r")[:count]
    index = DenseIndex.build(vectors, [str(i) for i in range(count)], factory=factory)
    with tempfile.TemporaryDirectory(prefix="seedr-bench-index-") as out:
        return (index.save(Path(out) / "index") / "index.faiss").stat().st_size / count


def fit(counts: list[int], values: list[float]) -> tuple[float, float]:
    """Least-squares ``a + b·N`` through the measurements; where noise makes the slope negative
    (memory cannot shrink with the corpus), ``b = 0`` and ``a`` = the largest measurement."""
    slope, intercept = np.polyfit(np.array(counts, dtype=float), np.array(values, dtype=float), 1)
    if slope < 0:
        return float(max(values)), 0.0
    return float(intercept), float(slope)


def run(tiny: bool, threads: int) -> Section:
    import torch
    from bench_ceiling import matmul_rate

    size = sizes(tiny)
    factories = {**FACTORIES, f"PQ ({size['pq']})": size["pq"]}
    bf16 = measures_bf16(tiny)
    precision = "bf16 autocast" if bf16 else "float32 (this CPU has no native bf16)"
    encode = {count: in_fresh_process(encode_child, count, size["batch"], threads, bf16) for count in size["encode"]}
    largest = max(size["index"])
    dim = wiki_embeddings(largest).shape[1]  # computed by the encoding benchmark in a full run; kept on disk
    path = str(embeddings_path(largest))
    index = {(name, count): in_fresh_process(index_child, path, count, factory, threads)
             for name, factory in factories.items() for count in size["index"]}
    cpu_rate = matmul_rate(256 if tiny else 2048, torch.bfloat16 if bf16 else torch.float32)

    section = Section("memory", "6. Memory and scale", [
        ("peak RSS (VmHWM; ru_maxrss would carry the parent's peak) of a fresh process per measurement, forked "
         "from a server that has only imported the libraries: interpreter, imports and model included"),
        (f"encode: seedr's encode_corpus_to_shards, MiniLM, {precision}, batch {size['batch']}, title [SEP] text, "
        f"shards of {SHARD_SIZE:,}; index: DenseIndex.build over memory-mapped float32 MiniLM embeddings (384 dims)"),
        (f"measured {'bf16' if bf16 else 'float32'} matmul rate of this CPU: {number(cpu_rate)} GFLOP/s; "
         f"GPU: {GPU_NAME}"),
    ])
    section.tables.append(Table("Peak RSS to encode (MiB) and encoding rate", ["passages", "peak RSS MiB", "passages/s"],
                                [[f"{count:,}", number(rss), number(count / seconds)]
                                 for count, (seconds, rss) in encode.items()]))
    section.tables.append(Table("Peak RSS to index (MiB) and index size", ["index", "passages", "peak RSS MiB",
                                                                           "index bytes/passage"],
                                [[name, f"{count:,}", number(rss), number(per_passage)]
                                 for (name, count), (per_passage, rss) in index.items()]))

    encode_counts = list(encode)
    encode_a, encode_b = fit(encode_counts, [rss for _, rss in encode.values()])
    rate = encode_counts[-1] / encode[encode_counts[-1]][0]  # the largest run: least start-up overhead
    fits = {name: fit(size["index"], [index[name, count][1] for count in size["index"]]) for name in factories}
    per_passage = {name: index[name, largest][0] for name in factories}
    rows = []
    for collection, count in COLLECTIONS.items():
        cpu_hours = count / rate / 3600
        gpu_hours = cpu_hours * cpu_rate / GPU_BF16_GFLOPS
        row = [collection, f"{count:,}"]
        row += [f"{per_passage[name] * count / 2**30:.1f}" for name in factories]
        row += [f"{(fits[name][0] + fits[name][1] * count) / 1024:.1f}" for name in factories]
        row += [f"{(encode_a + encode_b * min(count, SHARD_SIZE)) / 1024:.2f}", number(cpu_hours), f"{gpu_hours:.2f}"]
        rows.append(row)
    section.tables.append(Table(
        "PROJECTION (arithmetic on the measurements above, not a measurement): MiniLM, 384 dimensions",
        ["collection", "passages", *[f"{name} index GiB" for name in factories],
         *[f"{name} peak RSS to index GiB" for name in factories], "peak RSS to encode GiB",
         "CPU hours to encode (this machine)", "GPU hours to encode"], rows))
    section.setup += [
        f"projection arithmetic: index GiB = N × the bytes/passage measured at {largest:,} passages; "
        "peak RSS to index = a + b·N fitted per index (" + "; ".join(f"{name}: {a:.0f} MiB + {b * 1024:.2f} KiB·N" for name, (a, b) in fits.items())
        + f"); peak RSS to encode = {encode_a:.0f} MiB + {encode_b * 1024:.2f} KiB·min(N, {SHARD_SIZE:,}); "
        f"CPU hours = N / {number(rate)} passages/s / 3600; GPU hours = CPU hours × {number(cpu_rate)} / "
        f"{GPU_BF16_GFLOPS:,.0f} (GFLOP/s: this CPU's at the precision it encoded in, the GPU's in bf16)",
        ("a BERT-base encoder (768 dimensions, the papers' models) doubles the float32/float16 index sizes and "
        "costs about 8× MiniLM's FLOPs per token"),
    ]
    # The goal: building an index costs at most twice the vectors it holds. Judged on the fitted
    # slope (memory per added vector), since the process's fixed ~55 MiB dwarfs 20,000 vectors' 29 MiB.
    vector_kib = dim * 4 / 1024
    flat_kib = fits["float32 (Flat)"][1] * 1024
    section.goals.append(Goal("index building: peak memory per vector ≤ 2× its float32 bytes (Flat, fitted slope)",
                              f"{flat_kib:.2f} KiB vs {vector_kib:.2f} KiB ({flat_kib / vector_kib:.2f}×)",
                              flat_kib <= 2 * vector_kib))
    section.data = {"encode": {str(c): {"seconds": s, "peak_rss_mib": r} for c, (s, r) in encode.items()},
                    "index": {f"{name} {count}": {"bytes_per_passage": per, "peak_rss_mib": rss}
                              for (name, count), (per, rss) in index.items()},
                    "cpu_matmul_gflops": cpu_rate, "cpu_precision": "bf16" if bf16 else "float32",
                    "gpu_bf16_gflops": GPU_BF16_GFLOPS,
                    "projection_rows": rows}
    return section


if __name__ == "__main__":
    main(run, __doc__.split("\n\n")[0])
