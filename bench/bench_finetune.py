"""Fine-tuning step throughput: seedr against sentence-transformers' MultipleNegativesRankingLoss.

Both train the offline all-MiniLM-L6-v2 (mean pooling, cosine × 20: what its folder declares, and
MNRL's default scale) on the same batches of SciFact training triples — a query, one of its relevant
abstracts, and one hard negative (the best-ranked non-relevant abstract under seedr's BM25) — with
every query scored against all positives and negatives of the batch, at the same precision and the
same input length. Documents are the abstracts' text alone (sentence-transformers would not pair
them with the title), so both tokenise the same strings.

- ``sentence-transformers``: ``SentenceTransformer`` + ``MultipleNegativesRankingLoss`` in a plain
  loop (``model.preprocess`` per column, the loss, backward, gradient clipping to norm 1, fused
  AdamW): what ``SentenceTransformerTrainer`` runs per step with its defaults (``max_grad_norm=1.0``,
  ``optim="adamw_torch_fused"``), without its trainer (which needs ``datasets``). Until seedr's
  trainer took the fused AdamW too, this loop ran the multi-tensor AdamW without clipping;
  both were changed together, after the run that read 0.97×;
- ``seedr``: ``DualEncoder`` + the ``nll`` loss (in-batch) + ``FinetuneCollator`` in seedr's
  ``Trainer``, as ``seedr finetune --loss nll`` runs them (checkpoint writing left out).

Each run is alone in a fresh process; seedr's starts as the ``seedr`` command does, with its allocator
policy (``seedr.allocator``; ``common.system_in_fresh_process``). Examples/s is counted over the steps
after the warm-up, from the end of one step to the end of the last.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import torch
from common import SCIFACT, Goal, Section, Table, main, number, ratio, system_in_fresh_process


def triples(count: int) -> list:
    """``count`` (query, positive, BM25 hard negative) ``FinetuneExample``s from SciFact's training split."""
    from seedr.data.records import Document
    from seedr.data.training_sets import load_training_set
    from seedr.retrieval.bm25 import BM25Index
    from seedr.training.finetune import FinetuneExample

    training = load_training_set(SCIFACT, "train")
    corpus = {doc_id: Document(doc_id, document.text) for doc_id, document in training.corpus.items()}
    query_ids = sorted(training.queries)[:count]
    if len(query_ids) < count:
        raise ValueError(f"SciFact has only {len(query_ids)} training queries")
    run = BM25Index.build(training.corpus.values()).search({q: training.queries[q] for q in query_ids}, k=20)
    examples = []
    for query_id in query_ids:
        relevant = training.qrels[query_id]
        positive = min(doc for doc, grade in relevant.items() if grade > 0)
        negative = next(doc for doc in run[query_id] if doc not in relevant)
        examples.append(FinetuneExample(query_id, training.queries[query_id], corpus[positive], (corpus[negative],)))
    return examples


def seedr_steps(examples: list, batch: int, warmup: int, max_length: int) -> float:
    from accelerate.state import AcceleratorState

    from seedr.config.settings import TrainConfig
    from seedr.engine.trainer import Callback, Trainer
    from seedr.losses import build_loss
    from seedr.retrieval.dual_encoder import DualEncoder
    from seedr.training.finetune import FinetuneCollator

    class NoCheckpoints(Trainer):
        def _save(self) -> None:  # writing checkpoints is not part of a step
            pass

    class Stamps(Callback):
        def __init__(self) -> None:
            self.stamps: list[float] = []

        def on_step_end(self, trainer, step):
            self.stamps.append(time.perf_counter())

    class Fixed:
        def dataset(self, epoch: int) -> list:
            return examples

    AcceleratorState._reset_state(reset_partial_state=True)
    torch.manual_seed(0)
    model = DualEncoder.from_pretrained("minilm", build_loss("nll", {"in_batch": True}),
                                        query_max_length=max_length, document_max_length=max_length)
    relevant = {example.query_id: {example.positive.id} for example in examples}
    collate = FinetuneCollator(model.tokenizer, max_length, max_length, relevant)
    config = TrainConfig(max_steps=len(examples) // batch, batch_size=batch, learning_rate=2e-5, warmup_steps=0,
                         log_every=10**6, save_every=10**6)
    stamps = Stamps()
    out_dir = Path(tempfile.mkdtemp(prefix="seedr-bench-"))
    try:
        NoCheckpoints(model, Fixed(), collate, config, out_dir, lambda *_: None, [stamps]).train()
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    return batch * (len(stamps.stamps) - warmup) / (stamps.stamps[-1] - stamps.stamps[warmup - 1])


