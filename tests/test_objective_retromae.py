"""RetroMAE objective: enhanced decoding's attention masks M, its loss (MLM + enhanced decoding) against the equations written
out here on fixed masks, the decoder's view of the encoder ([CLS] alone), and `seedr pretrain --config
retromae` from seedr-base on real Wikipedia text."""

from __future__ import annotations

import inspect
import json
import math

import pytest
import torch
from helpers import pretrain_tiny, sharpen, tiny_bert, wiki_token_ids
from safetensors import safe_open
from torch.nn import functional as F

from seedr.objectives import OBJECTIVES
from seedr.objectives.masking import IGNORE_INDEX
from seedr.objectives.retromae.objective import RetroMae
from seedr.objectives.retromae.options import RetroMaeConfig


@pytest.fixture(scope="module")
def examples(wiki_shard, tokenizer):
    return wiki_token_ids(wiki_shard, tokenizer, count=6, max_length=40)


def make_objective(tokenizer, **options) -> RetroMae:
    torch.manual_seed(0)
    return RetroMae(tiny_bert(tokenizer), tokenizer, RetroMaeConfig(**options))


def test_registered_with_the_released_defaults():
    assert OBJECTIVES.get("retromae") is RetroMae
    config = RetroMaeConfig()
    assert (config.mask_probability, config.decoder_mask_probability, config.decoder_weight) == (0.3, 0.5, 1.0)
    with pytest.raises(ValueError, match="decoder_mask_probability"):
        RetroMaeConfig(decoder_mask_probability=1.0)


def test_each_row_sees_the_first_position_never_itself_nor_padding_and_half_the_rest(tokenizer, examples):
    objective = make_objective(tokenizer)
    batch = objective.collate(examples)
    assert set(batch) == set(inspect.signature(objective.forward).parameters)
    visible, real = batch["decoder_visibility"], batch["attention_mask"].bool()
    assert not visible.diagonal(dim1=1, dim2=2).any()
    assert not (visible & ~real.unsqueeze(1)).any()
    for row, example in enumerate(examples):
        length = len(example)
        assert visible[row, 1:length, 0].all() and visible[row, :length - 1, length - 1].all()  # [CLS], [SEP]
        words = length - 2
        hidden = (~visible[row, 1:length - 1, 1:length - 1]).sum(1)  # per non-special row
        sample = max(1, round(words * 0.5))  # BERT's exact count; the row's own token is hidden besides
        assert ((hidden == sample) | (hidden == sample + 1)).all()
    rows = visible[0, 1:len(examples[0]) - 1]
    assert len({tuple(row.tolist()) for row in rows}) > 1, "every row draws its own sample"
    labels = batch["decoder_labels"]
    for row, example in enumerate(examples):
        assert labels[row, 0] == IGNORE_INDEX and labels[row, len(example) - 1] == IGNORE_INDEX
        assert labels[row, 1:len(example) - 1].tolist() == example[1:-1]
    again = objective.draw_visibility(batch["decoder_input_ids"], batch["attention_mask"],
                                      generator=torch.Generator().manual_seed(3))
    assert torch.equal(again, objective.draw_visibility(batch["decoder_input_ids"], batch["attention_mask"],
                                                        generator=torch.Generator().manual_seed(3)))


