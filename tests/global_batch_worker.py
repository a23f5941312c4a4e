"""One training step of every in-batch-negative loss on the same 16 real examples, split over the processes
of a ``torchrun`` group (or all in one process without it): each process takes its rows of the global batch,
the model (float64) is wrapped in DDP by Accelerate and back-propagated once, and process 0 saves the loss averaged
over processes and the (DDP-averaged) gradients. ``tests/test_global_in_batch.py`` runs it as 2 × 8 and
1 × 16 and compares. Usage: ``python global_batch_worker.py OUT_FILE [CASE ...]`` (default: every case).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.utils import DistributedDataParallelKwargs
from torch import nn

sys.path.insert(0, str(Path(__file__).parent))
from conftest import SHARED_DATA  # noqa: E402
from helpers import tiny_bert, wiki_token_ids  # noqa: E402

from seedr.data.training_sets import load_training_set  # noqa: E402
from seedr.losses import NLLLoss, Similarity  # noqa: E402
from seedr.losses.gradient_cache import average_gradients, gradient_cache_step  # noqa: E402
from seedr.modeling.encoder import load_tokenizer  # noqa: E402
from seedr.objectives.base import ObjectiveOutput  # noqa: E402
from seedr.objectives.cpdae.objective import Cpdae  # noqa: E402
from seedr.objectives.cpdae.options import CpdaeConfig  # noqa: E402
from seedr.objectives.ict.objective import ICTObjective  # noqa: E402
from seedr.objectives.two_tower import pair_data_for  # noqa: E402
from seedr.objectives.two_tower_options import PairConfig, TwoTowerConfig  # noqa: E402
from seedr.retrieval.dual_encoder import DualEncoder  # noqa: E402
from seedr.training.finetune import FinetuneCollator, FinetuneExample  # noqa: E402

EXAMPLES = 16
WIKI = SHARED_DATA / "wiki" / "enwiki-2015-00.jsonl.xz"


class PartOnly(nn.Module):
    """The objective with one of its parts as the loss, so DDP sees the other heads as unused."""

    def __init__(self, objective: nn.Module, part: str) -> None:
        super().__init__()
        self.objective, self.part = objective, part

    def forward(self, **batch: torch.Tensor) -> ObjectiveOutput:
        return ObjectiveOutput(self.objective(**batch).parts[self.part])


def tower(tokenizer) -> nn.Module:
    torch.manual_seed(0)  # the same weights in every process and in the single-process run
    return tiny_bert(tokenizer, intermediate_size=64, max_position_embeddings=512, dropout=0.0)


def two_tower_case(tokenizer):
    pairs = pair_data_for("ict", WIKI, seed=0, config=PairConfig(max_articles=40)).dataset(0)
    examples = [pairs[i] for i in range(EXAMPLES)]
    examples[12] = examples[3]  # the same passage in both processes' halves: a false negative across them
    objective = ICTObjective(tower(tokenizer), tokenizer, TwoTowerConfig(query_max_length=24, document_max_length=48))
    return objective, objective.collate(examples), rows_of_pairs


def nll_case(tokenizer):
    training = load_training_set(SHARED_DATA / "scifact")
    query_ids = sorted(training.queries)[:EXAMPLES]
    positives = [training.corpus[sorted(training.qrels[q])[0]] for q in query_ids]
    relevant = {q: set(training.qrels[q]) for q in query_ids}
    relevant[query_ids[0]].add(positives[12].id)  # a positive of the other process is relevant to query 0
    others = [doc for doc_id, doc in sorted(training.corpus.items()) if not any(doc_id in r for r in relevant.values())]
    examples = [FinetuneExample(q, training.queries[q], positive, (others[i],))
                for i, (q, positive) in enumerate(zip(query_ids, positives, strict=True))]
    model = DualEncoder(tower(tokenizer), tokenizer, NLLLoss(), similarity=Similarity("dot"), document_max_length=48)
    return model, FinetuneCollator(tokenizer, 24, 48, relevant)(examples), rows_of_documents


def cpdae_case(tokenizer, **options):
    objective = Cpdae(tower(tokenizer), tokenizer, CpdaeConfig(**options))
    torch.manual_seed(1)  # the masks of both views
    batch = objective.collate(wiki_token_ids(WIKI, tokenizer, EXAMPLES, 48))
    part = "js_contrastive" if objective.config.contrast == "words" else "cls_contrastive"
    return PartOnly(objective, part), batch, rows_of_views


def rows_of_pairs(batch, rank, world):
    share = EXAMPLES // world
    return {key: value[rank * share:(rank + 1) * share] for key, value in batch.items()}


def rows_of_documents(batch, rank, world):
    """Queries' rows; documents are the positives (B), then the hard negatives in query order (B·N)."""
    share = EXAMPLES // world
    negatives = (len(batch["document_input_ids"]) - EXAMPLES) // EXAMPLES
    positive_rows = torch.arange(rank * share, (rank + 1) * share)
    negative_rows = EXAMPLES + torch.arange(rank * share * negatives, (rank + 1) * share * negatives)
    document_rows = torch.cat([positive_rows, negative_rows])
    return {key: value[document_rows] if key.startswith("document_") else value[positive_rows]
            for key, value in batch.items()}


def rows_of_views(batch, rank, world):
    """Texts' rows; views are stacked [x' (m), x'' (m)], so this process takes its texts in both."""
    share = EXAMPLES // world
    texts = torch.arange(rank * share, (rank + 1) * share)
    views = torch.cat([texts, EXAMPLES + texts])
    return {key: value[texts] if key == "word_targets" else value[views] for key, value in batch.items()}


CASES = {
    "ict": two_tower_case,
    "nll": nll_case,
    "cpdae_js_mean": lambda tokenizer: cpdae_case(tokenizer, contrastive_reduction="mean"),
    "cpdae_js_sum": lambda tokenizer: cpdae_case(tokenizer, contrastive_reduction="sum"),
    "cpdae_cls": lambda tokenizer: cpdae_case(tokenizer, contrast="cls"),
    # the ICT step through GradCache, in chunks of 3 rows (the last one short), as the trainer runs it
    "ict_gradient_cache": two_tower_case,
}


def main(out_file: Path, cases: list[str]) -> None:
    torch.set_num_threads(1)
    # float64: a float32 gradient summed in another order differs by up to 1% where per-example terms
    # cancel (measured on these tiny models); in float64 the two runs agree to ~1e-12 relative.
    torch.set_default_dtype(torch.float64)
    tokenizer = load_tokenizer("minilm")
    accelerator = Accelerator(cpu=True, kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)])
    rank, world = accelerator.process_index, accelerator.num_processes
    results = {}
    for name in cases:
        model, batch, rows = CASES[name](tokenizer)
        model = accelerator.prepare(model)
        if name.endswith("_gradient_cache"):
            loss = gradient_cache_step(accelerator.unwrap_model(model), rows(batch, rank, world), 3,
                                       accelerator.backward).loss
            average_gradients(model.parameters())
        else:
            loss = model(**rows(batch, rank, world)).loss
            accelerator.backward(loss)
        results[name] = {
            "loss": accelerator.reduce(loss.detach(), "mean").item(),
            "grads": {name: parameter.grad.clone() for name, parameter
                      in accelerator.unwrap_model(model).named_parameters() if parameter.grad is not None}}
    if accelerator.is_main_process:
        torch.save({"processes": world, "results": results}, out_file)
    accelerator.wait_for_everyone()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:] or list(CASES))
