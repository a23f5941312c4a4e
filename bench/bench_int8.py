"""Encoding in int8: ONNX Runtime's dynamic int8 quantisation against seedr's own encoder, speed and retrieval.

The model is the offline all-MiniLM-L6-v2 (mean pooling + normalisation, at most 256 tokens), the data
the first 20,000 DPR-style 100-word passages of ``../shared/data/wiki`` (their text alone, as the
encoding benchmark) and NQ-open's dev questions. Two ways to encode them:

- ``seedr``: ``TextEncoder`` at seedr's default precision for this machine (``compute_dtype: auto``:
  bf16 autocast where the CPU computes bf16 natively, float32 elsewhere; the table says which);
- ``int8``: the same transformer exported to ONNX (``torch.onnx.export``), its weights quantised to int8
  per output channel and its activations per batch at run time
  (``onnxruntime.quantization.quantize_dynamic``), run by ONNX Runtime's CPU provider on as many threads;
  the same tokenisation (sorted by length, padded per batch), mean pooling and normalisation.
  sentence-transformers' own ONNX backend is not used: it needs optimum-onnx, which requires
  transformers < 5.

Both are timed on the same first 2,000 passages after a warm-up batch (the export and the quantisation
are timed apart); int8 then encodes the rest untimed, and seedr's vectors of all the passages are those
the search benchmark uses (``common.wiki_embeddings``: seedr's encoder at its default precision for the
machine, computed once per run), which saved encoding the 20,000 passages again in float32 (12 minutes
on the 2-core CPU; the int8 run of 2026-11-26 timed both on all 20,000). Both sets of vectors are
searched exactly (inner product). Reported:
passages per second, Top-20 and Top-100 answer coverage of the questions over these passages (DPR's
string match), and int8's R@100: the share of seedr's exact top 100 that int8's top 100 keeps. The goal:
adopt int8 as an option if it is at least 1.5× faster with Top-20 coverage within 0.5 points and R@100
at least 0.995.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from common import NQ_OPEN, Goal, Section, Table, main, number, ratio, wiki_embeddings, wiki_passages

INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def sizes(tiny: bool) -> dict[str, int]:
    if tiny:
        return {"passages": 32, "timed": 16, "questions": 8, "batch": 8}
    return {"passages": 20000, "timed": 2000, "questions": 3610, "batch": 64}


def export_int8(model: torch.nn.Module, tokenizer, folder: Path) -> tuple[Path, float, float]:
    """The transformer as an ONNX graph of its last hidden states, then its int8 copy; the seconds each took."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    class LastHiddenState(torch.nn.Module):
        def __init__(self, encoder: torch.nn.Module) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                token_type_ids=token_type_ids).last_hidden_state

    sample = tokenizer(["a short text", "and a somewhat longer second one"], padding=True, return_tensors="pt")
    length = torch.export.Dim("length", max=model.config.max_position_embeddings)
    batch = torch.export.Dim("batch")
    started = time.perf_counter()
    torch.onnx.export(LastHiddenState(model).eval(), tuple(sample[name] for name in INPUTS), folder / "fp32.onnx",
                      input_names=list(INPUTS), output_names=["last_hidden_state"], dynamo=True,
                      dynamic_shapes={name: {0: batch, 1: length} for name in INPUTS})
    exported = time.perf_counter() - started
    started = time.perf_counter()
    quantize_dynamic(folder / "fp32.onnx", folder / "int8.onnx", weight_type=QuantType.QInt8, per_channel=True)
    return folder / "int8.onnx", exported, time.perf_counter() - started


def onnx_encode(session, tokenizer, texts: list[str], max_length: int, batch: int) -> np.ndarray:
    """Mean-pooled, normalised vectors of ``texts`` from an ONNX Runtime session of the transformer,
    batched as seedr batches (sorted by token count, padded per batch), with a progress bar."""
    from tqdm.auto import tqdm

    encoded = tokenizer(texts, truncation=True, max_length=max_length)
    order = np.argsort([-len(ids) for ids in encoded["input_ids"]], kind="stable")
    vectors = np.empty((len(texts), 0), dtype=np.float32)
    for start in tqdm(range(0, len(texts), batch), desc="int8 encode", unit="batch"):
        rows = order[start:start + batch]
        padded = tokenizer.pad({name: [encoded[name][row] for row in rows] for name in INPUTS}, return_tensors="np")
        hidden = session.run(None, {name: padded[name].astype(np.int64) for name in INPUTS})[0]
        mask = padded["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(1) / mask.sum(1)
        if vectors.shape[1] == 0:
            vectors = np.empty((len(texts), pooled.shape[1]), dtype=np.float32)
        vectors[rows] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    return vectors


def top_k(questions: np.ndarray, passages: np.ndarray, k: int) -> np.ndarray:
    """Indices of each question's ``k`` best passages by inner product, best first (exact search)."""
    k = min(k, len(passages))
    ranked = []
    for start in range(0, len(questions), 512):
        scores = questions[start:start + 512] @ passages.T
        best = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(scores, best, axis=1), axis=1, kind="stable")
        ranked.append(np.take_along_axis(best, order, axis=1))
    return np.concatenate(ranked)


