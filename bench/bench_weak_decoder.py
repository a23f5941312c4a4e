"""Banded vs full-mask attention in SEED-Encoder's weak decoder: time and memory against length.

The banded kernel gathers each position's k keys with ``unfold`` (scores ``(B, heads, T, k+1)``);
the reference masks a full ``(T, T+1)`` score matrix (``implementation="dense"``). Both run the same
``WeakDecoder`` weights on the same real-vocabulary token ids. Each (implementation, length) runs in
a fresh process so that its peak resident memory (``VmHWM``) is its own; the table reports the
peak above the resident set before the timed runs, and the number of attention scores per layer.
Outputs are first checked equal at a small length.

Run:  .venv/bin/python bench/bench_weak_decoder.py --lengths 128 512 2048 8192
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time

import torch
from transformers import BertConfig

from seedr.objectives.seed.weak_decoder import WeakDecoder


def build(args: argparse.Namespace, implementation: str) -> tuple[WeakDecoder, BertConfig]:
    config = BertConfig(vocab_size=30522, hidden_size=args.hidden, num_attention_heads=args.heads,
                        intermediate_size=4 * args.hidden, max_position_embeddings=max(args.lengths))
    torch.manual_seed(0)
    decoder = WeakDecoder(config, num_layers=args.layers, attention_span=args.span,
                          implementation=implementation).eval()
    return decoder, config


def inputs(args: argparse.Namespace, config: BertConfig, length: int) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(length)
    token_ids = torch.randint(1000, config.vocab_size, (args.batch, length), generator=generator)
    cls_vector = torch.randn(args.batch, config.hidden_size, generator=generator, requires_grad=args.backward)
    embeddings = torch.randn(config.vocab_size, config.hidden_size, generator=generator)
    return token_ids, cls_vector, embeddings


def resident_kib(field: str = "VmRSS") -> int:
    """Resident memory (``VmRSS``) or its peak (``VmHWM``: unlike ``ru_maxrss``, not inherited from
    the parent process) in KiB."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(f"{field}:"))


def reset_peak() -> None:
    """Set ``VmHWM`` back to the current resident size (Linux ≥ 4.0); a no-op where that is not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as control:
            control.write("5")
    except OSError:
        pass


def measure(args: argparse.Namespace, implementation: str, length: int) -> tuple[float, float]:
    """Median seconds per call and peak extra MiB; runs in its own process."""
    torch.set_num_threads(args.threads)
    decoder, config = build(args, implementation)
    token_ids, cls_vector, embeddings = inputs(args, config, length)
    reset_peak()  # so that the peak is that of the timed calls, not of building the inputs
    baseline = resident_kib()
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        with torch.set_grad_enabled(args.backward):
            states = decoder(token_ids, cls_vector, embeddings)  # (B, T, H)
            if args.backward:
                states.square().mean().backward()
        times.append(time.perf_counter() - start)
    peak = resident_kib("VmHWM")
    return statistics.median(times), max(0, peak - baseline) / 1024


def check_equal(args: argparse.Namespace, length: int = 64) -> float:
    banded, config = build(args, "banded")
    dense, _ = build(args, "dense")
    token_ids, cls_vector, embeddings = inputs(args, config, length)
    with torch.no_grad():
        return (banded(token_ids, cls_vector, embeddings) - dense(token_ids, cls_vector, embeddings)).abs().max().item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 512, 2048, 8192])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--span", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--backward", action="store_true", help="time forward + backward (more memory)")
    args = parser.parse_args()

    difference = check_equal(args)
    print(f"banded vs dense outputs at T=64: max |difference| = {difference:.2e}")
    if difference > 1e-4:
        raise SystemExit("the banded and dense decoders disagree")

    print(f"decoder: {args.layers} layers, hidden {args.hidden}, {args.heads} heads, span {args.span}, "
          f"batch {args.batch}, {'forward+backward' if args.backward else 'forward'}, {args.threads} threads")
    header = (f"{'T':>6} {'banded ms':>10} {'dense ms':>10} {'time ×':>7} {'banded MiB':>11} "
              f"{'dense MiB':>10} {'mem ×':>7} {'scores banded':>14} {'scores dense':>13}")
    print(header)
    print("-" * len(header))
    context = multiprocessing.get_context("spawn")
    with context.Pool(1, maxtasksperchild=1) as pool:
        for length in args.lengths:
            banded_s, banded_mib = pool.apply(measure, (args, "banded", length))
            dense_s, dense_mib = pool.apply(measure, (args, "dense", length))
            scores = args.batch * args.heads * length
            print(f"{length:>6} {banded_s * 1e3:>10.1f} {dense_s * 1e3:>10.1f} {dense_s / banded_s:>7.1f} "
                  f"{banded_mib:>11.1f} {dense_mib:>10.1f} {dense_mib / max(banded_mib, 0.1):>7.1f} "
                  f"{scores * (args.span + 1):>14,} {scores * (length + 1):>13,}")


if __name__ == "__main__":
    main()
