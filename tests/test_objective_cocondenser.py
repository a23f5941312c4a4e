"""coCondenser: span sampling on a fixed generator, the loss on fixed spans and masks against a
re-implementation written from the paper, and `seedr pretrain --config cocondenser` end to end."""

from __future__ import annotations

import inspect
import json

import pytest
import torch
from helpers import tiny_bert, wiki_token_ids
from test_objective_condenser import reference_condenser_loss

from seedr.objectives import OBJECTIVES
from seedr.objectives.cocondenser.objective import CoCondenser, span_bounds
from seedr.objectives.cocondenser.options import CoCondenserConfig
from tests.helpers import pretrain_tiny


@pytest.fixture(scope="module")
def examples(wiki_shard, tokenizer):
    return wiki_token_ids(wiki_shard, tokenizer, count=5, max_length=60)


def make_objective(tokenizer, **options) -> CoCondenser:
    torch.manual_seed(0)
    return CoCondenser(tiny_bert(tokenizer, num_hidden_layers=4), tokenizer, CoCondenserConfig(**options)).eval()


def reference_span_contrast(cls_vectors: torch.Tensor, temperature: float) -> torch.Tensor:
    """L^co averaged over the 2n spans ordered [s_11 … s_n1, s_12 … s_n2]: each span's positive is the other
    span of its document, its candidates every span but itself, scored by ⟨h, h'⟩ / temperature."""
    count = len(cls_vectors)
    losses = []
    for i in range(count):
        twin = (i + count // 2) % count
        scores = [cls_vectors[i] @ cls_vectors[k] / temperature for k in range(count) if k != i]
        losses.append(torch.logsumexp(torch.stack(scores), 0) - cls_vectors[i] @ cls_vectors[twin] / temperature)
    return torch.stack(losses).mean()


def test_registered_with_the_papers_defaults():
    assert OBJECTIVES.get("cocondenser") is CoCondenser
    config = CoCondenserConfig()
    assert (config.head_layers, config.late_mlm, config.temperature, config.contrastive_weight) == (2, True, 1.0, 1.0)
    assert config.global_in_batch and config.span_length == 128
    with pytest.raises(ValueError, match="temperature"):
        CoCondenserConfig(temperature=0)


def test_span_bounds_cut_the_text_into_at_least_two_chunks_of_at_most_span_length():
    assert span_bounds(10, 128) == [(0, 5), (5, 10)]
    assert span_bounds(9, 4) == [(0, 3), (3, 6), (6, 9)]
    assert span_bounds(510, 128) == [(0, 128), (128, 255), (255, 382), (382, 510)]
    assert span_bounds(1, 128) == [(0, 1)] and span_bounds(3, 1) == [(0, 1), (1, 2), (2, 3)]


def test_spans_are_two_distinct_chunks_of_the_same_text_drawn_by_the_generator(tokenizer, examples):
    objective = make_objective(tokenizer, span_length=16)
    pairs = objective.draw_spans(examples, torch.Generator().manual_seed(3))
    assert pairs == objective.draw_spans(examples, torch.Generator().manual_seed(3))
    assert pairs != objective.draw_spans(examples, torch.Generator().manual_seed(4))
    for example, (first, second) in zip(examples, pairs, strict=True):
        content = example[1:-1]
        chunks = [content[start:end] for start, end in span_bounds(len(content), 16)]
        for span in (first, second):
            assert span[0] == tokenizer.cls_token_id and span[-1] == tokenizer.sep_token_id
            assert span[1:-1] in chunks and len(span) - 2 <= 16
        assert first != second
    drawn = {tuple(objective.draw_spans(examples[:1], torch.Generator().manual_seed(seed))[0][0])
             for seed in range(40)}
    assert len(drawn) == len(span_bounds(len(examples[0]) - 2, 16))  # every chunk can be drawn


def test_loss_on_fixed_spans_and_masks_matches_the_papers_equations(tokenizer, examples):
    objective = make_objective(tokenizer, span_length=20, temperature=0.5)
    pairs = objective.draw_spans(examples, torch.Generator().manual_seed(0))
    torch.manual_seed(1)
    batch = objective.collate_spans(pairs)
    assert set(batch) == set(inspect.signature(objective.forward).parameters)
    assert batch["input_ids"].shape[0] == 2 * len(examples)
    output = objective(**batch)
    reference = reference_condenser_loss(objective, batch, early_layer=2)
    late_cls = objective.encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state[:, 0]
    reference["span_contrastive"] = reference_span_contrast(late_cls, 0.5)
    assert set(output.parts) == set(reference)
    for name, value in reference.items():
        torch.testing.assert_close(output.parts[name], value, atol=1e-5, rtol=0)
    torch.testing.assert_close(output.loss, sum(reference.values()), atol=1e-5, rtol=0)


def test_gradients_of_the_contrast_reach_the_backbone_through_cls_only(tokenizer, examples):
    objective = make_objective(tokenizer, span_length=20)
    captured = {}
    objective.encoder.register_forward_hook(lambda module, args, output: captured.update(states=output.last_hidden_state))
    output = objective(**objective.collate(examples))
    (gradient,) = torch.autograd.grad(output.parts["span_contrastive"], captured["states"])  # (2n, T, H)
    assert gradient[:, 0].abs().sum(-1).min() > 0 and torch.count_nonzero(gradient[:, 1:]) == 0


def test_recipe_runs_from_the_seedr_base_and_saves_a_sentence_transformer(wiki_shard, tmp_path):
    from sentence_transformers import SentenceTransformer

    out = tmp_path / "cocondenser"
    last, _ = pretrain_tiny("cocondenser", wiki_shard, out,
                            **{"data.max_seq_length": 64, "objective.span_length": 24})
    assert last["step"] == 2
    assert last["loss"] == pytest.approx(last["mlm"] + last["condenser_mlm"] + last["span_contrastive"], rel=1e-5)
    model = SentenceTransformer(str(out / "encoder"), device="cpu")
    assert model.encode(["Anarchism is a political philosophy."]).shape == (1, 256)
    assert json.loads((out / "encoder" / "1_Pooling" / "config.json").read_text())["pooling_mode_cls_token"] is True
