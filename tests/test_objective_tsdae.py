"""TSDAE objective: its deletions, its loss against sentence-transformers' DenoisingAutoEncoderLoss and
against J_TSDAE and the decoder's equations written out here, the decoder's view of the encoder ([CLS] alone), and `seedr pretrain
--config tsdae` from seedr-base on real Wikipedia text."""

from __future__ import annotations

import inspect
import json
import math

import pytest
import torch
from helpers import pretrain_tiny, sharpen, tiny_bert, wiki_token_ids
from safetensors import safe_open
from torch.nn import functional as F

from seedr.modeling.encoder import load_encoder, save_encoder
from seedr.objectives import OBJECTIVES
from seedr.objectives.masking import pad_token_ids
from seedr.objectives.tsdae.objective import Tsdae
from seedr.objectives.tsdae.options import TsdaeConfig


@pytest.fixture(scope="module")
def examples(wiki_shard, tokenizer):
    return wiki_token_ids(wiki_shard, tokenizer, count=6, max_length=40)


def make_objective(tokenizer, **options) -> Tsdae:
    torch.manual_seed(0)
    return Tsdae(tiny_bert(tokenizer), tokenizer, TsdaeConfig(**options))


def fixed_batch(objective: Tsdae, examples) -> dict[str, torch.Tensor]:
    """The collated batch with deletions drawn from a fixed generator."""
    clean, clean_mask = pad_token_ids(examples, objective.tokenizer.pad_token_id)
    kept = objective.draw_kept(clean, clean_mask, generator=torch.Generator().manual_seed(7))
    input_ids, attention_mask = objective.damaged(clean, kept)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "decoder_input_ids": clean,
            "decoder_attention_mask": clean_mask}


def test_registered_with_paper_defaults():
    assert OBJECTIVES.get("tsdae") is Tsdae
    assert (TsdaeConfig().deletion_ratio, TsdaeConfig().bottleneck, TsdaeConfig().tie_encoder_decoder) == (0.6, "cls", True)
    with pytest.raises(ValueError, match="deletion_ratio"):
        TsdaeConfig(deletion_ratio=1.0)


def test_deletion_keeps_specials_order_and_about_forty_percent(tokenizer, examples):
    objective = make_objective(tokenizer)
    batch = objective.collate(examples)
    assert set(batch) == set(inspect.signature(objective.forward).parameters)
    total = sum(len(example) - 2 for example in examples)
    kept = int(batch["attention_mask"].sum()) - 2 * len(examples)
    assert 0.25 * total < kept < 0.55 * total
    for row, example in enumerate(examples):
        damaged = batch["input_ids"][row][batch["attention_mask"][row].bool()].tolist()
        assert damaged[0] == example[0] and damaged[-1] == example[-1] and len(damaged) >= 3
        iterator = iter(example)
        assert all(token in iterator for token in damaged)  # a subsequence: deletion only, in order
    everything = make_objective(tokenizer, deletion_ratio=0.999).collate(examples)
    assert (everything["attention_mask"].sum(1) == 3).all()  # at least one token survives


