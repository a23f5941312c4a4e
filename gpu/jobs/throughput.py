"""GPU pack, job ``throughput``: MLM and SEED-Encoder pre-training steps of BERT-base at 512 tokens in bf16,
against a plain Hugging Face ``BertForMaskedLM`` loop on the same batches, with each system's model FLOP
utilisation (MFU) against the card's own bf16 matrix-product rate, measured in the same run.

The systems are ``bench/bench_pretrain.py``'s (``hf_loop``, ``seedr_objective``: seedr's ``Trainer`` as
``seedr pretrain`` runs it), each in a fresh process, on the same packed sequences of real Wikipedia text
(shard 00 of ``../shared/data/wiki``, tokenised with the seedr base's vocabulary: 8,000 WordPiece tokens,
where the paper has 32,768 — the FLOP counts use the vocabulary the models have). MFU = the analytic
FLOPs of a training step (``bench/flops.py``: matrix products only, so a lower bound; the HF loop's head
runs at every position and is counted so) × steps per second ÷ the bf16 rate of an 8192³ product.

Goal (the GPU pack's first job): seedr's SEED-Encoder step at ≥ 40% MFU and ≥ 1.3× the plain loop's
tokens/s. ``--tiny`` runs the same code at a toy size on the CPU (in float32), in seconds, so that the job
cannot rot between leases; its numbers mean nothing.

    python gpu/jobs/throughput.py --out OUT [--tiny]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import flops  # noqa: E402 (bench/ on the path first)
import torch  # noqa: E402
from bench_pretrain import Setting, hf_loop, packed_sequences, seedr_objective, synchronize  # noqa: E402
from common import in_fresh_process  # noqa: E402

#: The goal of the job, as the GPU pack's queue states it.
GOAL_MFU, GOAL_OVER_LOOP = 0.40, 1.3
#: The systems timed, each with the FLOP count its step does (``flops.objective_step``).
SYSTEMS = {"HF loop (BertForMaskedLM)": "hf", "seedr mlm": "mlm", "seedr seed (span 2)": "seed",
           "seedr seed (span all: strong decoder)": "seed-all"}


def setting(tiny: bool) -> Setting:
    if tiny:
        return Setting("tiny", 1, 32, 2, 2, 32, 1, 2, 1)
    return Setting("BERT-base", 12, 768, 12, 32, 512, 3, 10, 1)


def matmul_rate(tiny: bool) -> float:
    """FLOP/s of square products in the job's precision (bf16 on the GPU; float32 for ``--tiny``)."""
    device = "cpu" if tiny else "cuda"
    dtype = torch.float32 if tiny else torch.bfloat16
    size = 256 if tiny else 8192
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    for _ in range(3):  # warm-up: kernels chosen, clocks up
        torch.matmul(a, b)
    synchronize()
    repeats = 3 if tiny else 20
    start = time.perf_counter()
    for _ in range(repeats):
        torch.matmul(a, b)
    synchronize()
    return flops.matmul(size, size, size) * repeats / (time.perf_counter() - start)


def run_system(name: str, shape: Setting, examples: list[list[int]], tiny: bool) -> float:
    """Tokens/s of one system (in the fresh process this is called in)."""
    from seedr.modeling.encoder import load_tokenizer

    precision = "no" if tiny else "bf16"
    if name.startswith("HF loop"):
        return hf_loop(shape, examples, load_tokenizer("seedr-base"), precision, "cpu" if tiny else "cuda")
    objective = "mlm" if name == "seedr mlm" else "seed"
    options = {} if objective == "mlm" else {"attention_span": "all" if "all" in name else 2}
    return seedr_objective(objective, options, shape, examples, precision, tokenizer="seedr-base")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tiny", action="store_true", help="a toy size on the CPU, to check that the job runs")
    args = parser.parse_args()
    from seedr.modeling.encoder import load_tokenizer

    if not args.tiny and not torch.cuda.is_available():
        raise SystemExit("throughput: no GPU here (--tiny runs it on the CPU at a toy size)")
    tokenizer = load_tokenizer("seedr-base")
    shape = setting(args.tiny)
    examples = packed_sequences(tokenizer, shape.batch * (shape.total_steps + 1), shape.length)
    peak = matmul_rate(args.tiny)
    rates = {name: in_fresh_process(run_system, name, shape, examples, args.tiny)[0] for name in SYSTEMS}
    model = flops.Shape(shape.layers, shape.hidden, 4 * shape.hidden, len(tokenizer), shape.batch, shape.length)
    tokens_per_step = shape.batch * shape.length
    rows = {}
    for name, kind in SYSTEMS.items():
        step_flops = flops.objective_step(kind.removesuffix("-all"), model, span=None if kind.endswith("-all") else 2)
        rows[name] = {"tokens_per_second": rates[name], "step_flops": step_flops,
                      "mfu": step_flops * rates[name] / tokens_per_step / peak,
                      "over_hf_loop": rates[name] / rates["HF loop (BertForMaskedLM)"]}
    seed = rows["seedr seed (span 2)"]
    met = seed["mfu"] >= GOAL_MFU and seed["over_hf_loop"] >= GOAL_OVER_LOOP
    device = torch.cuda.get_device_name() if torch.cuda.is_available() and not args.tiny else "cpu (--tiny)"
    results = {"job": "throughput", "device": device, "tiny": args.tiny, "precision": "float32" if args.tiny else "bf16",
               "setting": shape.__dict__, "vocabulary": len(tokenizer), "matmul_flops_per_second": peak,
               "systems": rows, "goal": {"seed_mfu": GOAL_MFU, "seed_over_hf_loop": GOAL_OVER_LOOP, "met": met},
               "versions": {"torch": torch.__version__, "cuda": torch.version.cuda}}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=2))
    lines = [f"# Pre-training throughput on {device}", "",
             f"BERT shape {shape.layers} layers × {shape.hidden} hidden, batch {shape.batch} × {shape.length} tokens, "
             f"{results['precision']}, vocabulary {len(tokenizer):,}; {shape.steps} timed steps after {shape.warmup} "
             f"warm-up; matrix-product peak measured here: {peak / 1e12:.1f} TFLOP/s.", "",
             "| system | tokens/s | × HF loop | MFU |", "|---|---:|---:|---:|"]
    lines += [f"| {name} | {row['tokens_per_second']:,.0f} | {row['over_hf_loop']:.2f}× | {row['mfu']:.1%} |"
              for name, row in rows.items()]
    lines += ["", f"Goal: seedr seed (span 2) at ≥ {GOAL_MFU:.0%} MFU and ≥ {GOAL_OVER_LOOP}× the HF loop: "
              f"{seed['mfu']:.1%} and {seed['over_hf_loop']:.2f}× — {'met' if met else 'MISSED'}."]
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
