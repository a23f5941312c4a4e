"""SEED-Encoder objective: the weak decoder's information bottleneck ([CLS] only), its exact receptive
field, banded == dense attention, linear memory, and the losses on real Wikipedia text."""

from __future__ import annotations

import inspect
import json

import pytest
import torch
from helpers import LargestTensor, tiny_bert, wiki_token_ids
from safetensors import safe_open

from seedr.config.loading import from_dict
from seedr.objectives import OBJECTIVES
from seedr.objectives.seed.objective import SeedEncoder
from seedr.objectives.seed.options import SeedConfig
from seedr.objectives.seed.weak_decoder import WeakDecoder, banded_attention, dense_attention


@pytest.fixture(scope="module")
def examples(wiki_shard, tokenizer):
    return wiki_token_ids(wiki_shard, tokenizer, count=16, max_length=48)


def make_objective(tokenizer, **options) -> SeedEncoder:
    torch.manual_seed(0)
    return SeedEncoder(tiny_bert(tokenizer), tokenizer, SeedConfig(**options))


def test_registered_with_paper_defaults_and_validated_options():
    assert OBJECTIVES.get("seed") is SeedEncoder
    config = SeedConfig()
    assert (config.decoder_layers, config.attention_span, config.decoder_weight, config.decoder_dropout) == (3, 2, 1.0, 0.1)
    # The authors' released decoder: cross-attention to [CLS], pre-LN; the decoder reads [CLS].
    assert (config.cls_path, config.pre_layer_norm, config.bottleneck) == ("cross_attention", True, "cls")
    with pytest.raises(ValueError, match="cls_path"):
        SeedConfig(cls_path="prefix")
    with pytest.raises(ValueError, match="bottleneck"):
        SeedConfig(bottleneck="max")
    assert from_dict(SeedConfig, {"attention_span": "all"}).span is None
    assert from_dict(SeedConfig, {"attention_span": "5"}).span == 5
    with pytest.raises(ValueError, match="attention_span"):
        SeedConfig(attention_span="wide")
    with pytest.raises(ValueError, match="attention_span"):
        SeedConfig(attention_span=0)


def test_collate_gives_masked_encoder_input_and_clean_decoder_input(tokenizer, examples):
    objective = make_objective(tokenizer)
    batch = objective.collate(examples)
    assert set(batch) == set(inspect.signature(objective.forward).parameters)
    clean, _ = objective.pad(examples)
    assert torch.equal(batch["decoder_input_ids"], clean)
    assert (batch["input_ids"] == tokenizer.mask_token_id).any()
    assert not (batch["decoder_input_ids"] == tokenizer.mask_token_id).any()


@pytest.mark.parametrize("span", [2, "all"])
@pytest.mark.parametrize(("cls_path", "pre_layer_norm"), [("cross_attention", True), ("joint", False)])
def test_finite_losses_and_gradients_reach_encoder_and_decoder(tokenizer, examples, span, cls_path, pre_layer_norm):
    objective = make_objective(tokenizer, attention_span=span, decoder_weight=0.5, cls_path=cls_path,
                               pre_layer_norm=pre_layer_norm)
    output = objective(**objective.collate(examples))
    assert set(output.parts) == {"mlm", "weak_decoder"}
    assert all(torch.isfinite(part) for part in output.parts.values())
    torch.testing.assert_close(output.loss, output.parts["mlm"] + output.parts["weak_decoder"])
    output.loss.backward()
    for name, parameter in [*objective.encoder.named_parameters(), *objective.decoder.named_parameters()]:
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


@pytest.mark.parametrize("pre_layer_norm", [True, False])
@pytest.mark.parametrize("cls_path", ["cross_attention", "joint"])
def test_decoder_sees_the_encoder_only_through_cls(tokenizer, examples, cls_path, pre_layer_norm):
    objective = make_objective(tokenizer, cls_path=cls_path, pre_layer_norm=pre_layer_norm)
    captured = {}
    objective.encoder.register_forward_hook(lambda module, args, output: captured.update(states=output.last_hidden_state))
    output = objective(**objective.collate(examples))
    (gradient,) = torch.autograd.grad(output.parts["weak_decoder"], captured["states"])  # (B, T, H)
    assert gradient[:, 0].abs().sum(-1).min() > 0, "every sequence's [CLS] must receive decoder gradient"
    assert torch.count_nonzero(gradient[:, 1:]) == 0