def retromae_loss_by_hand(objective: RetroMae, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """MLM and enhanced decoding from the weights: the query stream h + p_i, the content stream [h, e_{x_j} + p_j]
    (through the embeddings' LayerNorm, as the released code), one post-LN BERT layer under the masks M,
    and the MLM head's cross-entropy at the targets."""
    encoder, config = objective.encoder, objective.encoder.config
    weights = {**{f"encoder.{k}": v for k, v in encoder.state_dict().items()},
               **{f"decoder.{k}": v for k, v in objective.decoder.state_dict().items()},
               **{f"head.{k}": v for k, v in objective.mlm_head.state_dict().items()}}
    eps, heads = config.layer_norm_eps, config.num_attention_heads

    def linear(x, name):
        return x @ weights[f"{name}.weight"].T + weights[f"{name}.bias"]

    def norm(x, name):
        return F.layer_norm(x, x.shape[-1:], weights[f"{name}.weight"], weights[f"{name}.bias"], eps)

    def negative_log_likelihood(states, labels):
        targets = labels != IGNORE_INDEX
        transformed = norm(F.gelu(linear(states[targets], "head.dense")), "head.LayerNorm")
        logits = transformed @ weights["encoder.embeddings.word_embeddings.weight"].T + weights["head.bias"]
        return -logits.log_softmax(-1).gather(1, labels[targets].unsqueeze(1)).mean()

    states = encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    mlm = negative_log_likelihood(states, batch["labels"])
    sentence = states[:, :1]  # (B, 1, H): h_X̃
    clean = batch["decoder_input_ids"]
    batch_size, length = clean.shape
    positions = weights["encoder.embeddings.position_embeddings.weight"][:length]  # (T, H)
    tokens = norm(weights["encoder.embeddings.word_embeddings.weight"][clean] + positions
                  + weights["encoder.embeddings.token_type_embeddings.weight"][0], "encoder.embeddings.LayerNorm")
    content = torch.cat([sentence, tokens[:, 1:]], 1)  # H2
    query = sentence + positions  # H1

    def split(x):
        return x.view(batch_size, length, heads, -1).transpose(1, 2)

    q = split(linear(query, "decoder.attention.self.query"))
    k, v = split(linear(content, "decoder.attention.self.key")), split(linear(content, "decoder.attention.self.value"))
    scores = q @ k.transpose(2, 3) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~batch["decoder_visibility"].unsqueeze(1), float("-inf"))  # M of enhanced decoding
    attended = (scores.softmax(-1) @ v).transpose(1, 2).reshape(batch_size, length, -1)
    x = norm(query + linear(attended, "decoder.attention.output.dense"), "decoder.attention.output.LayerNorm")
    y = norm(x + linear(F.gelu(linear(x, "decoder.intermediate.dense")), "decoder.output.dense"),
             "decoder.output.LayerNorm")
    return mlm, negative_log_likelihood(y, batch["decoder_labels"])


def test_loss_is_mlm_plus_enhanced_decoding_written_out(tokenizer, examples):
    objective = make_objective(tokenizer).eval()
    sharpen(objective)
    torch.manual_seed(11)  # fixed masks: drawn once, fed to both
    batch = objective.collate(examples)
    with torch.no_grad():
        output = objective(**batch)
        mlm, decoder = retromae_loss_by_hand(objective, batch)
    assert abs(output.parts["mlm"].item() - mlm.item()) < 1e-5
    assert abs(output.parts["decoder"].item() - decoder.item()) < 1e-5
    assert abs(output.loss.item() - (mlm + decoder).item()) < 1e-5


def test_decoder_reads_the_encoder_only_through_cls_and_trains_the_shared_head(tokenizer, examples):
    objective = make_objective(tokenizer, decoder_weight=0.5)
    captured = {}
    objective.encoder.register_forward_hook(lambda module, args, output: captured.update(states=output.last_hidden_state))
    output = objective(**objective.collate(examples))
    (gradient,) = torch.autograd.grad(output.parts["decoder"], captured["states"], retain_graph=True)  # (B, T, H)
    assert gradient[:, 0].abs().sum(-1).min() > 0 and torch.count_nonzero(gradient[:, 1:]) == 0
    output.parts["decoder"].backward()
    assert objective.mlm_head.dense.weight.grad.abs().sum() > 0  # the decoder predicts through the MLM head
    assert objective.decoder.attention.self.query.weight.grad.abs().sum() > 0


def test_pretrain_recipe_runs_from_seedr_base_and_saves_only_the_encoder(wiki_shard, tmp_path):
    out = tmp_path / "retromae"
    last, _ = pretrain_tiny("retromae", wiki_shard, out)
    assert last["step"] == 2 and last["loss"] == pytest.approx(last["mlm"] + last["decoder"], rel=1e-5)
    with safe_open(str(out / "encoder" / "model.safetensors"), framework="pt") as tensors:
        assert not any("decoder" in name or "mlm_head" in name for name in tensors.keys())  # noqa: SIM118
    assert json.loads((out / "encoder" / "1_Pooling" / "config.json").read_text())["pooling_mode_cls_token"]
    from sentence_transformers import SentenceTransformer

    embedding = SentenceTransformer(str(out / "encoder"), device="cpu").encode(["Anarchism is a philosophy."])
    assert embedding.shape == (1, 256)
