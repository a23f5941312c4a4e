"""PROP as a bi-encoder: the Dirichlet-smoothed document language model and the word-set sampling on a
fixed generator, the hinge + MLM on fixed sets and masks against a re-implementation written from the
paper, and `seedr pretrain --config prop` end to end (the corpus statistics computed from its corpus)."""

from __future__ import annotations

import inspect
import json
import math
from collections import Counter

import numpy as np
import pytest
import torch
import yaml
from helpers import tiny_bert, wiki_token_ids
from test_objective_condenser import reference_mlm

from seedr.objectives import OBJECTIVES
from seedr.objectives.prop.objective import Prop, count_tokens, save_counts
from seedr.objectives.prop.options import PropConfig
from tests.helpers import pretrain_tiny

MU = 50.0


@pytest.fixture(scope="module")
def examples(wiki_shard, tokenizer):
    return wiki_token_ids(wiki_shard, tokenizer, count=40, max_length=64)


@pytest.fixture(scope="module")
def statistics(examples, tokenizer, tmp_path_factory):
    path = tmp_path_factory.mktemp("prop") / "counts.npy"
    save_counts(path, count_tokens(examples, len(tokenizer))[0])
    return path


def make_objective(tokenizer, statistics, **options) -> Prop:
    torch.manual_seed(0)
    config = PropConfig(collection_statistics=str(statistics), dirichlet_mu=MU, **options)
    return Prop(tiny_bert(tokenizer), tokenizer, config).eval()


def reference_language_model(examples, document, specials, threshold):
    """P(w | θ_D) = (tf(w, D) + μ P(w | C)) / (|D| + μ) and the subsampled drawing weights, as dicts."""
    collection = Counter(token for example in examples for token in example if token not in specials)
    total = sum(collection.values())
    words = [token for token in document if token not in specials]
    frequency = Counter(words)
    probability = {w: (frequency[w] + MU * c / total) / (len(words) + MU) for w, c in collection.items()}
    keep = {w: min(1.0, math.sqrt(threshold * total / c) + threshold * total / c) for w, c in collection.items()}
    weights = {w: probability[w] * keep[w] for w in collection}
    norm = sum(weights.values())
    return probability, {w: value / norm for w, value in weights.items()}


def test_registered_with_the_papers_defaults():
    assert OBJECTIVES.get("prop") is Prop
    config = PropConfig()
    assert (config.poisson_lambda, config.margin, config.subsample_threshold, config.rop_weight) == (3.0, 1.0, 1e-4, 1.0)
    assert config.collection_statistics == "auto" and config.dirichlet_mu is None
    assert config.mean_set_length == pytest.approx(3 / (1 - math.exp(-3)))
    with pytest.raises(ValueError, match="poisson_lambda"):
        PropConfig(poisson_lambda=0)


def test_the_objective_refuses_to_start_without_corpus_statistics(tokenizer):
    with pytest.raises(ValueError, match="corpus's statistics"):
        Prop(tiny_bert(tokenizer), tokenizer, PropConfig())


def test_document_language_model_is_dirichlet_smoothed_with_the_collection(tokenizer, examples, statistics):
    objective = make_objective(tokenizer, statistics)
    specials = set(tokenizer.all_special_ids)
    probability, _ = reference_language_model(examples, examples[3], specials, 1e-4)
    log_p = objective.document_log_probabilities(examples[3])
    for word, value in probability.items():
        assert log_p[word].item() == pytest.approx(math.log(value), abs=1e-9)
    assert torch.isinf(log_p[sorted(specials)]).all()  # never drawn
    assert log_p.exp().sum().item() == pytest.approx(1.0)


def test_word_sets_on_a_fixed_generator(tokenizer, examples, statistics):
    objective = make_objective(tokenizer, statistics, pairs_per_text=3)
    drawn = objective.draw_word_sets(examples[:6], torch.Generator().manual_seed(5))
    assert drawn == objective.draw_word_sets(examples[:6], torch.Generator().manual_seed(5))
    assert drawn != objective.draw_word_sets(examples[:6], torch.Generator().manual_seed(6))
    specials = set(tokenizer.all_special_ids)
    for example, pairs in zip(examples[:6], drawn, strict=True):
        probability, _ = reference_language_model(examples, example, specials, 1e-4)
        assert len(pairs) == 3
        for preferred, other in pairs:
            assert len(preferred) == len(other) >= 1 and not specials & {*preferred, *other}
            # the preferred set is the one of higher query likelihood Σ log P(w | θ_D)
            assert sum(math.log(probability[w]) for w in preferred) >= sum(math.log(probability[w]) for w in other)