def reachable_positions(decoder: WeakDecoder, input_ids: torch.Tensor, position: int, replacement: int) -> set[int]:
    """Positions j whose token, when replaced, changes the decoder output at ``position``.

    Weights are redrawn larger than BERT's N(0, 0.02) so that an influence across several layers is
    well above rounding; outside the field the output must be bit-identical.
    """
    for parameter in decoder.parameters():
        if parameter.dim() == 2:
            torch.nn.init.normal_(parameter, std=0.3)
    cls_vector = torch.randn(1, decoder.position_embeddings.embedding_dim)
    word_embeddings = torch.randn(replacement + 1, decoder.position_embeddings.embedding_dim)
    with torch.no_grad():
        reference = decoder(input_ids, cls_vector, word_embeddings)[0, position]
        reached = set()
        for j in range(input_ids.shape[1]):
            changed = input_ids.clone()
            changed[0, j] = replacement
            if not torch.equal(decoder(changed, cls_vector, word_embeddings)[0, position], reference):
                reached.add(j)
    return reached


@pytest.mark.parametrize("pre_layer_norm", [True, False])
@pytest.mark.parametrize("cls_path", ["cross_attention", "joint"])
@pytest.mark.parametrize(("layers", "span"), [(1, 2), (3, 2), (2, 3)])
def test_receptive_field_is_exactly_layers_times_span_minus_one_plus_one(tokenizer, examples, layers, span,
                                                                          cls_path, pre_layer_norm):
    encoder_config = tiny_bert(tokenizer).config
    torch.manual_seed(1)
    decoder = WeakDecoder(encoder_config, num_layers=layers, attention_span=span, cls_path=cls_path,
                          pre_layer_norm=pre_layer_norm).eval()
    input_ids = torch.tensor([examples[0][:20]])
    position = 15  # predicts the token at 16; sees only 15 − L(k−1) … 15 (and the start token 0 if released)
    reached = reachable_positions(decoder, input_ids, position, replacement=len(tokenizer) - 1)
    window = set(range(position - layers * (span - 1), position + 1))
    assert reached == (window | {0} if cls_path == "cross_attention" else window)


def test_full_attention_sees_the_whole_prefix_and_never_the_future(tokenizer, examples):
    torch.manual_seed(1)
    decoder = WeakDecoder(tiny_bert(tokenizer).config, num_layers=3, attention_span=None).eval()
    input_ids = torch.tensor([examples[1][:20]])
    assert reachable_positions(decoder, input_ids, 12, replacement=len(tokenizer) - 1) == set(range(13))


def masked_softmax_attention(query, key, value, cls_key, cls_value, span, sees_first):
    """Independent oracle: softmax over [CLS] (if given) and the allowed positions of an explicit score
    matrix; position 0 allowed for every query when ``sees_first``."""
    length = query.shape[2]
    t, j = torch.arange(length).unsqueeze(1), torch.arange(length).unsqueeze(0)
    allowed = ((t - j >= 0) & (t - j < span)) | ((j == 0) & sees_first)  # (T, T)
    if cls_key is not None:
        key, value = torch.cat([cls_key, key], 2), torch.cat([cls_value, value], 2)
        allowed = torch.cat([torch.ones(length, 1, dtype=torch.bool), allowed], 1)
    scores = query @ key.transpose(2, 3) / query.shape[-1] ** 0.5  # (B, h, T, T[+1])
    return scores.masked_fill(~allowed, float("-inf")).softmax(-1) @ value


@pytest.mark.parametrize(("with_cls", "sees_first"), [(True, False), (False, True), (True, True), (False, False)])
@pytest.mark.parametrize(("length", "span"), [(1, 2), (7, 1), (7, 2), (33, 4), (10, 64)])
def test_banded_attention_equals_naive_masked_attention(length, span, with_cls, sees_first):
    generator = torch.Generator().manual_seed(length * 100 + span)
    query, key, value = (torch.randn(2, 3, length, 8, generator=generator) for _ in range(3))
    cls_key, cls_value = (torch.randn(2, 3, 1, 8, generator=generator) for _ in range(2))
    if not with_cls:
        cls_key = cls_value = None
    banded = banded_attention(query, key, value, span, cls_key, cls_value, sees_first)
    torch.testing.assert_close(banded, masked_softmax_attention(query, key, value, cls_key, cls_value, span, sees_first))
    torch.testing.assert_close(banded, dense_attention(query, key, value, span, cls_key, cls_value, sees_first))


