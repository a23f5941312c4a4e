"""The arithmetic ceiling: this machine's matrix-multiply rate, and the share of it seedr reaches.

Measures ``torch.matmul`` of two square matrices in float32 and bfloat16 (the best of a few runs:
the machine's attainable peak), then the BERT-base encoder's forward pass (``BertModel``, inference,
batch × 512 tokens of real Wikipedia text) and a seedr ``mlm`` training step (forward, backward, AdamW)
at the same shape, each in float32 and under bf16 autocast, all in this one run. FLOPs are counted
analytically (``bench/flops.py``: matrix products only), so the fractions are lower bounds.
"""

from __future__ import annotations

import contextlib
import time

import flops
import torch
from common import NO_NATIVE_BF16, Goal, Section, Table, best_of, main, measures_bf16, number

PRECISIONS = {"float32": torch.float32, "bf16": torch.bfloat16}


def matmul_rate(size: int, dtype: torch.dtype, repeats: int = 5) -> float:
    """GFLOP/s of ``size × size`` by ``size × size`` products (the best of ``repeats``)."""
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=generator).to(dtype)
    b = torch.randn(size, size, generator=generator).to(dtype)
    torch.matmul(a, b)  # warm-up: kernels chosen, memory touched
    seconds, _ = best_of(repeats, lambda: torch.matmul(a, b))
    return flops.matmul(size, size, size) / seconds / 1e9


def autocast(precision: str):
    return torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext()


def shapes(tiny: bool) -> dict[str, object]:
    if tiny:
        return {"matmul": 256, "layers": 2, "hidden": 64, "heads": 2, "length": 64, "forward_batch": 2,
                "train_batch": 2, "repeats": 1}
    return {"matmul": 2048, "layers": 12, "hidden": 768, "heads": 12, "length": 512, "forward_batch": 4,
            "train_batch": 2, "repeats": 2}


def run(tiny: bool, threads: int) -> Section:
    from bench_pretrain import packed_sequences

    from seedr.modeling.encoder import build_encoder, load_tokenizer
    from seedr.objectives.mlm import MaskedLanguageModel

    shape = shapes(tiny)
    tokenizer = load_tokenizer("minilm")
    measured = [precision for precision in PRECISIONS if precision == "float32" or measures_bf16(tiny)]
    peak = {precision: matmul_rate(shape["matmul"], PRECISIONS[precision]) for precision in measured}

    torch.manual_seed(0)
    encoder = build_encoder(len(tokenizer), shape["hidden"], shape["layers"], shape["heads"])
    objective = MaskedLanguageModel(encoder, tokenizer)
    sequences = packed_sequences(tokenizer, max(shape["forward_batch"], shape["train_batch"]) * 2, shape["length"])
    forward_ids = torch.tensor(sequences[:shape["forward_batch"]])
    forward_shape = flops.Shape(shape["layers"], shape["hidden"], 4 * shape["hidden"], len(tokenizer),
                                shape["forward_batch"], shape["length"])
    train_shape = flops.Shape(shape["layers"], shape["hidden"], 4 * shape["hidden"], len(tokenizer),
                              shape["train_batch"], shape["length"])
    optimizer = torch.optim.AdamW(objective.parameters(), lr=1e-4)
    rows, achieved = [], {}
    for precision in measured:
        encoder.eval()

        def forward(precision: str = precision) -> None:
            with torch.inference_mode(), autocast(precision):
                encoder(input_ids=forward_ids, attention_mask=torch.ones_like(forward_ids))

        forward()  # warm-up
        seconds, _ = best_of(shape["repeats"], forward)
        achieved["forward", precision] = flops.encoder_forward(forward_shape) / seconds / 1e9

        objective.train()
        batches = [objective.collate(sequences[i:i + shape["train_batch"]])
                   for i in range(0, 2 * shape["train_batch"], shape["train_batch"])]

        def step(batch: dict = batches[0], precision: str = precision) -> None:
            with autocast(precision):
                loss = objective(**batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        step()  # warm-up
        start = time.perf_counter()
        step(batches[1])
        seconds = time.perf_counter() - start
        achieved["train", precision] = flops.objective_step("mlm", train_shape) / seconds / 1e9

    for precision in measured:
        rows.append([precision, number(peak[precision]),
                     number(achieved["forward", precision]),
                     f"{achieved['forward', precision] / peak[precision]:.0%}",
                     number(achieved["train", precision]),
                     f"{achieved['train', precision] / peak[precision]:.0%}"])
    name = f"{shape['layers']} layers × {shape['hidden']} hidden"
    section = Section("ceiling", "4. Arithmetic ceiling", [
        (f"matmul: {shape['matmul']} × {shape['matmul']} by {shape['matmul']} × {shape['matmul']}, best of 5; "
        f"{threads} threads"),
        (f"encoder forward: BERT {name}, batch {shape['forward_batch']} × {shape['length']} tokens (wiki text), "
        "inference mode, best of the timed runs"),
        (f"training step: seedr mlm (forward, backward, AdamW) on BERT {name}, batch {shape['train_batch']} × "
        f"{shape['length']}"),
        "GFLOP/s from analytic FLOPs (matrix products only), fraction = of the same precision's matmul rate",
    ])
    section.tables.append(Table("GFLOP/s and fraction of the matmul rate",
                                ["precision", "matmul GFLOP/s", "encoder forward GFLOP/s", "forward fraction",
                                 "training step GFLOP/s", "step fraction"], rows))
    for precision in PRECISIONS:
        goal = f"encoder forward ≥ 50% of the matmul rate at BERT-base shape ({precision})"
        if precision not in measured:
            section.goals.append(Goal(goal, NO_NATIVE_BF16, None))
            continue
        fraction = achieved["forward", precision] / peak[precision]
        section.goals.append(Goal(goal, f"{fraction:.0%}", fraction >= 0.5))
    section.data = {"matmul_gflops": peak, "shape": shape,
                    "achieved_gflops": {f"{kind} {precision}": value for (kind, precision), value in achieved.items()}}
    return section


if __name__ == "__main__":
    main(run, __doc__.split("\n\n")[0])
