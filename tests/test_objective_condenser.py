"""Condenser: eq. 4-7 on fixed masks against a re-implementation written from the paper, the head's
information path (late [CLS] + early tokens only), and `seedr pretrain --config condenser` end to end."""

from __future__ import annotations

import inspect
import json
import math

import pytest
import torch
from helpers import tiny_bert, wiki_token_ids
from torch.nn import functional as F

from seedr.objectives import OBJECTIVES
from seedr.objectives.condenser.objective import Condenser
from seedr.objectives.condenser.options import CondenserConfig
from seedr.objectives.masking import IGNORE_INDEX
from tests.helpers import pretrain_tiny


@pytest.fixture(scope="module")
def examples(wiki_shard, tokenizer):
    return wiki_token_ids(wiki_shard, tokenizer, count=6, max_length=40)


def make_objective(tokenizer, layers: int = 4, **options) -> Condenser:
    torch.manual_seed(0)
    return Condenser(tiny_bert(tokenizer, num_hidden_layers=layers), tokenizer, CondenserConfig(**options)).eval()


def reference_layer(layer, states: torch.Tensor, attention_mask: torch.Tensor, heads: int) -> torch.Tensor:
    """One post-LN BERT layer (Vaswani et al. 2017; Devlin et al. 2019) written out from its weights."""
    attention, feed_forward = layer.attention, layer
    batch, length, hidden = states.shape
    size = hidden // heads

    def split(x):
        return x.view(batch, length, heads, size).transpose(1, 2)  # (B, heads, T, size)

    q = split(F.linear(states, attention.self.query.weight, attention.self.query.bias))
    k = split(F.linear(states, attention.self.key.weight, attention.self.key.bias))
    v = split(F.linear(states, attention.self.value.weight, attention.self.value.bias))
    scores = q @ k.transpose(-1, -2) / math.sqrt(size)  # (B, heads, T, T)
    scores = scores.masked_fill(~attention_mask.bool()[:, None, None, :], float("-inf"))
    context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch, length, hidden)
    dense = attention.output.dense
    states = F.layer_norm(states + F.linear(context, dense.weight, dense.bias), (hidden,),
                          attention.output.LayerNorm.weight, attention.output.LayerNorm.bias,
                          attention.output.LayerNorm.eps)
    inner = F.gelu(F.linear(states, feed_forward.intermediate.dense.weight, feed_forward.intermediate.dense.bias))
    out = feed_forward.output
    return F.layer_norm(states + F.linear(inner, out.dense.weight, out.dense.bias), (hidden,),
                        out.LayerNorm.weight, out.LayerNorm.bias, out.LayerNorm.eps)


def reference_mlm(head, word_embeddings: torch.Tensor, states: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """BERT's MLM: dense → GELU → LayerNorm → tied output + bias, mean cross-entropy over masked tokens."""
    transformed = F.layer_norm(F.gelu(F.linear(states, head.dense.weight, head.dense.bias)), (states.shape[-1],),
                               head.LayerNorm.weight, head.LayerNorm.bias, head.LayerNorm.eps)
    log_probabilities = (transformed @ word_embeddings.T + head.bias).log_softmax(-1)  # (B, T, V)
    targets = labels != IGNORE_INDEX
    return -log_probabilities[targets].gather(1, labels[targets][:, None]).mean()


def reference_condenser_loss(objective: Condenser, batch: dict, early_layer: int) -> dict[str, torch.Tensor]:
    """Eq. 4-7 from the paper: the head over [h^last_cls; h^early_1..T], both MLMs with one prediction head."""
    encoder = objective.encoder
    output = encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_hidden_states=True)
    late, early = output.hidden_states[-1], output.hidden_states[early_layer]
    states = torch.cat([late[:, :1], early[:, 1:]], 1)
    for layer in objective.condenser_head:
        states = reference_layer(layer, states, batch["attention_mask"], encoder.config.num_attention_heads)
    embeddings = encoder.get_input_embeddings().weight
    return {"condenser_mlm": reference_mlm(objective.mlm_head, embeddings, states, batch["labels"]),
            "mlm": reference_mlm(objective.mlm_head, embeddings, late, batch["labels"])}


