"""GPU pack, job ``throughput``: seedr's pre-training steps against a plain Hugging Face loop on equal work,
and the training rates of the seedr base's shape that ``python gpu/pack.py plan`` sizes the later jobs with.

1. BERT-base at 512 tokens in bf16, on the same packed sequences of real Wikipedia text (shard 00 of
   ``../shared/data/wiki``, tokenised with the seedr base's vocabulary: 8,000 WordPiece tokens, where the
   paper has 32,768 — the FLOP counts use the vocabulary the models have): the plain loop
   (``BertForMaskedLM`` + AdamW on batches masked in advance), seedr's MLM, SEED-Encoder's weak decoder
   (span 2) and its strong one (span all), each ``seedr pretrain``'s ``Trainer`` (``bench/bench_pretrain.py``:
   ``hf_loop``, ``seedr_objective``), each in a fresh process. Equal work against equal work: seedr's MLM
   step against the plain loop's MLM step on the same batches; SEED's cost is its own ratio over seedr's
   MLM, set beside its FLOP ratio, never against the plain loop (it does more).
2. The seedr base's shape (``models/seedr-base``: 4 layers × 256, BERT-mini) at 64 and 128 tokens, batch
   256 as the experiments' gpu scale has it, for the objectives the experiment jobs pre-train (MLM, SEED,
   CPDAE, ICT+BFS+WLP's two towers on ICT pairs): tokens/s and FLOP/s in the measure of
   ``seedr.experiments.sizing`` (``multiply_adds_per_example`` × 2 × 3), recorded as ``seedr_base``.

Each system's timed steps fill ``SECONDS`` (``MINI_SECONDS`` for the base's shape), sized from a short
calibration (``StepClock``); each step is split by hooks on the model and the optimizer into forward
(+ loss), backward (+ clipping), optimizer and the rest (batch fetch and collation, ``zero_grad``,
schedule): the job times the phases around seedr's own ``Trainer`` and the plain loop, with no hook inside
seedr. MFU = the analytic FLOPs of a step (``bench/flops.py``: matrix products only, so a lower bound; the
plain loop's head runs at every position and is counted so) × steps/s, against the card's datasheet bf16
dense rate (``DATASHEET``) and against the bf16 rate of an 8192³ product measured in the same run.

Goal (the GPU pack's first job): seedr's MLM step no slower than the plain loop's on the same work
(≥ 1.0×) and SEED-Encoder's at ≥ 40% MFU of the datasheet rate. ``--tiny`` runs the same code at a toy size
on the CPU (in float32), in seconds, so that the job cannot rot between leases; its numbers mean nothing.

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
from bench_pretrain import PHASES, Setting, StepClock, hf_loop, packed_sequences, seedr_objective  # noqa: E402
from common import in_fresh_process, wiki_passages  # noqa: E402
from partial import save_partial  # noqa: E402 (gpu/jobs/, the script's folder)

#: The goal of the job, as the GPU pack's queue states it.
GOAL_MFU, GOAL_MLM_OVER_LOOP = 0.40, 1.0
#: The systems timed at BERT-base, each with the FLOP count its step does (``flops.objective_step``).
SYSTEMS = {"HF loop (BertForMaskedLM)": "hf", "seedr mlm": "mlm", "seedr seed (span 2)": "seed",
           "seedr seed (span all: strong decoder)": "seed-all"}
#: The objectives the experiment jobs pre-train, with the options they run at, timed at the seedr base's shape.
MINI_OBJECTIVES = {"mlm": {}, "seed": {"decoder_layers": 3, "attention_span": 2}, "cpdae": {},
                   "ict_bfs_wlp": {"query_max_length": 64}}
MINI_LENGTHS = (64, 128)
#: Seconds of timed steps per system (after a calibration inside them), on the GPU and for ``--tiny``.
SECONDS, MINI_SECONDS, TINY_SECONDS = 30.0, 10.0, 0.3
#: About what a fresh process spends before its timed steps on the H200 (imports, model, warm-up), for
#: the expected total the job prints (a guess until a lease's log says otherwise).
STARTUP_SECONDS = 20.0
#: Dense bf16 tensor-core rates from the vendors' datasheets (NVIDIA H200 and H100 SXM: 1,979 TFLOP/s
#: "with sparsity", half of it dense), by a word of the device's name.
DATASHEET = {"H200": 989e12, "H100": 989e12}


def setting(tiny: bool) -> Setting:
    if tiny:
        return Setting("tiny", 1, 32, 2, 2, 32, 1, 0, 1)
    return Setting("BERT-base", 12, 768, 12, 32, 512, 3, 0, 1)


def mini_setting(tiny: bool, length: int) -> Setting:
    """The seedr base's shape (``models/seedr-base/config.json``) at ``length`` tokens."""
    if tiny:
        return Setting("seedr-base (tiny)", 1, 32, 2, 2, length // 4, 1, 0, 1)
    return Setting("seedr-base", 4, 256, 4, 256, length, 3, 0, 1)


def matmul_rate(tiny: bool) -> float:
    """FLOP/s of square products in the job's precision (bf16 on the GPU; float32 for ``--tiny``)."""
    device = "cpu" if tiny else "cuda"
    dtype = torch.float32 if tiny else torch.bfloat16
    size = 256 if tiny else 8192
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    for _ in range(3):  # warm-up: kernels chosen, clocks up
        torch.matmul(a, b)
    if not tiny:
        torch.cuda.synchronize()
    repeats = 3 if tiny else 20
    start = time.perf_counter()
    for _ in range(repeats):
        torch.matmul(a, b)
    if not tiny:
        torch.cuda.synchronize()
    return flops.matmul(size, size, size) * repeats / (time.perf_counter() - start)


def timed(clock: StepClock, rate: float) -> dict:
    return {"tokens_per_second": rate, "timed_steps": clock.timed_steps, "timed_seconds": clock.timed_seconds,
            "phases_seconds_per_step": clock.breakdown()}


def run_system(name: str, shape: Setting, examples: list[list[int]], tiny: bool) -> dict:
    """One BERT-base system's rate and step phases (in the fresh process this is called in)."""
    from seedr.modeling.encoder import load_tokenizer

    clock = StepClock(shape.warmup, seconds=TINY_SECONDS if tiny else SECONDS, phases=True)
    precision = "no" if tiny else "bf16"
    if name.startswith("HF loop"):
        rate = hf_loop(shape, examples, load_tokenizer("seedr-base"), precision, "cpu" if tiny else "cuda", clock)
    else:
        objective = "mlm" if name == "seedr mlm" else "seed"
        options = {} if objective == "mlm" else {"attention_span": "all" if "all" in name else 2}
        rate = seedr_objective(objective, options, shape, examples, precision, "seedr-base", clock)
    return timed(clock, rate)


def ict_pairs(count: int) -> list:
    """``count`` ICT pairs of Wikipedia passages (a passage's first words as the query, the passage as the
    document), long enough to fill both towers' lengths."""
    from seedr.objectives.pair_tasks import Pair

    return [Pair(query=" ".join(passage.text.split()[:40]), document=passage.text, title=passage.title or "",
                 source={"task": "ict", "article_id": str(index), "title": passage.title or ""})
            for index, passage in enumerate(wiki_passages(count))]


def seedr_base_rates(tiny: bool) -> dict:
    """Tokens/s and FLOP/s (``multiply_adds_per_example`` × 6, sizing's measure) of every ``MINI_OBJECTIVES``
    at every ``MINI_LENGTHS`` at the seedr base's shape (in the fresh process this is called in)."""
    from seedr.config.loading import from_dict
    from seedr.modeling.encoder import load_tokenizer
    from seedr.modeling.folders import EncoderShape
    from seedr.objectives import OBJECTIVES

    tokenizer = load_tokenizer("seedr-base")
    rates: dict[str, dict[str, dict]] = {}
    for length in MINI_LENGTHS:
        shape = mini_setting(tiny, length)
        count = shape.batch * 16  # taken again in turn, epoch after epoch
        texts = packed_sequences(tokenizer, count, shape.length)
        pairs = ict_pairs(count)
        encoder = EncoderShape(shape.layers, shape.hidden, 4 * shape.hidden, len(tokenizer))
        for objective, options in MINI_OBJECTIVES.items():
            options = {**options, "document_max_length": shape.length} if objective == "ict_bfs_wlp" else options
            clock = StepClock(shape.warmup, seconds=TINY_SECONDS if tiny else MINI_SECONDS, phases=True)
            rate = seedr_objective(objective, options, shape, pairs if objective == "ict_bfs_wlp" else texts,
                                   "no" if tiny else "bf16", "seedr-base", clock)
            declared = from_dict(OBJECTIVES.get(objective).config_class, options, "throughput")
            per_example = OBJECTIVES.get(objective).multiply_adds_per_example(declared, shape.length, encoder,
                                                                              batch_size=shape.batch)
            rates.setdefault(objective, {})[str(length)] = {
                **timed(clock, rate), "batch": shape.batch, "tokens": shape.length,
                "flops_per_second": 6.0 * per_example * rate / shape.length}
    return rates


def expected_seconds() -> float:
    """What the job should take on the GPU: each fresh process's start-up and timed steps (the calibration
    is inside them); within the 9 minutes of a command."""
    return (len(SYSTEMS) * (STARTUP_SECONDS + SECONDS) + STARTUP_SECONDS
            + len(MINI_OBJECTIVES) * len(MINI_LENGTHS) * (STARTUP_SECONDS / 4 + MINI_SECONDS))


def limit(breakdown: dict[str, float]) -> str:
    """The phase that takes most of a step, and its share."""
    total = sum(breakdown.values()) or 1.0
    phase = max(breakdown, key=breakdown.get)
    return f"{phase} ({breakdown[phase] / total:.0%})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tiny", action="store_true", help="a toy size on the CPU, to check that the job runs")
    args = parser.parse_args()
    from seedr.modeling.encoder import load_tokenizer

    if not args.tiny and not torch.cuda.is_available():
        raise SystemExit("throughput: no GPU here (--tiny runs it on the CPU at a toy size)")
    began = time.perf_counter()
    print(f"throughput: about {expected_seconds() / 60:.1f} minutes expected on the GPU", flush=True)
    tokenizer = load_tokenizer("seedr-base")
    shape = setting(args.tiny)
    examples = packed_sequences(tokenizer, shape.batch * 16, shape.length)  # taken again in turn
    peak = matmul_rate(args.tiny)
    device = torch.cuda.get_device_name() if not args.tiny else "cpu (--tiny)"
    datasheet = next((rate for word, rate in DATASHEET.items() if word in device), None)
    args.out.mkdir(parents=True, exist_ok=True)
    measured: dict[str, dict] = {}
    for name in SYSTEMS:  # each unit's figures written as it ends: a lease cut short returns what it measured
        measured[name] = in_fresh_process(run_system, name, shape, examples, args.tiny)[0]
        save_partial(args.out, {"systems": measured, "device": device, "tiny": args.tiny})
    mini = in_fresh_process(seedr_base_rates, args.tiny)[0]
    model = flops.Shape(shape.layers, shape.hidden, 4 * shape.hidden, len(tokenizer), shape.batch, shape.length)
    tokens_per_step = shape.batch * shape.length
    rows = {}
    for name, kind in SYSTEMS.items():
        step_flops = flops.objective_step(kind.removesuffix("-all"), model, span=None if kind.endswith("-all") else 2)
        achieved = step_flops * measured[name]["tokens_per_second"] / tokens_per_step
        rows[name] = {**measured[name], "step_flops": step_flops, "mfu": achieved / peak,
                      "mfu_datasheet": achieved / datasheet if datasheet else None}
    loop, mlm, seed = rows["HF loop (BertForMaskedLM)"], rows["seedr mlm"], rows["seedr seed (span 2)"]
    mlm_over_loop = mlm["tokens_per_second"] / loop["tokens_per_second"]
    seed_cost = mlm["tokens_per_second"] / seed["tokens_per_second"]
    seed_flops = seed["step_flops"] / mlm["step_flops"]
    seed_mfu = seed["mfu_datasheet"] if datasheet else seed["mfu"]
    met = mlm_over_loop >= GOAL_MLM_OVER_LOOP and seed_mfu >= GOAL_MFU
    seconds = time.perf_counter() - began
    results = {"job": "throughput", "device": device, "tiny": args.tiny,
               "precision": "float32" if args.tiny else "bf16", "setting": shape.__dict__,
               "vocabulary": len(tokenizer), "matmul_flops_per_second": peak, "datasheet_flops_per_second": datasheet,
               "systems": rows, "seedr_base": mini,
               "seed_over_mlm": {"cost_ratio": seed_cost, "flop_ratio": seed_flops},
               "goal": {"mlm_over_hf_loop": GOAL_MLM_OVER_LOOP, "seed_mfu": GOAL_MFU, "met": met,
                        "measured_mlm_over_hf_loop": mlm_over_loop, "measured_seed_mfu": seed_mfu},
               "seconds": {"expected_on_the_gpu": expected_seconds(), "taken": seconds},
               "versions": {"torch": torch.__version__, "cuda": torch.version.cuda}}
    save_partial(args.out, {**results, "complete": True})
    rate_note = (f"datasheet's dense bf16 rate, {datasheet / 1e12:.0f} TFLOP/s (NVIDIA's H200/H100 SXM datasheets: "
                 "1,979 with sparsity)," if datasheet else "datasheet rate (none known for this device)")
    stamps = "time.perf_counter" if args.tiny else "CUDA events"
    lines = [f"# Pre-training throughput on {device}", "",
             f"BERT shape {shape.layers} layers × {shape.hidden} hidden, batch {shape.batch} × {shape.length} "
             f"tokens, {results['precision']}, vocabulary {len(tokenizer):,}; timed steps filling ≥ "
             f"{TINY_SECONDS if args.tiny else SECONDS:g} s per system after {shape.warmup} warm-up; MFU against "
             f"the {rate_note} and against the matrix-product rate measured here: {peak / 1e12:.1f} TFLOP/s. Phases "
             f"timed by hooks on the model and optimizer around seedr's Trainer and the plain loop ({stamps}).", "",
             "| system | tokens/s | timed | MFU (datasheet) | MFU (measured peak) | " + " | ".join(PHASES)
             + " | limited by |", "|---|---:|---:|---:|---:|" + "---:|" * len(PHASES) + "---|"]
    for name, row in rows.items():
        phases = row["phases_seconds_per_step"]
        sheet = f"{row['mfu_datasheet']:.1%}" if row["mfu_datasheet"] is not None else "–"
        lines.append(f"| {name} | {row['tokens_per_second']:,.0f} | {row['timed_steps']} steps, "
                     f"{row['timed_seconds']:.1f} s | {sheet} | {row['mfu']:.1%} | "
                     + " | ".join(f"{phases[phase] * 1e3:.1f} ms" for phase in PHASES) + f" | {limit(phases)} |")
    lines += ["", f"Goal: seedr mlm ≥ {GOAL_MLM_OVER_LOOP}× the plain loop on the same work, and seedr seed (span "
              f"2) at ≥ {GOAL_MFU:.0%} MFU{' (datasheet)' if datasheet else ' (measured peak: no datasheet rate)'}: "
              f"{mlm_over_loop:.2f}× and {seed_mfu:.1%} — {'met' if met else 'MISSED'}. SEED (span 2) costs "
              f"{seed_cost:.2f}× seedr mlm's step for {seed_flops:.2f}× its FLOPs.", "",
              "## The seedr base's shape (what `python gpu/pack.py plan` sizes the experiment jobs with)", "",
              "| objective | tokens | batch | tokens/s | TFLOP/s (sizing's measure) | limited by |",
              "|---|---:|---:|---:|---:|---|"]
    lines += [f"| {objective} | {length} | {row['batch']} | {row['tokens_per_second']:,.0f} | "
              f"{row['flops_per_second'] / 1e12:.2f} | {limit(row['phases_seconds_per_step'])} |"
              for objective, by_length in mini.items() for length, row in by_length.items()]
    lines += ["", f"Job: {seconds:.0f} s ({expected_seconds():.0f} s expected on the GPU)."]
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
