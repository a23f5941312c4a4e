"""GradCache (``seedr.losses.gradient_cache``) and the global batch (``train.global_batch_size``): a
GradCache step is the plain big-batch step — for the two-tower softmax on real ICT pairs and for DPR's
in-batch NLL on SciFact, directly and through the ``Trainer`` —, dropout masks are replayed, and the
global batch sets the gradient accumulation or is refused when it does not divide."""

from __future__ import annotations

import copy
import itertools
from pathlib import Path

import pytest
import torch
from helpers import tiny_bert

from seedr.config.settings import TrainConfig
from seedr.data.articles import read_articles
from seedr.data.training_sets import load_training_set
from seedr.engine.trainer import Trainer
from seedr.losses import NLLLoss, Similarity
from seedr.losses.gradient_cache import gradient_cache_step
from seedr.objectives.cpdae.objective import Cpdae
from seedr.objectives.ict.objective import ICTObjective
from seedr.objectives.pair_tasks import ICTPairs
from seedr.objectives.two_tower import PairData
from seedr.objectives.two_tower_options import PairConfig, TwoTowerConfig
from seedr.retrieval.dual_encoder import DualEncoder
from seedr.training.finetune import FinetuneCollator, FinetuneExample

#: float64 models: GradCache only changes the order of float sums, so after one AdamW step the parameters
#: agree to 1e-9 (Adam's first step moves each parameter by about ±lr, so this is relative to the step).
TOLERANCE = {"rtol": 1e-9, "atol": 1e-12}
BATCH, CHUNK = 12, 5  # chunks of 5, 5 and 2 rows


@pytest.fixture(scope="module")
def pair_data(wiki_shard: Path) -> PairData:
    articles = list(itertools.islice(read_articles(wiki_shard), 40))
    return PairData([ICTPairs(articles, PairConfig())], seed=0)


def tower(tokenizer, dropout: float = 0.0):
    torch.manual_seed(0)
    return tiny_bert(tokenizer, intermediate_size=64, max_position_embeddings=512, dropout=dropout).double()


def ict_objective(tokenizer, dropout: float = 0.0) -> ICTObjective:
    return ICTObjective(tower(tokenizer, dropout), tokenizer, TwoTowerConfig(query_max_length=24, document_max_length=48))


def one_adamw_step(model, step) -> dict[str, torch.Tensor]:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step(model)
    optimizer.step()
    return {name: parameter.detach().clone() for name, parameter in model.named_parameters()}


def plain(batch):
    return lambda model: model(**batch).loss.backward()


def cached(batch):
    return lambda model: gradient_cache_step(model, batch, CHUNK, torch.Tensor.backward)


def assert_same_parameters(got: dict, expected: dict) -> None:
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        torch.testing.assert_close(got[name], value, **TOLERANCE, msg=name)


def test_gradient_cache_step_equals_the_big_batch_step_two_tower(tokenizer, pair_data):
    objective = ict_objective(tokenizer)
    batch = objective.collate([pair_data.dataset(0)[i] for i in range(BATCH)])
    expected = one_adamw_step(copy.deepcopy(objective), plain(batch))
    got = one_adamw_step(copy.deepcopy(objective), cached(batch))
    assert_same_parameters(got, expected)
    assert any(not torch.equal(value, parameter) for value, parameter in zip(
        expected.values(), objective.parameters(), strict=True))  # the step did move the parameters


def test_gradient_cache_step_equals_the_big_batch_step_dpr_nll(tokenizer, shared_data):
    training = load_training_set(shared_data / "scifact")
    query_ids = sorted(training.queries)[:BATCH]
    relevant = {q: set(training.qrels[q]) for q in query_ids}
    others = [document for document_id, document in sorted(training.corpus.items())
              if not any(document_id in judged for judged in relevant.values())]
    examples = [FinetuneExample(q, training.queries[q], training.corpus[sorted(training.qrels[q])[0]], (others[i],))
                for i, q in enumerate(query_ids)]
    batch = FinetuneCollator(tokenizer, 24, 48, relevant)(examples)
    model = DualEncoder(tower(tokenizer), tokenizer, NLLLoss(), similarity=Similarity("dot"), document_max_length=48)
    expected = one_adamw_step(copy.deepcopy(model), plain(batch))
    got = one_adamw_step(copy.deepcopy(model), cached(batch))
    assert_same_parameters(got, expected)


