"""Contriever: the random crops (fixed generator), InfoNCE over in-batch negatives on one batch of real
Wikipedia text through a tiny BERT against an independent re-implementation and sentence-transformers'
MultipleNegativesRankingLoss, the optional MoCo queue; and `seedr pretrain --config contriever` end to end
from seedr-base."""

from __future__ import annotations

import inspect
import math

import pytest
import torch
from helpers import tiny_bert, wiki_token_ids
from typer.testing import CliRunner

from seedr.cli import app
from seedr.objectives import OBJECTIVES
from seedr.objectives.contriever.objective import Contriever
from seedr.objectives.contriever.options import ContrieverConfig

TEMPERATURE = 0.05


@pytest.fixture(scope="module")
def examples(wiki_shard, tokenizer):
    return wiki_token_ids(wiki_shard, tokenizer, count=6, max_length=64)


def make_objective(tokenizer, **options) -> Contriever:
    torch.manual_seed(0)
    return Contriever(tiny_bert(tokenizer), tokenizer, ContrieverConfig(**options))


def test_registered_with_the_released_defaults():
    assert OBJECTIVES.get("contriever") is Contriever
    config = ContrieverConfig()
    assert (config.temperature, config.ratio_min, config.ratio_max, config.deletion_probability) == (0.05, 0.05, 0.5, 0.1)
    assert (config.pooling, config.normalize, config.queue_size) == ("mean", False, 0)
    with pytest.raises(ValueError, match="ratio_min"):
        ContrieverConfig(ratio_min=0.6, ratio_max=0.5)


def test_crops_are_the_released_random_crop_then_deletion(tokenizer, examples):
    """With a fixed generator the crops are those drawn here by the released recipe (``randomcrop``: a ratio
    r ~ U(0.05, 0.5), ⌊n·r⌋ tokens from a uniform start; ``deleteword``: each token kept if u > 0.1), in the
    order the objective draws them (query then key of each text); without deletion, each crop is a
    contiguous span of the text."""
    objective = make_objective(tokenizer)
    queries, keys = objective.crops(examples, torch.Generator().manual_seed(3))
    generator = torch.Generator().manual_seed(3)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    for row, example in enumerate(examples):
        text = example[1:-1]
        for views in (queries, keys):
            ratio = 0.05 + 0.45 * torch.rand((), generator=generator).item()
            length = int(len(text) * ratio)
            start = int(torch.randint(len(text) - length + 1, (), generator=generator))
            span = text[start:start + length]
            kept = torch.rand(len(span), generator=generator)
            assert views[row] == [cls, *[token for token, u in zip(span, kept, strict=True) if u > 0.1], sep]
    assert queries != keys, "the two crops of a text are drawn independently"
    assert (queries, keys) == objective.crops(examples, torch.Generator().manual_seed(3))

    spans = make_objective(tokenizer, deletion_probability=0.0).crops(examples, torch.Generator().manual_seed(4))
    for views in spans:
        for example, view in zip(examples, views, strict=True):
            text, crop = example[1:-1], view[1:-1]
            assert int(len(text) * 0.05) <= len(crop) <= int(len(text) * 0.5)
            assert any(text[start:start + len(crop)] == crop for start in range(len(text) - len(crop) + 1))


def test_loss_is_infonce_over_the_batchs_crops(tokenizer, examples):
    """The objective's loss = §3.1 written out here for fixed crops: each crop's states averaged over its
    real tokens, dot products / τ, −log softmax of each query's own key among the batch's keys, averaged."""
    objective = make_objective(tokenizer).eval()  # no dropout: both computations see the same encoder
    batch = objective.collate(examples, generator=torch.Generator().manual_seed(5))
    assert set(batch) == set(inspect.signature(objective.forward).parameters)
    output = objective(**batch)

    queries, keys = objective.crops(examples, torch.Generator().manual_seed(5))

    def mean_vector(token_ids):
        with torch.no_grad():
            states = objective.encoder(input_ids=torch.tensor([token_ids])).last_hidden_state[0]  # (T, H)
        return [sum(float(states[t, h]) for t in range(len(token_ids))) / len(token_ids) for h in range(states.shape[1])]

    q, k = [mean_vector(ids) for ids in queries], [mean_vector(ids) for ids in keys]
    expected = 0.0
    for i in range(len(q)):
        scores = [sum(a * b for a, b in zip(q[i], k[j], strict=True)) / TEMPERATURE for j in range(len(k))]
        expected += -(scores[i] - math.log(sum(math.exp(s) for s in scores))) / len(q)
    assert abs(output.loss.item() - expected) < 1e-5
    assert output.parts == {"contriever": output.loss} and 0 <= output.metrics["accuracy"] <= 1


