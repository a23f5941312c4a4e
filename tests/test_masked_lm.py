"""Held-out masked-LM loss and accuracy (``seedr.evaluation.masked_lm``) on Wikipedia articles: the unigram
plateau against hand computation, a head that predicts only word frequencies scoring exactly the plateau,
the same masks for every checkpoint, and ``seedr diagnose``'s curve over a tiny MLM run's checkpoints."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch
from test_diagnostics import tiny_run

from seedr.evaluation.masked_lm import heldout_masked_lm, masked_batches, unigram_plateau
from seedr.diagnostics.diagnose import diagnose, write_diagnostics
from seedr.diagnostics.loading import corpus_texts, load_objective, run_diagnostics
from seedr.objectives.masking import IGNORE_INDEX


@pytest.fixture(scope="module")
def heldout(shared_data) -> list[str]:
    """Articles of a shard the tiny runs below never train on (they read shard 00)."""
    return corpus_texts([shared_data / "wiki" / "enwiki-2015-07.jsonl.xz"], max_documents=24)


@pytest.fixture(scope="module")
def mlm_run(wiki_shard, tmp_path_factory):
    return tiny_run(wiki_shard, tmp_path_factory.mktemp("runs") / "mlm", "mlm")


def test_unigram_plateau_by_hand():
    plateau = unigram_plateau([7, 7, 7, 9])
    assert plateau["unigram_loss"] == pytest.approx(-(0.75 * math.log(0.75) + 0.25 * math.log(0.25)))
    assert plateau["unigram_accuracy"] == 0.75
    counted = unigram_plateau([9, 7], tokens=[7, 9, 9, 9, 5])  # frequencies of the whole text: 1/5, 3/5
    assert counted["unigram_loss"] == pytest.approx(-(math.log(3 / 5) + math.log(1 / 5)) / 2)
    assert counted["unigram_accuracy"] == 0.5
    with pytest.raises(ValueError, match="no masked targets"):
        unigram_plateau([])
    with pytest.raises(ValueError, match="every target"):
        unigram_plateau([4], tokens=[7, 9])


def test_masks_are_the_same_for_every_call_and_about_fifteen_percent(mlm_run, heldout):
    objective, _ = load_objective(mlm_run)
    first = list(masked_batches(objective.tokenizer, heldout, max_length=64, batch_size=8, seed=3))
    again = list(masked_batches(objective.tokenizer, heldout, max_length=64, batch_size=8, seed=3))
    other = list(masked_batches(objective.tokenizer, heldout, max_length=64, batch_size=8, seed=4))
    assert all(torch.equal(a["labels"], b["labels"]) for a, b in zip(first, again, strict=True))
    assert not all(torch.equal(a["labels"], b["labels"]) for a, b in zip(first, other, strict=True))
    targets = sum(int((batch["labels"] != IGNORE_INDEX).sum()) for batch in first)
    tokens = sum(int(batch["attention_mask"].sum()) - 2 * len(batch["labels"]) for batch in first)
    assert 0.13 < targets / tokens < 0.17


def test_a_head_that_knows_only_word_frequencies_scores_the_plateau(mlm_run, heldout):
    """Zero the head's transform so its logits are its bias, and set the bias to the log-frequencies of
    every token of the texts scored: the loss is then the plateau's cross-entropy and the accuracy the
    share of the most frequent token among the targets, as ``unigram_plateau`` says."""
    objective, _ = load_objective(mlm_run)
    tokens, gold = [], []
    for batch in masked_batches(objective.tokenizer, heldout, 64, 8, 0.15, seed=0):
        targets = batch["labels"] != IGNORE_INDEX
        gold += batch["labels"][targets].tolist()
        originals = torch.where(targets, batch["labels"], batch["input_ids"])
        tokens += originals[batch["attention_mask"].bool()].tolist()
    specials = set(objective.tokenizer.all_special_ids)
    counts = Counter(token for token in tokens if token not in specials)
    total = sum(counts.values())
    head = objective.mlm_head
    with torch.no_grad():
        head.dense.weight.zero_(), head.dense.bias.zero_(), head.LayerNorm.bias.zero_()
        head.bias.fill_(math.log(1e-12))
        for token, count in counts.items():
            head.bias[token] = math.log(count / total)
    scores = heldout_masked_lm(objective, heldout, max_length=64, batch_size=8, seed=0)
    assert scores["targets"] == len(gold) and scores["sequences"] == len(heldout)
    assert scores["mlm_loss"] == pytest.approx(scores["unigram_loss"], abs=1e-3)
    assert scores["masked_accuracy"] == pytest.approx(scores["unigram_accuracy"])
    most_frequent = max(counts, key=counts.get)
    assert scores["unigram_accuracy"] == gold.count(most_frequent) / len(gold)
    assert scores["unigram_loss"] > -sum(c / len(gold) * math.log(c / len(gold)) for c in Counter(gold).values())


def test_diagnose_scores_every_checkpoint_on_the_same_targets(mlm_run, heldout, tmp_path):
    assert "masked_lm" in run_diagnostics(mlm_run)
    result = diagnose(mlm_run, heldout, lengths=(32,), pairs=4, masked_lm_texts=12, masked_lm_curve_steps=True)
    curve = result["details"]["masked_lm"]["curve"]
    assert [point["step"] for point in curve] == [3]  # tiny_run keeps one checkpoint, at its end
    assert len({point["targets"] for point in curve}) == 1 and curve[-1]["sequences"] == 12
    assert result["metrics"]["heldout_mlm_loss"] == curve[-1]["mlm_loss"] > 0
    assert 0 <= result["metrics"]["heldout_masked_accuracy"] <= 1
    _, plot = write_diagnostics(result, tmp_path / "diagnostics")
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    skipped = diagnose(mlm_run, heldout, lengths=(32,), pairs=4, masked_lm_texts=0)
    assert "masked_lm" not in skipped["details"] and "heldout_mlm_loss" not in skipped["metrics"]
