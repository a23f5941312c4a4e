"""MLM objective: BERT masking statistics, targets-only logits, head loading, gradients — on real
Wikipedia text with a tiny BERT."""

from __future__ import annotations

import pytest
import torch
from helpers import tiny_bert, wiki_token_ids
from transformers import BertConfig, BertForMaskedLM

from seedr.config.loading import from_dict
from seedr.io import DataError
from seedr.modeling.encoder import load_encoder
from seedr.objectives import OBJECTIVES
from seedr.objectives.masking import IGNORE_INDEX, mask_tokens, special_tokens_mask
from seedr.objectives.mlm.objective import MaskedLanguageModel
from seedr.objectives.mlm.options import MLMConfig


@pytest.fixture(scope="module")
def examples(wiki_shard, tokenizer):
    return wiki_token_ids(wiki_shard, tokenizer, count=48, max_length=64)


@pytest.fixture()
def objective(tokenizer):
    torch.manual_seed(0)
    return MaskedLanguageModel(tiny_bert(tokenizer), tokenizer, MLMConfig())


def test_registered_with_a_documented_config():
    assert OBJECTIVES.get("mlm") is MaskedLanguageModel
    config = from_dict(MLMConfig, {"mask_probability": "0.2"})
    assert config.mask_probability == pytest.approx(0.2) and config.mlm_head_from is None


def test_masking_follows_bert_rates(objective, examples, tokenizer):
    input_ids, _ = objective.pad(examples)
    specials = special_tokens_mask(input_ids, tokenizer.all_special_ids)
    generator = torch.Generator().manual_seed(1)
    chosen = masked_share = random_share = kept_share = 0
    for _ in range(10):  # 10 draws over the same ~2,900 real tokens: ~4,400 targets in all
        masked, labels = mask_tokens(input_ids, specials, tokenizer.mask_token_id, len(tokenizer),
                                     generator=generator)
        targets = labels != IGNORE_INDEX
        chosen += int(targets.sum())
        masked_share += int((masked[targets] == tokenizer.mask_token_id).sum())
        kept_share += int((masked[targets] == input_ids[targets]).sum())
        random_share += int(((masked[targets] != tokenizer.mask_token_id)
                             & (masked[targets] != input_ids[targets])).sum())
        # Outside the targets nothing changes, and labels hold the original tokens at targets.
        assert torch.equal(masked[~targets], input_ids[~targets])
        assert torch.equal(labels[targets], input_ids[targets])
        assert not targets[specials].any(), "a special or padding token was chosen"
    candidates = int((~specials).sum()) * 10
    assert chosen / candidates == pytest.approx(0.15, abs=0.01)
    assert masked_share / chosen == pytest.approx(0.8, abs=0.03)
    assert random_share / chosen == pytest.approx(0.1, abs=0.02)
    assert kept_share / chosen == pytest.approx(0.1, abs=0.02)


def test_every_sequence_gets_an_exact_count_of_targets(objective, examples):
    batch = objective.collate(examples)
    targets = (batch["labels"] != IGNORE_INDEX).sum(1)
    non_special = torch.tensor([len(example) - 2 for example in examples])
    expected = torch.clamp(torch.round(non_special * 0.15), min=1)
    assert torch.equal(targets, expected.long())


def test_masking_is_reproducible_from_the_global_rng(objective, examples):
    torch.manual_seed(7)
    first = objective.collate(examples)
    torch.manual_seed(7)
    second = objective.collate(examples)
    assert all(torch.equal(first[key], second[key]) for key in first)
    assert set(first) == {"input_ids", "attention_mask", "labels"}


def test_logits_only_at_targets_equal_full_logits_gathered(objective, examples):
    objective.eval()
    batch = objective.collate(examples[:8])
    with torch.no_grad():
        states = objective.encoder(input_ids=batch["input_ids"],
                                   attention_mask=batch["attention_mask"]).last_hidden_state
        gathered = objective.mlm_logits(states, batch["labels"])
        full = objective.mlm_head(states, objective.encoder.get_input_embeddings().weight)  # (B, T, V)
    targets = batch["labels"] != IGNORE_INDEX
    assert gathered.shape == (int(targets.sum()), len(objective.tokenizer))
    torch.testing.assert_close(gathered, full[targets])


def test_finite_loss_and_gradients_reach_the_encoder(objective, examples):
    output = objective(**objective.collate(examples[:8]))
    assert set(output.parts) == {"mlm"} and torch.isfinite(output.loss)
    assert output.loss.item() == pytest.approx(torch.log(torch.tensor(len(objective.tokenizer))).item(), rel=0.1)
    output.loss.backward()
    for name, parameter in objective.encoder.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
    assert objective.mlm_head.dense.weight.grad.abs().sum() > 0


def test_head_is_loaded_from_a_masked_lm_checkpoint(tmp_path, tokenizer):
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64)
    torch.manual_seed(3)
    checkpoint = BertForMaskedLM(config)
    torch.nn.init.normal_(checkpoint.cls.predictions.bias)
    checkpoint.save_pretrained(tmp_path)
    objective = MaskedLanguageModel(load_encoder(tmp_path), tokenizer, MLMConfig())
    head = checkpoint.cls.predictions
    torch.testing.assert_close(objective.mlm_head.dense.weight, head.transform.dense.weight)
    torch.testing.assert_close(objective.mlm_head.LayerNorm.bias, head.transform.LayerNorm.bias)
    torch.testing.assert_close(objective.mlm_head.bias, head.bias)


