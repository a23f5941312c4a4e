"""SEED-Encoder objective: the weak decoder's information bottleneck ([CLS] only), its exact receptive
field, banded == dense attention, linear memory, and the losses on real Wikipedia text."""

from __future__ import annotations

import inspect

import pytest
import torch
from helpers import tiny_bert, wiki_token_ids
from safetensors import safe_open
from torch.utils._python_dispatch import TorchDispatchMode

from seedr.config import from_dict
from seedr.modeling.weak_decoder import WeakDecoder, banded_attention, dense_attention
from seedr.objectives import OBJECTIVES
from seedr.objectives.seed import SeedConfig, SeedEncoder


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
def test_finite_losses_and_gradients_reach_encoder_and_decoder(tokenizer, examples, span):
    objective = make_objective(tokenizer, attention_span=span, decoder_weight=0.5)
    output = objective(**objective.collate(examples))
    assert set(output.parts) == {"mlm", "weak_decoder"}
    assert all(torch.isfinite(part) for part in output.parts.values())
    torch.testing.assert_close(output.loss, output.parts["mlm"] + output.parts["weak_decoder"])
    output.loss.backward()
    for name, parameter in [*objective.encoder.named_parameters(), *objective.decoder.named_parameters()]:
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_decoder_sees_the_encoder_only_through_cls(tokenizer, examples):
    objective = make_objective(tokenizer)
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


@pytest.mark.parametrize(("layers", "span"), [(1, 2), (3, 2), (2, 3)])
def test_receptive_field_is_exactly_layers_times_span_minus_one_plus_one(tokenizer, examples, layers, span):
    encoder_config = tiny_bert(tokenizer).config
    torch.manual_seed(1)
    decoder = WeakDecoder(encoder_config, num_layers=layers, attention_span=span).eval()
    input_ids = torch.tensor([examples[0][:20]])
    position = 15  # predicts the token at 16; sees only 15 − L(k−1) … 15
    reached = reachable_positions(decoder, input_ids, position, replacement=len(tokenizer) - 1)
    assert reached == set(range(position - layers * (span - 1), position + 1))


def test_full_attention_sees_the_whole_prefix_and_never_the_future(tokenizer, examples):
    torch.manual_seed(1)
    decoder = WeakDecoder(tiny_bert(tokenizer).config, num_layers=3, attention_span=None).eval()
    input_ids = torch.tensor([examples[1][:20]])
    assert reachable_positions(decoder, input_ids, 12, replacement=len(tokenizer) - 1) == set(range(13))


def masked_softmax_attention(query, key, value, cls_key, cls_value, span):
    """Independent oracle: softmax over [CLS] and the allowed positions of an explicit score matrix."""
    length = query.shape[2]
    keys, values = torch.cat([cls_key, key], 2), torch.cat([cls_value, value], 2)
    scores = query @ keys.transpose(2, 3) / query.shape[-1] ** 0.5  # (B, h, T, T+1)
    t, j = torch.arange(length).unsqueeze(1), torch.arange(length).unsqueeze(0)
    allowed = torch.cat([torch.ones(length, 1, dtype=torch.bool), (t - j >= 0) & (t - j < span)], 1)
    return scores.masked_fill(~allowed, float("-inf")).softmax(-1) @ values


@pytest.mark.parametrize(("length", "span"), [(1, 2), (7, 1), (7, 2), (33, 4), (10, 64)])
def test_banded_attention_equals_naive_masked_attention(length, span):
    generator = torch.Generator().manual_seed(length * 100 + span)
    query, key, value = (torch.randn(2, 3, length, 8, generator=generator) for _ in range(3))
    cls_key, cls_value = (torch.randn(2, 3, 1, 8, generator=generator) for _ in range(2))
    banded = banded_attention(query, key, value, cls_key, cls_value, span)
    torch.testing.assert_close(banded, masked_softmax_attention(query, key, value, cls_key, cls_value, span))
    torch.testing.assert_close(banded, dense_attention(query, key, value, cls_key, cls_value, span))


def test_banded_and_dense_decoders_agree_in_values_and_gradients(tokenizer, examples):
    config = tiny_bert(tokenizer).config
    torch.manual_seed(2)
    banded = WeakDecoder(config, attention_span=2, implementation="banded").eval()
    dense = WeakDecoder(config, attention_span=2, implementation="dense").eval()
    dense.load_state_dict(banded.state_dict())
    input_ids = torch.tensor([example[:24] for example in examples[:4]])
    cls_vector = torch.randn(4, config.hidden_size, requires_grad=True)
    embeddings = torch.randn(config.vocab_size, config.hidden_size)
    outputs = [decoder(input_ids, cls_vector, embeddings) for decoder in (banded, dense)]
    torch.testing.assert_close(outputs[0], outputs[1])
    gradients = [torch.autograd.grad(output.square().sum(), cls_vector)[0] for output in outputs]
    torch.testing.assert_close(gradients[0], gradients[1])


class LargestTensor(TorchDispatchMode):
    """Records the largest number of elements of any tensor an operation produces."""

    largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        for tensor in result if isinstance(result, tuple | list) else (result,):
            if isinstance(tensor, torch.Tensor):
                self.largest = max(self.largest, tensor.numel())
        return result


def test_banded_attention_never_builds_a_length_squared_tensor():
    length, span = 2048, 2
    query, key, value = (torch.randn(1, 1, length, 4, requires_grad=True) for _ in range(3))
    cls_key, cls_value = torch.randn(1, 1, 1, 4), torch.randn(1, 1, 1, 4)
    with LargestTensor() as tracker:
        banded_attention(query, key, value, cls_key, cls_value, span).sum().backward()
    assert tracker.largest <= length * 4 * (span + 1)  # linear: a few (T, d) or (T, span+1) tensors
    with LargestTensor() as tracker:
        dense_attention(query, key, value, cls_key, cls_value, span)
    assert tracker.largest >= length * length  # the reference does build the full mask


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