def test_dropout_masks_are_replayed_in_the_second_pass(tokenizer, pair_data):
    """With dropout on, GradCache's gradient is that of embedding the same chunks with graphs from the
    same RNG state: the backward pass re-draws exactly the masks its cached gradient was computed with."""
    objective = ict_objective(tokenizer, dropout=0.1)
    batch = objective.collate([pair_data.dataset(0)[i] for i in range(BATCH)])
    split = objective.split_for_gradient_cache(**batch)

    def chunked_with_graphs(model):
        towers = model.split_for_gradient_cache(**batch).towers
        embeddings = [torch.cat([tower.embed(**{k: v[start:start + CHUNK] for k, v in tower.inputs.items()})
                                 for start in range(0, BATCH, CHUNK)]) for tower in towers]
        model.loss_from_embeddings(*embeddings, **split.loss_inputs).loss.backward()

    gradients = []
    for step in (chunked_with_graphs, cached(batch)):
        model = copy.deepcopy(objective)
        torch.manual_seed(7)
        step(model)
        gradients.append({name: parameter.grad for name, parameter in model.named_parameters()})
    for name, gradient in gradients[0].items():
        torch.testing.assert_close(gradients[1][name], gradient, rtol=1e-9, atol=1e-12, msg=name)
    torch.manual_seed(8)  # another seed draws other masks: the comparison above is not vacuous
    other = copy.deepcopy(objective)
    cached(batch)(other)
    assert not torch.allclose(other.encoder.embeddings.word_embeddings.weight.grad,
                              gradients[1]["towers.query_encoder.embeddings.word_embeddings.weight"])


def test_trainer_with_gradient_cache_takes_the_plain_step(tokenizer, pair_data, tmp_path):
    def train(gradient_cache: bool) -> dict[str, torch.Tensor]:
        objective = ict_objective(tokenizer)
        config = TrainConfig(max_steps=1, batch_size=BATCH, global_batch_size=BATCH, gradient_cache=gradient_cache,
                             gradient_cache_chunk=CHUNK, learning_rate=1e-3, log_every=1)
        trainer = Trainer(objective, pair_data, objective.collate, config, tmp_path / str(gradient_cache),
                          lambda model, directory: model.save_encoder(directory))
        trainer.train()
        return {name: parameter.detach() for name, parameter in trainer.unwrapped_model().named_parameters()}

    assert_same_parameters(train(True), train(False))


def test_gradient_cache_refuses_token_level_objectives(tokenizer, pair_data, tmp_path):
    objective = Cpdae(tower(tokenizer), tokenizer)
    with pytest.raises(ValueError, match="gradient_cache needs a model whose loss reads one embedding"):
        Trainer(objective, pair_data, objective.collate, TrainConfig(gradient_cache=True), tmp_path,
                lambda model, directory: None)


def test_global_batch_size_sets_gradient_accumulation():
    assert TrainConfig(batch_size=32).accumulation_steps(processes=8) == 1
    assert TrainConfig(batch_size=32, global_batch_size=256).accumulation_steps(processes=1) == 8
    assert TrainConfig(batch_size=32, global_batch_size=256).accumulation_steps(processes=8) == 1
    assert TrainConfig(batch_size=256, global_batch_size=8192, gradient_accumulation_steps=4).accumulation_steps(8) == 4
    with pytest.raises(ValueError, match=r"global_batch_size 64 is not a multiple of train.batch_size 24 × 1"):
        TrainConfig(batch_size=24, global_batch_size=64).accumulation_steps(processes=1)
    with pytest.raises(ValueError, match=r"batch_size 24 × 1 process\(es\) = 24: choose a batch_size that divides 64"):
        TrainConfig(batch_size=24, global_batch_size=64).accumulation_steps(processes=1)
    with pytest.raises(ValueError, match=r"global_batch_size 256 is not a multiple of train.batch_size 32 × 3.*"
                                         r"run on a number of processes that divides it"):
        TrainConfig(batch_size=32, global_batch_size=256).accumulation_steps(processes=3)
    with pytest.raises(ValueError, match="gradient_accumulation_steps 2 contradicts"):
        TrainConfig(batch_size=32, global_batch_size=256, gradient_accumulation_steps=2).accumulation_steps(1)
    with pytest.raises(ValueError, match="global_batch_size must be at least 1"):
        TrainConfig(global_batch_size=0)