def test_loss_matches_multiple_negatives_ranking_loss(tokenizer):
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.util import dot_score

    generator = torch.Generator().manual_seed(0)
    queries, keys = 0.3 * torch.randn(8, 32, generator=generator), 0.3 * torch.randn(8, 32, generator=generator)
    keys[:4] += queries[:4]  # some positives close, as after training
    reference = MultipleNegativesRankingLoss(None, scale=1 / TEMPERATURE, similarity_fct=dot_score)
    expected = reference.compute_loss_from_embeddings([queries, keys], labels=None)
    loss, _ = make_objective(tokenizer).in_batch_loss(queries, keys)
    assert abs(loss.item() - expected.item()) < 1e-5
    cosine = MultipleNegativesRankingLoss(None, scale=1 / TEMPERATURE)  # normalize: true is the cosine variant
    unit = make_objective(tokenizer, normalize=True)
    loss, _ = unit.in_batch_loss(*(torch.nn.functional.normalize(x, dim=-1) for x in (queries, keys)))
    assert abs(loss.item() - cosine.compute_loss_from_embeddings([queries, keys], labels=None).item()) < 1e-5


def test_momentum_queue(tokenizer, examples):
    """MoCo: each query against its own key (from the key encoder, no gradient) and the queue, positive
    first; the keys then replace the oldest queued ones; the key encoder follows k ← m·k + (1 − m)·θ."""
    # unit vectors: an untrained encoder's own keys would outscore the random unit queue beyond float precision
    objective = make_objective(tokenizer, queue_size=12, momentum=0.9, normalize=True).eval()
    batch = objective.collate(examples[:4], generator=torch.Generator().manual_seed(6))
    queue = objective.queue.clone()
    output = objective(**batch)
    with torch.no_grad():
        q = [objective.embed(objective.encoder, batch["query_input_ids"][i:i + 1],
                             batch["query_attention_mask"][i:i + 1])[0] for i in range(4)]
        k = [objective.embed(objective.key_encoder, batch["key_input_ids"][i:i + 1],
                             batch["key_attention_mask"][i:i + 1])[0] for i in range(4)]
    expected = 0.0
    for i in range(4):
        logits = [float(q[i] @ k[i]) / TEMPERATURE] + [float(q[i] @ queue[j]) / TEMPERATURE for j in range(12)]
        expected += -(logits[0] - math.log(sum(math.exp(x) for x in logits))) / 4
    assert abs(output.loss.item() - expected) < 1e-5
    torch.testing.assert_close(objective.queue[:4], torch.stack(k))
    torch.testing.assert_close(objective.queue[4:], queue[4:])
    assert int(objective.queue_position) == 4

    output.loss.backward()
    assert objective.encoder.get_input_embeddings().weight.grad.abs().sum() > 0
    assert all(parameter.grad is None for parameter in objective.key_encoder.parameters())
    before = objective.key_encoder.get_input_embeddings().weight.clone()
    with torch.no_grad():
        objective.encoder.get_input_embeddings().weight.add_(1.0)
    objective.momentum_update()
    torch.testing.assert_close(objective.key_encoder.get_input_embeddings().weight,
                               0.9 * before + 0.1 * objective.encoder.get_input_embeddings().weight)
    assert objective.changes("seedr-base")[0].startswith("MoCo key encoder and queue (training only): new")


def run_pretrain(wiki_shard, out, **extra):
    settings = {"train.max_steps": 2, "train.batch_size": 4, "train.global_batch_size": 4, "train.log_every": 1,
                "train.save_every": 2, "train.warmup_steps": 0, "data.max_documents": 10, "data.max_seq_length": 64,
                **extra}
    return CliRunner().invoke(app, ["pretrain", "--config", "contriever", "--model", "seedr-base", "--corpus",
                                    str(wiki_shard), "--out", str(out),
                                    *[item for key, value in settings.items() for item in ("--set", f"{key}={value}")]],
                              catch_exceptions=False)


def test_pretrain_two_steps_from_seedr_base_gives_a_sentence_transformer(wiki_shard, tmp_path):
    from sentence_transformers import SentenceTransformer

    result = run_pretrain(wiki_shard, tmp_path / "contriever")
    assert result.exit_code == 0, result.output
    assert "pooling: the saved encoder pools by mean (Contriever's mean-pooled vector)" in result.output
    assert '"contriever"' in (tmp_path / "contriever" / "metrics.jsonl").read_text()
    model = SentenceTransformer(str(tmp_path / "contriever" / "encoder"), device="cpu")
    assert model.encode(["Tides are the rise and fall of sea levels."]).shape == (1, 256)
    assert model.similarity_fn_name == "dot" and model[1].get_config_dict()["pooling_mode"] == "mean"

    result = run_pretrain(wiki_shard, tmp_path / "moco", **{"objective.queue_size": 8})  # 2 global batches
    assert result.exit_code == 0, result.output
    saved = SentenceTransformer(str(tmp_path / "moco" / "encoder"), device="cpu")  # the encoder only
    assert saved.encode(["Tides"]).shape == (1, 256)
