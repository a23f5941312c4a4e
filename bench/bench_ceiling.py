"""The arithmetic ceiling: this machine's matrix-multiply rate, and the share of it seedr reaches.

Measures ``torch.matmul`` of two square matrices in float32 and bfloat16 (the best of a few runs:
the machine's attainable peak), then the BERT-base encoder's forward pass (``BertModel``, inference,
batch × 512 tokens of real Wikipedia text) and a seedr ``mlm`` training step (forward, backward and
seedr's optimiser, ``build_optimizer``'s fused AdamW, as the trainer runs it) at the same shape, each
in float32 and under bf16 autocast, all in this one run. FLOPs are counted analytically
(``bench/flops.py``: matrix products only), so the fractions are lower bounds. One more training step
per precision runs under ``torch.profiler``: its operators' own time, grouped by kind (matrix products,
attention, casts, the optimizer, ...), says where the step's time goes beyond the matrix products the
fraction counts (a bf16 step was measured at 38% of the bf16 matmul rate).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

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


#: Kinds of operator for the profile, tried in order on the lower-cased operator name (first match wins).
OPERATOR_KINDS = (
    ("optimizer (AdamW)", ("_foreach", "adamw", "optimizer")),
    ("attention kernel", ("scaled_dot_product", "flash_attention")),
    ("matrix products", ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "mkldnn", "aten::linear",
                         "aten::matmul")),
    ("casts and copies", ("aten::to", "aten::_to_copy", "aten::copy_", "aten::clone", "aten::contiguous")),
    ("layer norm", ("layer_norm",)),
    ("softmax and cross-entropy", ("softmax", "nll_loss", "cross_entropy")),
    ("embedding and indexing", ("embedding", "index", "gather", "scatter", "masked_select", "nonzero")),
    ("dropout's random masks (bernoulli)", ("dropout", "aten::bernoulli")),
    ("element-wise (GELU, add, ...)", ("gelu", "aten::add", "aten::mul", "aten::div", "aten::sub",
                                      "aten::where", "masked_fill", "aten::sum", "aten::fill_", "aten::zero")),
)


def operator_kind(name: str) -> str:
    """The kind (``OPERATOR_KINDS``) of a profiled operator, by its name; "other" when none fits."""
    lowered = name.lower()
    for kind, prefixes in OPERATOR_KINDS:
        if any(lowered.startswith(prefix) or (not prefix.startswith("aten::") and prefix in lowered)
               for prefix in prefixes):
            return kind
    return "other"


def profile_step(step: Callable[[], None], top: int = 15) -> tuple[dict[str, float], list[tuple[str, float]]]:
    """One call of ``step`` under ``torch.profiler``: seconds per kind of operator (the operators' own CPU
    time on the calling thread, which the backward pass shares on a CPU; the kinds sum to about the step),
    and the ``top`` operators by their own time, each with its seconds."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profiler:
        step()
    by_kind: dict[str, float] = {}
    events = sorted(profiler.key_averages(), key=lambda event: -event.self_cpu_time_total)
    for event in events:
        kind = operator_kind(event.key)
        by_kind[kind] = by_kind.get(kind, 0.0) + event.self_cpu_time_total / 1e6
    return by_kind, [(event.key, event.self_cpu_time_total / 1e6) for event in events[:top]]


def shapes(tiny: bool) -> dict[str, object]:
    if tiny:
        return {"matmul": 256, "layers": 2, "hidden": 64, "heads": 2, "length": 64, "forward_batch": 2,
                "train_batch": 2, "repeats": 1}
    return {"matmul": 2048, "layers": 12, "hidden": 768, "heads": 12, "length": 512, "forward_batch": 4,
            "train_batch": 2, "repeats": 2}


def run(tiny: bool, threads: int) -> Section:
    from bench_pretrain import packed_sequences

    from seedr.config.settings import TrainConfig
    from seedr.engine.optim import build_optimizer
    from seedr.modeling.encoder import build_encoder, load_tokenizer
    from seedr.objectives.mlm.objective import MaskedLanguageModel

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
    optimizer = build_optimizer(objective, TrainConfig(learning_rate=1e-4))
    rows, achieved, profiles, top_operators = [], {}, {}, {}
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
        profiles[precision], top_operators[precision] = profile_step(lambda: step(batches[0]))

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
        (f"training step: seedr mlm (forward, backward, seedr's fused AdamW) on BERT {name}, batch "
         f"{shape['train_batch']} × {shape['length']}; dropout 0.1 as BERT"),
        "GFLOP/s from analytic FLOPs (matrix products only), fraction = of the same precision's matmul rate",
    ])
    section.tables.append(Table("GFLOP/s and fraction of the matmul rate",
                                ["precision", "matmul GFLOP/s", "encoder forward GFLOP/s", "forward fraction",
                                 "training step GFLOP/s", "step fraction"], rows))
    kinds = sorted({kind for profile in profiles.values() for kind in profile},
                   key=lambda kind: -max(profile.get(kind, 0.0) for profile in profiles.values()))
    section.tables.append(Table(
        "Where a training step's time goes: operators' own time in one profiled step, by kind",
        ["kind of operator", *(f"{precision} {unit}" for precision in measured for unit in ("ms", "share"))],
        [[kind, *(cell for precision in measured
                  for cell in (f"{1e3 * profiles[precision].get(kind, 0.0):,.0f}",
                               f"{profiles[precision].get(kind, 0.0) / sum(profiles[precision].values()):.0%}"))]
         for kind in kinds]))
    for precision in PRECISIONS:
        goal = f"encoder forward ≥ 50% of the matmul rate at BERT-base shape ({precision})"
        if precision not in measured:
            section.goals.append(Goal(goal, NO_NATIVE_BF16, None))
            continue
        fraction = achieved["forward", precision] / peak[precision]
        section.goals.append(Goal(goal, f"{fraction:.0%}", fraction >= 0.5))
    goal = "training step ≥ 50% of the matmul rate at BERT-base shape (bf16), or the profile that says why not"
    if "bf16" in measured:
        fraction = achieved["train", "bf16"] / peak["bf16"]
        products = profiles["bf16"].get("matrix products", 0.0) / sum(profiles["bf16"].values())
        section.goals.append(Goal(goal, f"{fraction:.0%} (matrix products {products:.0%} of the profiled step)",
                                  fraction >= 0.5))
    else:
        section.goals.append(Goal(goal, NO_NATIVE_BF16, None))
    section.data = {"matmul_gflops": peak, "shape": shape,
                    "achieved_gflops": {f"{kind} {precision}": value for (kind, precision), value in achieved.items()},
                    "profile_seconds": profiles, "profile_top_operators": top_operators}
    return section


if __name__ == "__main__":
    main(run, __doc__.split("\n\n")[0])