def test_saved_head_makes_the_product_a_masked_lm_checkpoint(objective, tmp_path, tokenizer):
    """``save_head``: BertForMaskedLM loads the trained head from the product, and MLM continued from the
    product starts from it; without it the product holds the encoder alone."""
    torch.manual_seed(5)
    for parameter in objective.mlm_head.parameters():
        torch.nn.init.normal_(parameter)
    objective.save_encoder(tmp_path / "plain")
    objective.config.save_head = True
    objective.save_encoder(tmp_path / "with_head")
    masked_lm = BertForMaskedLM.from_pretrained(tmp_path / "with_head")
    head = masked_lm.cls.predictions
    torch.testing.assert_close(head.transform.dense.weight, objective.mlm_head.dense.weight)
    torch.testing.assert_close(head.transform.LayerNorm.weight, objective.mlm_head.LayerNorm.weight)
    torch.testing.assert_close(head.bias, objective.mlm_head.bias)
    torch.testing.assert_close(head.decoder.weight, objective.encoder.get_input_embeddings().weight)
    continued = MaskedLanguageModel(load_encoder(tmp_path / "with_head"), tokenizer, MLMConfig())
    torch.testing.assert_close(continued.mlm_head.bias, objective.mlm_head.bias)
    torch.testing.assert_close(continued.encoder.get_input_embeddings().weight,
                               objective.encoder.get_input_embeddings().weight)
    fresh = MaskedLanguageModel(load_encoder(tmp_path / "plain"), tokenizer, MLMConfig())
    assert torch.count_nonzero(fresh.mlm_head.bias) == 0


def test_continuing_from_a_seedr_run_keeps_its_trained_head(wiki_shard, tmp_path, tokenizer):
    """``--model RUN``: the head comes from the run's newest checkpoint, as ``mlm_head_from: RUN`` does."""
    from safetensors.torch import load_file
    from test_diagnostics import tiny_run

    from seedr.engine.checkpoint import latest_checkpoint, model_weights_path

    run = tiny_run(wiki_shard, tmp_path / "mlm", "mlm")
    trained = load_file(str(model_weights_path(latest_checkpoint(run))))
    continued = MaskedLanguageModel(load_encoder(run), tokenizer, MLMConfig())
    torch.testing.assert_close(continued.mlm_head.dense.weight, trained["mlm_head.dense.weight"])
    torch.testing.assert_close(continued.mlm_head.bias, trained["mlm_head.bias"])
    named = MaskedLanguageModel(tiny_bert(tokenizer), tokenizer, MLMConfig(mlm_head_from=str(run)))
    torch.testing.assert_close(named.mlm_head.LayerNorm.weight, trained["mlm_head.LayerNorm.weight"])
    with pytest.raises(DataError, match="no MLM head"):
        MaskedLanguageModel(tiny_bert(tokenizer), tokenizer, MLMConfig(mlm_head_from=str(tmp_path)))


def test_missing_head_initialises_or_fails_when_asked_for(minilm_path, tmp_path, tokenizer):
    encoder = load_encoder(minilm_path)  # a sentence-transformers checkpoint: no cls.predictions.*
    objective = MaskedLanguageModel(encoder, tokenizer, MLMConfig())
    assert torch.count_nonzero(objective.mlm_head.bias) == 0
    with pytest.raises(DataError, match="no MLM head"):
        MaskedLanguageModel(encoder, tokenizer, MLMConfig(mlm_head_from=str(minilm_path)))


def test_a_batch_without_targets_has_zero_loss_not_nan(objective, tokenizer):
    batch = objective.collate([[tokenizer.cls_token_id, tokenizer.sep_token_id]] * 2)
    assert (batch["labels"] == IGNORE_INDEX).all()
    assert objective(**batch).loss.item() == 0.0


def test_loading_a_masked_lm_checkpoint_reports_only_what_is_amiss(tmp_path, tokenizer, capfd):
    """The MLM head of a checkpoint (``cls.*``) is expected and not reported (transformers would print a
    table of it at every load); a weight the encoder lacks is still said."""
    import warnings

    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    BertForMaskedLM(config).save_pretrained(tmp_path / "mlm")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_encoder(tmp_path / "mlm")
    assert not [w for w in caught if "encoder weights" in str(w.message)]
    assert "UNEXPECTED" not in "".join(capfd.readouterr())

    from safetensors.torch import load_file, save_file

    weights = load_file(tmp_path / "mlm" / "model.safetensors")
    dropped = "bert.encoder.layer.1.output.dense.weight"
    save_file({name: tensor for name, tensor in weights.items() if name != dropped},
              tmp_path / "mlm" / "model.safetensors", metadata={"format": "pt"})
    with pytest.warns(UserWarning, match=r"1 encoder weights not in the checkpoint.*encoder\.layer\.1\.output"):
        load_encoder(tmp_path / "mlm")