@pytest.mark.parametrize(("cls_path", "pre_layer_norm"), [("cross_attention", True), ("joint", False)])
def test_banded_and_dense_decoders_agree_in_values_and_gradients(tokenizer, examples, cls_path, pre_layer_norm):
    config = tiny_bert(tokenizer).config
    torch.manual_seed(2)
    options = {"attention_span": 2, "cls_path": cls_path, "pre_layer_norm": pre_layer_norm}
    banded = WeakDecoder(config, implementation="banded", **options).eval()
    dense = WeakDecoder(config, implementation="dense", **options).eval()
    dense.load_state_dict(banded.state_dict())
    input_ids = torch.tensor([example[:24] for example in examples[:4]])
    cls_vector = torch.randn(4, config.hidden_size, requires_grad=True)
    embeddings = torch.randn(config.vocab_size, config.hidden_size)
    outputs = [decoder(input_ids, cls_vector, embeddings) for decoder in (banded, dense)]
    torch.testing.assert_close(outputs[0], outputs[1])
    gradients = [torch.autograd.grad(output.square().sum(), cls_vector)[0] for output in outputs]
    torch.testing.assert_close(gradients[0], gradients[1])


@pytest.mark.parametrize("cls_path", ["cross_attention", "joint"])
def test_banded_attention_never_builds_a_length_squared_tensor(cls_path):
    length, span = 2048, 2
    query, key, value = (torch.randn(1, 1, length, 4, requires_grad=True) for _ in range(3))
    cls_key, cls_value = torch.randn(1, 1, 1, 4), torch.randn(1, 1, 1, 4)
    # The joint path adds [CLS] as an extra key; the released path adds position 0 to every window.
    extras = (cls_key, cls_value, False) if cls_path == "joint" else (None, None, True)
    with LargestTensor() as tracker:
        banded_attention(query, key, value, span, *extras).sum().backward()
    assert tracker.largest <= length * 4 * (span + 1)  # linear: a few (T, d) or (T, span+1) tensors
    with LargestTensor() as tracker:
        dense_attention(query, key, value, span, *extras)
    assert tracker.largest >= length * length  # the reference does build the full mask


def test_released_decoder_has_cross_attention_and_pre_layer_norm(tokenizer):
    config = tiny_bert(tokenizer).config
    released = WeakDecoder(config)
    assert all(layer.cross_attention is not None and layer.pre_layer_norm for layer in released.layers)
    assert released.final_norm is not None
    joint = WeakDecoder(config, cls_path="joint", pre_layer_norm=False)
    assert all(layer.cross_attention is None for layer in joint.layers) and joint.final_norm is None


@pytest.mark.parametrize("objective_name", ["seed", "cpdae"])
def test_mean_bottleneck_reads_every_position_and_is_saved_as_the_pooling(tokenizer, examples, tmp_path,
                                                                          objective_name):
    torch.manual_seed(0)
    objective = OBJECTIVES.get(objective_name)(tiny_bert(tokenizer), tokenizer,
                                               OBJECTIVES.get(objective_name).config_class(bottleneck="mean"))
    captured = {}
    objective.encoder.register_forward_hook(lambda module, args, output: captured.update(states=output.last_hidden_state))
    batch = objective.collate(examples[:4])
    output = objective(**batch)
    decoder_part = output.parts["weak_decoder" if objective_name == "seed" else "bow_bce"]
    (gradient,) = torch.autograd.grad(decoder_part, captured["states"])  # (B, T, H)
    real = batch["attention_mask"].bool()
    assert (gradient.abs().sum(-1)[real] > 0).all()  # every real position feeds the bottleneck
    assert torch.count_nonzero(gradient[~real]) == 0  # padding never does
    objective.save_encoder(tmp_path / "encoder")
    pooling = json.loads((tmp_path / "encoder" / "1_Pooling" / "config.json").read_text())
    assert pooling["pooling_mode_mean_tokens"] and not pooling["pooling_mode_cls_token"]


def test_untied_decoder_owns_its_embeddings(tokenizer, examples):
    objective = make_objective(tokenizer, tie_embeddings=False)
    assert objective.decoder.word_embeddings is not None
    output = objective(**objective.collate(examples[:4]))
    output.loss.backward()
    assert objective.decoder.output_projection.weight.grad.abs().sum() > 0


def test_only_the_encoder_is_saved(tokenizer, tmp_path):
    objective = make_objective(tokenizer)
    objective.save_encoder(tmp_path / "encoder")
    with safe_open(str(tmp_path / "encoder" / "model.safetensors"), framework="pt") as tensors:
        names = list(tensors.keys())
    assert names and not any("decoder" in name or "mlm_head" in name for name in names)
