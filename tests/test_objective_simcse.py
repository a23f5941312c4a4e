"""Unsupervised SimCSE: eq. 4 on one batch of real Wikipedia text through a tiny BERT, against an
independent re-implementation and sentence-transformers' MultipleNegativesRankingLoss; and `seedr pretrain
--config simcse` end to end from seedr-base."""

from __future__ import annotations

import inspect
import math

import torch
from helpers import tiny_bert, wiki_token_ids
from typer.testing import CliRunner

from seedr.cli import app
from seedr.objectives import OBJECTIVES
from seedr.objectives.simcse.objective import SimCSE
from seedr.objectives.simcse.options import SimCSEConfig

TEMPERATURE = 0.05


def make_objective(tokenizer, **options) -> SimCSE:
    torch.manual_seed(0)
    return SimCSE(tiny_bert(tokenizer), tokenizer, SimCSEConfig(**options))


def test_registered_with_the_papers_defaults():
    assert OBJECTIVES.get("simcse") is SimCSE
    config = SimCSEConfig()
    assert (config.temperature, config.mlp, config.global_in_batch) == (0.05, True, True)


def test_loss_is_eq4_over_two_dropout_passes(tokenizer, wiki_shard):
    """The objective's loss = eq. 4 written out here: the batch twice through the encoder (same dropout
    masks: the same seed before one stacked call), [CLS], tanh(W h + b), cosine / τ, −log softmax at the
    own second pass, averaged over anchors."""
    objective = make_objective(tokenizer)
    objective.train()
    batch = objective.collate(wiki_token_ids(wiki_shard, tokenizer, count=6, max_length=32))
    assert set(batch) == set(inspect.signature(objective.forward).parameters)
    torch.manual_seed(7)
    output = objective(**batch)

    torch.manual_seed(7)  # the same dropout masks
    ids, mask = batch["input_ids"], batch["attention_mask"]
    with torch.no_grad():
        states = objective.encoder(input_ids=torch.cat([ids, ids]),
                                   attention_mask=torch.cat([mask, mask])).last_hidden_state
    dense = objective.mlp.dense
    h = torch.tanh(states[:, 0] @ dense.weight.T + dense.bias)  # (2N, H)
    count = len(ids)
    first, second = h[:count], h[count:]
    expected = 0.0
    for i in range(count):
        sims = [float(first[i] @ second[j] / (first[i].norm() * second[j].norm())) / TEMPERATURE
                for j in range(count)]
        expected += -(sims[i] - math.log(sum(math.exp(s) for s in sims))) / count
    assert abs(output.loss.item() - expected) < 1e-5
    assert output.parts == {"simcse": output.loss} and 0 <= output.metrics["accuracy"] <= 1
    torch.manual_seed(8)  # other dropout masks, another loss: dropout is the augmentation
    assert abs(objective(**batch).loss.item() - expected) > 1e-4


def test_loss_matches_multiple_negatives_ranking_loss(tokenizer):
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    objective = make_objective(tokenizer)
    generator = torch.Generator().manual_seed(0)
    first, second = torch.randn(8, 32, generator=generator), torch.randn(8, 32, generator=generator)
    second[:4] = first[:4] + 0.1 * second[:4]  # some positives close, as after training
    reference = MultipleNegativesRankingLoss(None, scale=1 / TEMPERATURE)  # cosine by default
    expected = reference.compute_loss_from_embeddings([first, second], labels=None)
    loss, _ = objective.contrastive_loss(first, second)
    assert abs(loss.item() - expected.item()) < 1e-5


def test_gradients_reach_the_encoder_and_the_mlp_only_the_encoder_is_saved(tokenizer, wiki_shard, tmp_path):
    objective = make_objective(tokenizer)
    objective(**objective.collate(wiki_token_ids(wiki_shard, tokenizer, count=4, max_length=32))).loss.backward()
    assert objective.mlp.dense.weight.grad.abs().sum() > 0
    assert objective.encoder.get_input_embeddings().weight.grad.abs().sum() > 0
    assert make_objective(tokenizer, mlp=False).new_parts == ()
    from safetensors import safe_open

    folder = objective.save_encoder(tmp_path / "encoder", max_seq_length=32)
    with safe_open(str(folder / "model.safetensors"), framework="pt") as weights:
        assert not any("mlp" in name for name in weights.keys())  # noqa: SIM118


def test_pretrain_two_steps_from_seedr_base_gives_a_sentence_transformer(wiki_shard, tmp_path):
    from sentence_transformers import SentenceTransformer

    out = tmp_path / "simcse"
    settings = {"train.max_steps": 2, "train.batch_size": 4, "train.global_batch_size": 4, "train.log_every": 1,
                "train.save_every": 2, "data.max_documents": 10}
    result = CliRunner().invoke(app, ["pretrain", "--config", "simcse", "--model", "seedr-base", "--corpus",
                                      str(wiki_shard), "--out", str(out),
                                      *[item for key, value in settings.items() for item in ("--set", f"{key}={value}")]],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "SimCSE's MLP over [CLS] (training only): new" in result.output
    logged = [line for line in (out / "metrics.jsonl").read_text().splitlines() if '"simcse"' in line]
    assert logged, "the loss part is logged"
    model = SentenceTransformer(str(out / "encoder"), device="cpu")
    assert model.encode(["Tides are the rise and fall of sea levels."]).shape == (1, 256)
    assert model.similarity_fn_name == "cosine" and model[1].get_config_dict()["pooling_mode"] == "cls"