def sentence_transformers_steps(examples: list, batch: int, warmup: int, max_length: int) -> float:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.losses import MultipleNegativesRankingLoss

    from seedr.modeling.encoder import resolve_model_path

    torch.manual_seed(0)
    model = SentenceTransformer(str(resolve_model_path("minilm")), device="cpu")
    model.max_seq_length = max_length
    loss = MultipleNegativesRankingLoss(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, fused=True)
    model.train()
    stamps = []
    for start in range(0, len(examples) - batch + 1, batch):
        chunk = examples[start:start + batch]
        columns = ([e.query for e in chunk], [e.positive.text for e in chunk], [e.negatives[0].text for e in chunk])
        features = [model.preprocess(column) for column in columns]
        value = loss(features, None)
        value.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        stamps.append(time.perf_counter())
    return batch * (len(stamps) - warmup) / (stamps[-1] - stamps[warmup - 1])


def run(tiny: bool, threads: int) -> Section:
    import sentence_transformers

    batch, warmup, steps, max_length, repeats = (2, 1, 1, 32, 1) if tiny else (16, 1, 8, 256, 2)
    examples = triples(batch * (warmup + steps))
    # Each system twice, in the order A, B, C, C, B, A, its better run: none gains from running first or
    # last (an earlier version timed each once, ST first, over 5 steps, and read 0.89×). Each run is alone
    # in a fresh process, seedr's as its command starts (keeping freed memory); the last row is
    # sentence-transformers under that allocator policy too: how much of the difference the policy makes.
    systems = {"sentence-transformers MNRL": (sentence_transformers_steps, False),
               "seedr nll (in-batch)": (seedr_steps, True),
               "sentence-transformers MNRL, seedr's allocator policy": (sentence_transformers_steps, True)}
    runs: dict[str, list[float]] = {name: [] for name in systems}
    for name in [*systems, *reversed(systems)][:len(systems) * repeats]:  # once each at the tiny size
        function, policy = systems[name]
        runs[name].append(system_in_fresh_process(function, examples, batch, warmup, max_length, threads=threads,
                                                  keep_freed_memory=policy))
    rates = {name: max(measured) for name, measured in runs.items()}
    seedr_rate, st_rate = rates["seedr nll (in-batch)"], rates["sentence-transformers MNRL"]
    section = Section("finetune", "2. Fine-tuning step", [
        "model: all-MiniLM-L6-v2 (6 layers × 384), mean pooling, cosine × 20, float32",
        (f"data: SciFact train queries (../shared/data/scifact), one relevant abstract and one BM25 hard negative "
        f"each; batch {batch} queries (+ {batch} positives + {batch} negatives), at most {max_length} tokens"),
        (f"{steps} timed steps after {warmup} warm-up, each system "
         f"{'twice (A, B, C, C, B, A), its better run' if repeats == 2 else 'once'}, each run "
         f"alone in a fresh process (seedr's with the seedr command's allocator policy); fused AdamW lr 2e-5, "
         f"gradients clipped to norm 1 (both trainers' defaults); sentence-transformers {sentence_transformers.__version__}"),
    ])
    section.tables.append(Table("Examples (query + positive + negative) per second",
                                ["system", "examples/s (better run)", "× ST", "each run"],
                                [[name, number(rate), ratio(rate / st_rate), ", ".join(number(r) for r in runs[name])]
                                 for name, rate in rates.items()]))
    section.goals.append(Goal("seedr ≥ 1.0× sentence-transformers", ratio(seedr_rate / st_rate),
                              seedr_rate >= st_rate))
    section.data = {"examples_per_second": rates, "runs": runs, "batch": batch, "steps": steps,
                    "max_length": max_length}
    return section


if __name__ == "__main__":
    main(run, __doc__.split("\n\n")[0])
