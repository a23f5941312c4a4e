"""MLM pre-training step throughput: what seedr's objective does vs the plain Hugging Face baseline.

Three ways to run the same train step (forward, backward, AdamW update) of a BERT of the given shape
on the same real batches (the embedded Wikipedia leads, BERT-masked by seedr's ``mlm`` collator):

- ``hf-full``: ``transformers.BertForMaskedLM``: logits at every position, float32;
- ``seedr``: seedr's ``mlm`` objective: logits only at the masked positions, float32;
- ``seedr-bf16``: the same under bf16 autocast (``train.mixed_precision=bf16``).

Reports tokens/s and the ratios to ``hf-full``, all measured in this one run.

Run:  .venv/bin/python bench/bench_pretrain_step.py --layers 4 --hidden 256 --batch 32 --length 128
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import time

import torch
from transformers import BertConfig, BertForMaskedLM

from seedr.data.default import default_documents
from seedr.modeling.encoder import build_encoder, load_tokenizer
from seedr.objectives.mlm import MaskedLanguageModel, MLMConfig


def batches(tokenizer, args: argparse.Namespace) -> list[list[list[int]]]:
    """Real token-id sequences, ``args.batch`` per batch, cut to ``args.length``."""
    documents = itertools.islice(default_documents(), args.batch * (args.steps + args.warmup))
    ids = [tokenizer(f"{d.title}. {d.text}", truncation=True, max_length=args.length)["input_ids"]
           for d in documents]
    return [ids[i:i + args.batch] for i in range(0, len(ids), args.batch)]


def run(name: str, args: argparse.Namespace, tokenizer, examples: list[list[list[int]]]) -> float:
    torch.manual_seed(0)
    encoder = build_encoder(len(tokenizer), args.hidden, args.layers, max(1, args.hidden // 64),
                            pad_token_id=tokenizer.pad_token_id)
    objective = MaskedLanguageModel(encoder, tokenizer, MLMConfig())
    baseline = None
    if name == "hf-full":
        config = BertConfig(**{**encoder.config.to_dict()})
        baseline = BertForMaskedLM(config)
    model = baseline or objective
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if name.endswith("bf16") else contextlib.nullcontext()
    tokens, elapsed = 0, 0.0
    for step, example in enumerate(examples):
        batch = objective.collate(example)
        start = time.perf_counter()
        with autocast:
            loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step >= args.warmup:
            elapsed += time.perf_counter() - start
            tokens += int(batch["attention_mask"].sum())
    return tokens / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tokenizer = load_tokenizer("minilm")
    examples = batches(tokenizer, args)
    results = {name: run(name, args, tokenizer, examples) for name in ("hf-full", "seedr", "seedr-bf16")}
    print(f"BERT {args.layers} layers × {args.hidden} hidden, batch {args.batch} × {args.length} tokens, "
          f"{args.steps} timed steps, {args.threads} threads")
    print(f"{'variant':<12} {'tokens/s':>10} {'× hf-full':>10}")
    for name, speed in results.items():
        print(f"{name:<12} {speed:>10.0f} {speed / results['hf-full']:>10.2f}")


if __name__ == "__main__":
    main()