def test_registered_with_the_papers_defaults():
    assert OBJECTIVES.get("condenser") is Condenser
    config = CondenserConfig()
    assert (config.head_layers, config.early_layer, config.late_mlm, config.mask_probability) == (2, None, True, 0.15)
    with pytest.raises(ValueError, match="head_layers"):
        CondenserConfig(head_layers=0)
    assert Condenser.config_class.trained_representation and Condenser.new_parts == ("Condenser head",)


@pytest.mark.parametrize(("layers", "early_layer", "expected"), [(4, None, 2), (12, None, 6), (4, 1, 1)])
def test_loss_on_fixed_masks_matches_the_papers_equations(tokenizer, examples, layers, early_layer, expected):
    objective = make_objective(tokenizer, layers=layers, early_layer=early_layer)
    assert objective.early_layer == expected  # the middle layer by default: 6 of 12 as in the paper
    torch.manual_seed(1)
    batch = objective.collate(examples)
    assert set(batch) == set(inspect.signature(objective.forward).parameters)
    output = objective(**batch)
    reference = reference_condenser_loss(objective, batch, expected)
    assert set(output.parts) == {"condenser_mlm", "mlm"}
    for name, value in reference.items():
        torch.testing.assert_close(output.parts[name], value, atol=1e-5, rtol=0)
    torch.testing.assert_close(output.loss, reference["condenser_mlm"] + reference["mlm"], atol=1e-5, rtol=0)


def test_the_head_sees_the_late_layer_only_through_cls(tokenizer, examples):
    objective = make_objective(tokenizer, late_mlm=False)
    captured = {}
    objective.encoder.register_forward_hook(lambda module, args, output: captured.update(states=output.last_hidden_state))
    output = objective(**objective.collate(examples))
    assert set(output.parts) == {"condenser_mlm"}
    (gradient,) = torch.autograd.grad(output.loss, captured["states"])  # (B, T, H)
    assert gradient[:, 0].abs().sum(-1).min() > 0 and torch.count_nonzero(gradient[:, 1:]) == 0


def test_gradients_reach_backbone_head_and_mlm_head(tokenizer, examples):
    objective = make_objective(tokenizer).train()
    objective(**objective.collate(examples)).loss.backward()
    for name, parameter in objective.named_parameters():
        if "pooler" not in name:
            assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_recipe_runs_from_the_seedr_base_and_saves_a_sentence_transformer(wiki_shard, tmp_path):
    from sentence_transformers import SentenceTransformer

    out = tmp_path / "condenser"
    last, output = pretrain_tiny("condenser", wiki_shard, out)
    assert "Condenser head: new, from random weights" in output
    assert last["step"] == 2 and last["loss"] == pytest.approx(last["mlm"] + last["condenser_mlm"], rel=1e-5)
    model = SentenceTransformer(str(out / "encoder"), device="cpu")
    assert model.encode(["Anarchism is a political philosophy."]).shape == (1, 256)
    modules = json.loads((out / "encoder" / "1_Pooling" / "config.json").read_text())
    assert modules["pooling_mode_cls_token"] is True
    assert not any("condenser_head" in name for name in model.state_dict())
    # a run from this run's encoder takes its Condenser head too (coCondenser's warm start)
    from seedr.api import resolve_settings
    from seedr.training.pretrain import build_objective

    objective, _ = build_objective(resolve_settings("pretrain", objective="condenser", model=str(out / "encoder")))
    assert objective.condenser_head_loaded and objective.head_loaded
    assert not any(line.startswith("Condenser head") for line in objective.changes(str(out / "encoder")))