def test_word_sets_follow_the_subsampled_language_model_and_a_poisson_length(tokenizer, examples, statistics):
    objective = make_objective(tokenizer, statistics, pairs_per_text=1500)
    (pairs,) = objective.draw_word_sets(examples[:1], torch.Generator().manual_seed(0))
    lengths = np.array([len(preferred) for preferred, _ in pairs])
    expected_length = 3 / (1 - math.exp(-3))  # Poisson(3) drawn again while 0
    variance = (3 + 9) / (1 - math.exp(-3)) - expected_length ** 2
    assert abs(lengths.mean() - expected_length) < 4 * math.sqrt(variance / len(lengths))
    _, weights = reference_language_model(examples, examples[0], set(tokenizer.all_special_ids), 1e-4)
    words = Counter(word for pair in pairs for words in pair for word in words)
    drawn = sum(words.values())
    for word, q in sorted(weights.items(), key=lambda item: -item[1])[:8]:
        assert abs(words[word] / drawn - q) < 4 * math.sqrt(q * (1 - q) / drawn), word


def test_loss_on_fixed_sets_and_masks_matches_the_papers_equations(tokenizer, examples, statistics):
    objective = make_objective(tokenizer, statistics, pairs_per_text=2, margin=0.9)
    texts = examples[:4]
    word_sets = objective.draw_word_sets(texts, torch.Generator().manual_seed(1))
    torch.manual_seed(2)
    batch = objective.collate_word_sets(texts, word_sets)
    assert set(batch) == set(inspect.signature(objective.forward).parameters)
    output = objective(**batch)

    encoder = objective.encoder
    documents = encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    hinges, correct = [], []
    for text, pairs in enumerate(word_sets):
        for preferred, other in pairs:
            vectors = [encoder(input_ids=torch.tensor([[tokenizer.cls_token_id, *words, tokenizer.sep_token_id]])
                               ).last_hidden_state[0, 0] for words in (preferred, other)]
            scores = torch.stack([vector @ documents[text, 0] for vector in vectors])
            p_preferred, p_other = torch.exp(scores - torch.logsumexp(scores, 0))
            hinges.append(torch.clamp(0.9 - p_preferred + p_other, min=0))
            correct.append(float(scores[0] > scores[1]))
    rop = torch.stack(hinges).mean()
    mlm = reference_mlm(objective.mlm_head, encoder.get_input_embeddings().weight, documents, batch["labels"])
    torch.testing.assert_close(output.parts["rop"], rop, atol=1e-5, rtol=0)
    torch.testing.assert_close(output.parts["mlm"], mlm, atol=1e-5, rtol=0)
    torch.testing.assert_close(output.loss, rop + mlm, atol=1e-5, rtol=0)
    assert output.metrics["rop_accuracy"].item() == pytest.approx(sum(correct) / len(correct))


def test_recipe_runs_from_the_seedr_base_and_saves_a_sentence_transformer(wiki_shard, tmp_path):
    from sentence_transformers import SentenceTransformer

    out = tmp_path / "prop"
    last, _ = pretrain_tiny("prop", wiki_shard, out)
    recorded = yaml.safe_load((out / "config.yaml").read_text())["objective"]
    assert recorded["collection_statistics"].endswith("token_counts.npy") and 0 < recorded["dirichlet_mu"] <= 62
    assert last["step"] == 2 and last["loss"] == pytest.approx(last["mlm"] + last["rop"], rel=1e-5)
    model = SentenceTransformer(str(out / "encoder"), device="cpu")
    assert model.encode(["Anarchism is a political philosophy."]).shape == (1, 256)
    assert json.loads((out / "encoder" / "1_Pooling" / "config.json").read_text())["pooling_mode_cls_token"] is True
