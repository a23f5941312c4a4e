"""CPDAE's loss parts' gradient shares on the encoder under its reduction options (issue 7, item 3).

For each combination of ``objective.reconstruction_reduction`` (eq. 4 summed over the vocabulary, or
averaged) and ``objective.contrastive_reduction`` (eq. 5 summed over the m texts as printed, or averaged
over the 2m anchor views), a few real training steps of the CPDAE recipe at a small shape — MiniLM (a
pre-trained 6-layer BERT, standing in for BERT-base, which CPDAE continues from), 8 texts of 64 tokens
of real Wikipedia (wiki shard 00) per batch, 8 steps of AdamW at the recipe's 5e-5, λ = 0.1 — logging
‖∂part/∂θ_encoder‖ of every part before each step (``seedr.engine.part_gradients``, what the trainer
logs as ``grad_norm/<part>``). A part's share is its norm over the sum of the parts' norms.

    OMP_NUM_THREADS=1 python docs/results/cpdae_gradient_shares/measure.py \\
        --out docs/results/cpdae_gradient_shares/output.md
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from seedr.config import load_config
from seedr.engine.optim import build_optimizer
from seedr.engine.part_gradients import gradient_shares, part_gradient_norms
from seedr.settings import PretrainConfig
from seedr.training.pretrain import build_objective, token_data

ROOT = Path(__file__).resolve().parents[3]
WIKI = ROOT.parent / "shared" / "data" / "wiki" / "enwiki-2015-00.jsonl.xz"
PARTS = ("mlm", "bow_bce", "js_contrastive")


def measure(reconstruction: str, contrastive: str, steps: int, texts: int, length: int, work: Path) -> list[dict]:
    overrides = [f"objective.reconstruction_reduction={reconstruction}",
                 f"objective.contrastive_reduction={contrastive}", "model.init=minilm",
                 f"data.corpus=[{WIKI}]", "data.max_documents=40", f"data.max_seq_length={length}",
                 f"data.shards={work / 'shards'}", f"train.batch_size={texts}", f"train.global_batch_size={texts}"]
    config = load_config(PretrainConfig, ROOT / "recipes" / "pretrain" / "cpdae.yaml", overrides)
    objective = build_objective(config).train()
    dataset = token_data(config, objective.tokenizer, work).dataset(epoch=0)
    optimizer = build_optimizer(objective, config.train)
    rows = []
    for step in range(steps):
        torch.manual_seed(step)  # the masks of this step's views
        output = objective(**objective.collate([dataset[step * texts + i] for i in range(texts)]))
        norms = {name: float(value) for name, value in part_gradient_norms(objective, output.parts).items()}
        rows.append({"parts": {name: float(value.detach()) for name, value in output.parts.items()}, "norms": norms,
                     "shares": gradient_shares(norms)})
        output.loss.backward()
        torch.nn.utils.clip_grad_norm_(objective.parameters(), config.train.max_grad_norm)
        optimizer.step()
        optimizer.zero_grad()
    return rows


def table(results: dict[tuple[str, str], list[dict]], step: int) -> str:
    """The parts' values, gradient norms and shares at ``step`` (0-based) for every combination."""
    header = ("| eq. 4 (REC) | eq. 5 (CL) | L_MLM | L_REC | λ·L_CL | ‖∇ MLM‖ | ‖∇ REC‖ | ‖∇ λ·CL‖ "
              "| share MLM | share REC | share CL |\n|---|---|" + "---:|" * 9 + "\n")
    lines = []
    for (reconstruction, contrastive), rows in results.items():
        row = rows[step]
        values = ([f"{row['parts'][part]:.4g}" for part in PARTS]
                  + [f"{row['norms'][f'grad_norm/{part}']:.3g}" for part in PARTS]
                  + [f"{row['shares'][part]:.2e}" if row["shares"][part] < 0.01 else f"{row['shares'][part]:.3f}"
                     for part in PARTS])
        lines.append(f"| {reconstruction} | {contrastive} | " + " | ".join(values) + " |")
    return header + "\n".join(lines) + "\n"


def share_curve(results: dict[tuple[str, str], list[dict]]) -> str:
    """The contrastive part's share at every step, per combination."""
    steps = len(next(iter(results.values())))
    lines = ["| eq. 4 (REC) | eq. 5 (CL) | " + " | ".join(f"step {s + 1}" for s in range(steps)) + " |",
             "|---|---|" + "---:|" * steps]
    for (reconstruction, contrastive), rows in results.items():
        lines.append(f"| {reconstruction} | {contrastive} | "
                     + " | ".join(f"{row['shares']['js_contrastive']:.2e}" for row in rows) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--texts", type=int, default=8)
    parser.add_argument("--length", type=int, default=64)
    arguments = parser.parse_args()
    torch.set_num_threads(1)
    started = time.perf_counter()
    results = {}
    with tempfile.TemporaryDirectory() as work:
        for reconstruction in ("sum", "mean"):
            for contrastive in ("mean", "sum"):
                results[reconstruction, contrastive] = measure(reconstruction, contrastive, arguments.steps,
                                                               arguments.texts, arguments.length, Path(work))
    shape = (f"{arguments.texts} texts × {arguments.length} tokens (2 masked views each) a step, MiniLM, "
             f"wiki shard 00; {time.perf_counter() - started:.0f} s on one thread")
    text = (f"At the first step (initialisation; {shape}):\n\n{table(results, 0)}\n"
            f"After {arguments.steps - 1} steps of training:\n\n{table(results, -1)}\n"
            f"The contrastive part's share, step by step:\n\n{share_curve(results)}")
    print(text)
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(text)


if __name__ == "__main__":
    main()
