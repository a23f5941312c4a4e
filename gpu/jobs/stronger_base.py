"""GPU pack, job ``stronger_base``: a stronger seedr base, MLM continued from ``seedr-base`` on the Wikipedia
shard that travels, at ten times the tokens the CPU base saw (5.4e8 against 5.4e7), scored against it on
held-out text.

Training is ``seedr pretrain --config seedr_base_512 --model seedr-base`` (the base's own phase-2 recipe:
512-token sequences, its MLM head kept) with a GPU batch: 128 sequences × 512 tokens a step, 8,240 steps
(5.4e8 tokens), bf16, the recipe's peak rate 5e-4 after a 1% warm-up. The run is cut at ``--budget``
seconds if the lease is shorter; its published encoder is then its last checkpoint (every 500 steps), and
the tokens it saw are reported as they were. The held-out text is the first 256 articles of shard 07,
which no base trained on, scored at 128 and 512 tokens with the same masks for both models (seedr's
``heldout_masked_lm``, against the unigram plateau). The new encoder comes back in float16 (its
safetensors ≤ 16 MiB, the return's limit); it replaces ``models/seedr-base`` only if it is better there,
which the recording session decides from ``results.json`` and writes down.

    python gpu/jobs/stronger_base.py --out OUT [--budget SECONDS] [--tiny]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from partial import save_partial  # gpu/jobs/, the script's folder

SHARED = Path(os.environ.get("SEEDR_SHARED_DATA", Path(__file__).resolve().parents[2] / ".." / "shared" / "data"))
TRAINING_SHARDS = ("wiki/enwiki-2015-00.jsonl.xz",)
HELDOUT = "wiki/enwiki-2015-07.jsonl.xz"
#: GPU sizes: 128 × 512 tokens a step for 8,240 steps = 5.4e8 tokens, ten times the CPU base's 5.4e7.
GPU = {"train.max_steps": 8240, "train.batch_size": 128, "train.global_batch_size": 128, "train.warmup_steps": 82,
       "train.mixed_precision": "bf16", "data.max_documents": None, "train.save_every": 500, "train.log_every": 50,
       "train.keep_checkpoints": 1}
TINY = {"train.max_steps": 3, "train.batch_size": 2, "train.global_batch_size": 2, "train.warmup_steps": 1,
        "train.mixed_precision": "no", "data.max_documents": 20, "data.max_seq_length": 64, "train.save_every": 3,
        "train.log_every": 1, "train.keep_checkpoints": 1}
HELDOUT_TEXTS = {True: 8, False: 256}
#: What the job keeps of its budget after training: both models' held-out scoring and the float16 export.
SCORING_SECONDS = 60
LENGTHS = {True: (64,), False: (128, 512)}


def heldout_scores(model: str, texts: list[str], lengths: tuple[int, ...]) -> dict[str, dict[str, float]]:
    """Held-out masked-LM loss and accuracy of ``model`` (a folder with its MLM head) at each length."""
    import torch

    from seedr.config.settings import ModelConfig, PretrainConfig
    from seedr.evaluation.masked_lm import heldout_masked_lm
    from seedr.training.pretrain import build_objective

    objective, _ = build_objective(PretrainConfig(objective_name="mlm", model=ModelConfig(init=model)))
    objective.to("cuda" if torch.cuda.is_available() else "cpu")
    return {str(length): heldout_masked_lm(objective, texts, length, 32, 0) for length in lengths}


def export_float16(encoder: Path, target: Path) -> None:
    """The encoder folder with its weights in float16 (the return carries files of at most 16 MiB)."""
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    shutil.copytree(encoder, target, ignore=shutil.ignore_patterns("*.safetensors"))
    for weights in encoder.glob("*.safetensors"):
        tensors = {name: tensor.to(torch.float16) if tensor.is_floating_point() else tensor
                   for name, tensor in load_file(weights).items()}
        save_file(tensors, target / weights.name, metadata={"format": "pt", "seedr": "float16 for transport"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget", type=float, default=420.0,
                        help="seconds for the whole job (default 420): training stops SCORING_SECONDS before")
    parser.add_argument("--tiny", action="store_true", help="a toy size on the CPU, to check that the job runs")
    args = parser.parse_args()
    from seedr.diagnostics.loading import corpus_texts

    args.out.mkdir(parents=True, exist_ok=True)
    run = args.out / "run"
    settings = TINY if args.tiny else GPU
    command = [sys.executable, "-m", "seedr", "pretrain", "--config", "seedr_base_512", "--model", "seedr-base",
               *[part for shard in TRAINING_SHARDS for part in ("--corpus", str(SHARED / shard))], "--out", str(run),
               *[part for key, value in settings.items() for part in ("--set", f"{key}={json.dumps(value)}")]]
    started = time.perf_counter()
    try:
        finished = subprocess.run(command, timeout=max(args.budget - SCORING_SECONDS, 30)).returncode == 0
    except subprocess.TimeoutExpired:
        finished = False  # the last checkpoint's encoder stands
    seconds = time.perf_counter() - started
    logged = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    steps = max((entry.get("step", 0) for entry in logged), default=0)
    texts = corpus_texts([SHARED / HELDOUT], max_documents=HELDOUT_TEXTS[args.tiny] * 2)[:HELDOUT_TEXTS[args.tiny]]
    lengths = LENGTHS[args.tiny]
    tokens = steps * settings["train.batch_size"] * settings.get("data.max_seq_length", 512)
    results = {"job": "stronger_base", "tiny": args.tiny, "finished": finished, "seconds": round(seconds, 1),
               "steps_logged": steps, "tokens": tokens, "settings": settings, "heldout_texts": len(texts),
               "heldout": {}}
    for name in ("metrics.jsonl", "config.yaml", "run.json"):  # the training's record, before the scoring
        (args.out / name).write_bytes((run / name).read_bytes())
    save_partial(args.out, results)
    for name, model in (("seedr-base", "seedr-base"), ("new", str(run / "encoder"))):
        results["heldout"][name] = heldout_scores(model, texts, lengths)
        save_partial(args.out, results)  # each unit as it ends: a lease cut short returns what it finished
    better = all(results["heldout"]["new"][str(n)]["masked_accuracy"]
                 > results["heldout"]["seedr-base"][str(n)]["masked_accuracy"] for n in lengths)
    results["better_than_seedr_base"] = better
    save_partial(args.out, {**results, "complete": True})
    export_float16(run / "encoder", args.out / "encoder")
    import shutil

    for folder in (run, args.out / "shards"):  # weights, checkpoints and token shards stay behind
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(results["heldout"], indent=1), f"\nbetter than seedr-base at every length: {better}")


if __name__ == "__main__":
    main()