def coverage(ranked: np.ndarray, texts: list[str], answers: list[list[str]], ks: tuple[int, ...]) -> dict[str, float]:
    """Answer coverage at each k (``seedr.evaluation.qa_coverage.has_answer``, DPR's match)."""
    from seedr.evaluation.qa_coverage import has_answer

    first = []
    for row, question_answers in zip(ranked, answers, strict=True):
        first.append(next((rank for rank, index in enumerate(row, 1) if has_answer(question_answers, texts[index])),
                          None))
    return {f"Top-{k}": float(np.mean([rank is not None and rank <= k for rank in first])) for k in ks}


def run(tiny: bool, threads: int) -> Section:
    import onnxruntime

    from seedr.data.qa import read_nq_open
    from seedr.retrieval.encode import TextEncoder

    size = sizes(tiny)
    texts = [passage.text for passage in wiki_passages(size["passages"])]
    examples = read_nq_open(next(NQ_OPEN.glob("*.jsonl*")))[:size["questions"]]
    questions, answers = [example.question for example in examples], [list(example.answers) for example in examples]
    encoder = TextEncoder("minilm", device="cpu", dtype="auto")
    precision = str(encoder.autocast_dtype or torch.float32).removeprefix("torch.")
    batch = size["batch"]

    with tempfile.TemporaryDirectory(prefix="seedr-int8-") as folder:
        path, export_seconds, quantize_seconds = export_int8(encoder.model, encoder.tokenizer, Path(folder))
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

        def int8(chunk: list[str]) -> np.ndarray:
            return onnx_encode(session, encoder.tokenizer, chunk, encoder.max_length, batch)

        def seedr(chunk: list[str]) -> np.ndarray:
            return encoder.encode(chunk, batch, show_progress=True)

        timed, rates, timed_vectors = texts[:size["timed"]], {}, {}
        for name, encode in (("seedr", seedr), ("int8", int8)):
            encode(texts[:batch])  # warm-up
            started = time.perf_counter()
            timed_vectors[name] = encode(timed)
            rates[name] = len(timed) / (time.perf_counter() - started)
        vectors = {"seedr": (wiki_embeddings(len(texts)), seedr(questions)),
                   "int8": (np.concatenate([timed_vectors["int8"], int8(texts[len(timed):])]), int8(questions))}
        if (vectors["seedr"][0][:len(timed)] * timed_vectors["seedr"]).sum(1).min() < 0.99:  # unit vectors
            raise SystemExit("the search benchmark's passage vectors are not seedr's encoder's")

    cosine = (vectors["seedr"][0] * vectors["int8"][0]).sum(1)
    ranked = {name: top_k(questions_vectors, passage_vectors, 100)
              for name, (passage_vectors, questions_vectors) in vectors.items()}
    covered = {name: coverage(ranked[name], texts, answers, (20, 100)) for name in ranked}
    kept = float(np.mean([len(set(a) & set(b)) / len(a) for a, b in zip(ranked["seedr"], ranked["int8"], strict=True)]))
    speedup = rates["int8"] / rates["seedr"]
    top20_gap = 100 * abs(covered["int8"]["Top-20"] - covered["seedr"]["Top-20"])

    section = Section("int8", "7. Encoding in int8 (ONNX Runtime)", [
        "model: all-MiniLM-L6-v2, mean pooling + normalisation, max 256 tokens, batch " + str(batch),
        (f"data: the first {len(texts):,} 100-word passages of ../shared/data/wiki (text only); the first "
         f"{len(questions):,} NQ-open dev questions; passages/s timed on the first {len(timed):,}"),
        (f"seedr: TextEncoder, compute_dtype auto = {precision} on this CPU; int8: ONNX Runtime "
         f"{onnxruntime.__version__}, weights int8 per channel, activations per batch; export "
         f"{export_seconds:.0f} s, quantisation {quantize_seconds:.0f} s (once per model)"),
        f"passage vectors' cosine, int8 against seedr: minimum {cosine.min():.4f}, mean {cosine.mean():.4f}",
    ])
    section.tables.append(Table("Passages per second and retrieval over the passages", [
        "encoder", "passages/s", "× seedr", "Top-20", "Top-100", "R@100 of seedr's top 100"], [
        [f"seedr ({precision})", number(rates["seedr"]), ratio(1.0), f"{covered['seedr']['Top-20']:.4f}",
         f"{covered['seedr']['Top-100']:.4f}", "1.0000"],
        ["ONNX Runtime int8", number(rates["int8"]), ratio(speedup), f"{covered['int8']['Top-20']:.4f}",
         f"{covered['int8']['Top-100']:.4f}", f"{kept:.4f}"]]))
    section.goals.append(Goal("int8 ≥ 1.5× seedr's encoder, Top-20 within 0.5 points, R@100 ≥ 0.995",
                              f"{ratio(speedup)}, Top-20 {top20_gap:.2f} points apart, R@100 {kept:.4f}",
                              speedup >= 1.5 and top20_gap <= 0.5 and kept >= 0.995))
    section.data = {"passages_per_second": rates, "precision": precision, "coverage": covered, "r_at_100": kept,
                    "cosine_min": float(cosine.min()), "cosine_mean": float(cosine.mean()),
                    "export_seconds": export_seconds, "quantize_seconds": quantize_seconds, "sizes": size}
    return section


if __name__ == "__main__":
    main(run, __doc__.split("\n\n")[0])