def decoder_by_hand(weights: dict[str, torch.Tensor], sentence, input_ids, attention_mask, layers: int, heads: int,
                    eps: float) -> torch.Tensor:
    """Eq. 2-3 on BERT post-LN layers, written from the weights: causal self-attention over the clean prefix,
    an attention over the single memory ``s`` (its softmax is 1: the value of s), a GELU feed-forward."""
    def linear(x, name):
        return x @ weights[f"{name}.weight"].T + weights[f"{name}.bias"]

    def norm(x, name):
        return F.layer_norm(x, x.shape[-1:], weights[f"{name}.weight"], weights[f"{name}.bias"], eps)

    batch, length = input_ids.shape
    x = norm(weights["embeddings.word_embeddings.weight"][input_ids]
             + weights["embeddings.position_embeddings.weight"][:length]
             + weights["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    causal = torch.ones(length, length).tril().bool() & attention_mask.bool()[:, None, None, :]  # (B, 1, T, T)
    for index in range(layers):
        prefix = f"encoder.layer.{index}"
        split = [linear(x, f"{prefix}.attention.self.{p}").view(batch, length, heads, -1).transpose(1, 2)
                 for p in ("query", "key", "value")]
        scores = (split[0] @ split[1].transpose(2, 3) / math.sqrt(split[0].shape[-1])).masked_fill(~causal, -1e9)
        context = (scores.softmax(-1) @ split[2]).transpose(1, 2).reshape(batch, length, -1)
        x = norm(x + linear(context, f"{prefix}.attention.output.dense"), f"{prefix}.attention.output.LayerNorm")
        from_sentence = linear(linear(sentence, f"{prefix}.crossattention.self.value"),
                               f"{prefix}.crossattention.output.dense")  # (B, H): softmax over one key is 1
        x = norm(x + from_sentence[:, None], f"{prefix}.crossattention.output.LayerNorm")
        hidden = F.gelu(linear(x, f"{prefix}.intermediate.dense"))
        x = norm(x + linear(hidden, f"{prefix}.output.dense"), f"{prefix}.output.LayerNorm")
    return x


def test_loss_is_eq1_written_out(tokenizer, examples):
    objective = make_objective(tokenizer).eval()
    sharpen(objective)
    batch = fixed_batch(objective, examples)
    loss = objective(**batch).loss
    with torch.no_grad():
        sentence = objective.encoder(input_ids=batch["input_ids"],
                                     attention_mask=batch["attention_mask"]).last_hidden_state[:, 0]
        weights = {**objective.encoder.state_dict(), **objective.decoder.state_dict()}  # tied: the encoder's
        config = objective.encoder.config
        clean, mask = batch["decoder_input_ids"], batch["decoder_attention_mask"]
        states = decoder_by_hand(weights, sentence, clean[:, :-1], mask[:, :-1], config.num_hidden_layers,
                                 config.num_attention_heads, config.layer_norm_eps)
        head = objective.lm_head.state_dict()
        transformed = F.layer_norm(F.gelu(states @ head["dense.weight"].T + head["dense.bias"]),
                                   states.shape[-1:], head["LayerNorm.weight"], head["LayerNorm.bias"],
                                   config.layer_norm_eps)
        embeddings = objective.encoder.get_input_embeddings().weight  # h_tᵀ e_i of J_TSDAE, through BERT's head
        log_probabilities = (transformed @ embeddings.T + head["bias"]).log_softmax(-1)
        targets, real = clean[:, 1:], mask[:, 1:].bool()
        expected = -log_probabilities.gather(-1, targets.unsqueeze(-1)).squeeze(-1)[real].mean()
    assert abs(loss.item() - expected.item()) < 1e-5


def test_loss_equals_sentence_transformers_denoising_auto_encoder_loss(tokenizer, examples, tmp_path):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import DenoisingAutoEncoderLoss

    torch.manual_seed(0)
    encoder = tiny_bert(tokenizer)
    sharpen(encoder)
    save_encoder(encoder, tokenizer, tmp_path / "tiny", pooling="cls")
    model = SentenceTransformer(str(tmp_path / "tiny"), device="cpu")
    reference = DenoisingAutoEncoderLoss(model, tie_encoder_decoder=True).eval()
    for name, module in reference.decoder.named_modules():  # its own parts only: the rest is the encoder's
        if name.endswith("crossattention") or name == "cls.predictions.transform":
            sharpen(module)
    objective = Tsdae(load_encoder(tmp_path / "tiny"), tokenizer, TsdaeConfig()).eval()
    # the reference's new parts (cross-attention, head) drawn by it, copied into seedr's
    objective.decoder.load_state_dict(reference.decoder.bert.state_dict(), strict=False)
    predictions = reference.decoder.cls.predictions
    objective.lm_head.load_state_dict({"dense.weight": predictions.transform.dense.weight,
                                       "dense.bias": predictions.transform.dense.bias,
                                       "LayerNorm.weight": predictions.transform.LayerNorm.weight,
                                       "LayerNorm.bias": predictions.transform.LayerNorm.bias,
                                       "bias": predictions.bias})
    batch = fixed_batch(objective, examples)
    source = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"],
              "token_type_ids": torch.zeros_like(batch["input_ids"])}
    target = {"input_ids": batch["decoder_input_ids"], "attention_mask": batch["decoder_attention_mask"],
              "token_type_ids": torch.zeros_like(batch["decoder_input_ids"])}
    with torch.no_grad():
        expected = reference([source, target], labels=None)
        loss = objective(**batch).loss
    assert abs(loss.item() - expected.item()) < 1e-5


def test_decoder_reads_the_encoder_only_through_cls_and_shares_its_weights(tokenizer, examples):
    objective = make_objective(tokenizer)
    # tied: the decoder owns its cross-attention alone, and the checkpoint names every tensor once
    assert {name.split(".")[3] for name, _ in objective.decoder.named_parameters()} == {"crossattention"}
    storages = [tensor.untyped_storage().data_ptr() for tensor in objective.state_dict().values()]
    assert len(storages) == len(set(storages))
    captured = {}
    objective.encoder.register_forward_hook(lambda module, args, output: captured.update(states=output.last_hidden_state))
    output = objective(**objective.collate(examples))
    (gradient,) = torch.autograd.grad(output.loss, captured["states"])  # (B, T', H)
    assert gradient[:, 0].abs().sum(-1).min() > 0 and torch.count_nonzero(gradient[:, 1:]) == 0
    untied = make_objective(tokenizer, tie_encoder_decoder=False)
    assert untied.decoder.embeddings.word_embeddings.weight is not untied.encoder.embeddings.word_embeddings.weight
    untied(**untied.collate(examples)).loss.backward()
    assert untied.decoder.encoder.layer[0].attention.self.query.weight.grad.abs().sum() > 0


def test_pretrain_recipe_runs_from_seedr_base_and_saves_a_cls_encoder(wiki_shard, tmp_path):
    out = tmp_path / "tsdae"
    last, _ = pretrain_tiny("tsdae", wiki_shard, out)
    assert last["step"] == 2 and last["loss"] == pytest.approx(last["reconstruction"], rel=1e-5)
    with safe_open(str(out / "encoder" / "model.safetensors"), framework="pt") as tensors:
        assert not any("crossattention" in name or "cls." in name for name in tensors.keys())  # noqa: SIM118
    assert json.loads((out / "encoder" / "1_Pooling" / "config.json").read_text())["pooling_mode_cls_token"]
    from sentence_transformers import SentenceTransformer

    embedding = SentenceTransformer(str(out / "encoder"), device="cpu").encode(["Anarchism is a philosophy."])
    assert embedding.shape == (1, 256)
