"""The papers' diagnostics on real text: SEED-Encoder's random-pair similarity by length (MiniLM vs a
collapsed encoder, on Wikipedia articles), CPDAE's decoded words (a tiny CPDAE run on wiki shard 00),
SEED-Encoder's decoder reliance on [CLS] by position (a tiny SEED objective and run), alignment /
uniformity / anisotropy (SciFact and ICT pairs), and `seedr diagnose` + `seedr report`."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from helpers import tiny_bert
from safetensors import safe_open
from typer.testing import CliRunner

from seedr.cli import app
from seedr.config.settings import DataConfig, ModelConfig, PretrainConfig, TrainConfig
from seedr.data.records import Document
from seedr.diagnostics.measures import (
    alignment,
    anisotropy,
    cls_reliance,
    common_word_mass,
    decoded_words,
    embedding_statistics,
    most_frequent_tokens,
    random_pair_similarity,
    reliance_summary,
    texts_of_length,
    uniformity,
    word_probabilities,
)
from seedr.diagnostics.diagnose import diagnose, write_diagnostics
from seedr.diagnostics.loading import (
    corpus_texts,
    embed_pairs,
    load_encoder_parts,
    load_objective,
    load_weak_decoder,
    load_word_decoder,
    positive_pairs,
    run_diagnostics,
)
from seedr.engine.checkpoint import latest_checkpoint, model_weights_path
from seedr.modeling.encoder import build_encoder
from seedr.objectives.seed.objective import SeedEncoder
from seedr.objectives.seed.options import SeedConfig
from seedr.training.pretrain import pretrain

runner = CliRunner()


@pytest.fixture(scope="module")
def articles(wiki_shard) -> list[str]:
    return corpus_texts([wiki_shard], max_documents=40)


def tiny_run(wiki_shard, out, objective: str):
    """A tiny encoder (hidden 32, 2 layers, BERT vocabulary) pre-trained for 3 steps on 20 articles."""
    config = PretrainConfig(
        objective_name=objective,
        model=ModelConfig(size="tiny", tokenizer="minilm", hidden_size=32, num_attention_heads=2,
                          intermediate_size=64),
        data=DataConfig(corpus=[str(wiki_shard)], max_documents=20, max_seq_length=64),
        train=TrainConfig(max_steps=3, batch_size=4, warmup_steps=0, log_every=1))
    pretrain(config, out)
    return out


@pytest.fixture(scope="module")
def minilm(minilm_path):
    """MiniLM in memory with its tokenizer, as the diagnostics take it."""
    model, tokenizer, _ = load_encoder_parts(minilm_path)
    return model, tokenizer


@pytest.fixture(scope="module")
def cpdae_run(wiki_shard, tmp_path_factory):
    return tiny_run(wiki_shard, tmp_path_factory.mktemp("runs") / "cpdae", "cpdae")


# ----- SEED-Encoder §3.2, Figure 1(b) ---------------------------------------------------------------


def test_random_pair_similarity_per_length_is_a_cosine_and_reproducible(minilm, articles):
    first = random_pair_similarity(*minilm, articles, lengths=(64, 32), pairs=12, seed=5)
    assert list(first) == [32, 64]
    for mean, std in first.values():
        assert -1.0 <= mean <= 1.0 and 0.0 <= std <= 1.0
    assert random_pair_similarity(*minilm, articles, lengths=(64, 32), pairs=12, seed=5) == first
    other = random_pair_similarity(*minilm, articles, lengths=(32, 64), pairs=12, seed=6)
    assert other != first  # other pairs drawn


def test_collapsed_encoder_has_more_similar_random_pairs_than_minilm(minilm_path, minilm, articles, tokenizer):
    """Zeroing every layer's output LayerNorm weight makes each token state that LayerNorm's bias, so
    every text gets the same [CLS] vector: the extreme of SEED-Encoder's "cluttered representations"."""
    torch.manual_seed(0)
    collapsed = build_encoder(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                              num_attention_heads=2, intermediate_size=64)
    with torch.no_grad():
        for layer in collapsed.encoder.layer:
            layer.output.LayerNorm.weight.zero_()
            layer.output.LayerNorm.bias.normal_()
    degenerate = random_pair_similarity(*load_encoder_parts(collapsed, tokenizer)[:2], articles, lengths=(32, 64),
                                        pairs=12, seed=5)
    cls_pooled = random_pair_similarity(*minilm, articles, lengths=(32, 64), pairs=12, seed=5)
    for length in (32, 64):
        assert degenerate[length][0] == pytest.approx(1.0, abs=1e-5)
        assert degenerate[length][0] > cls_pooled[length][0] + 0.1
    # MiniLM was trained with mean pooling (what its folder declares): its mean-pooled random pairs are far apart
    model, tokenizer, declared = load_encoder_parts(minilm_path, pooling="model")
    assert declared == "mean"
    mean_pooled = random_pair_similarity(model, tokenizer, articles, lengths=(64,), pairs=12, seed=5,
                                         pooling=declared)
    assert mean_pooled[64][0] < cls_pooled[64][0]


def test_random_pair_similarity_clear_errors(minilm_path, minilm, articles):
    with pytest.raises(ValueError, match="outside"):
        random_pair_similarity(*minilm, articles, lengths=(1024,), pairs=4)
    leads = [text.split("\n")[0] for text in articles[:3]]
    with pytest.raises(ValueError, match="need at least two"):
        random_pair_similarity(*minilm, leads, lengths=(512,), pairs=4)
    with pytest.raises(ValueError, match="valid: cls, mean$"):
        random_pair_similarity(*minilm, articles, lengths=(32,), pairs=4, pooling="max")
    with pytest.raises(ValueError, match="valid: cls, mean, model"):
        load_encoder_parts(minilm_path, pooling="max")


# ----- SEED-Encoder §4.6.1, Figure 4 ------------------------------------------------------------------


def tiny_seed(tokenizer, **options) -> SeedEncoder:
    """A freshly initialised SEED-Encoder objective on a tiny BERT, in eval mode (no dropout)."""
    torch.manual_seed(0)
    return SeedEncoder(tiny_bert(tokenizer), tokenizer, SeedConfig(decoder_layers=2, **options)).eval()


def test_reliance_curve_has_one_cosine_per_trained_position(tokenizer, articles):
    texts = texts_of_length(tokenizer, articles, 32, 6)
    assert len(texts) == 6
    assert all(len(tokenizer(text, truncation=True, max_length=32)["input_ids"]) == 32 for text in texts)
    for span in (2, "all"):
        reliance = cls_reliance(tiny_seed(tokenizer, attention_span=span), texts, max_length=32, batch_size=4)
        assert len(reliance.cosine) == 31  # the decoder reads x_0 … x_30 and predicts x_1 … x_31
        assert reliance.texts == [6] * 31
        assert all(-1.0 <= cosine <= 1.0 for cosine in reliance.cosine)
        summary = reliance_summary(reliance)
        assert summary["cls_reliance@first"] == reliance.cosine[0]
        last_quarter = np.mean(reliance.cosine[-8:])  # ⌈31 / 4⌉ positions
        assert summary["cls_reliance@last_quarter"] == pytest.approx(last_quarter)
        assert summary["cls_reliance_drop"] == pytest.approx(summary["cls_reliance@first"]
                                                             - summary["cls_reliance@last_quarter"])


def test_reliance_curve_averages_each_position_over_the_texts_that_reach_it(tokenizer, articles):
    """Texts of different lengths batched with padding give, at each position, the mean of the texts
    computed one by one: padding reaches neither the encoder's bottleneck nor the causal decoder."""
    objective = tiny_seed(tokenizer, bottleneck="mean")  # the mean bottleneck is the one padding could reach
    texts = [articles[0][:80], articles[1], articles[2][:140], articles[3][:40]]
    alone = [cls_reliance(objective, [text], max_length=48) for text in texts]
    together = cls_reliance(objective, texts, max_length=48, batch_size=4)
    assert len(together.cosine) == max(len(curve.cosine) for curve in alone) == 47
    for position, cosine in enumerate(together.cosine):
        reaching = [curve.cosine[position] for curve in alone if position < len(curve.cosine)]
        assert together.texts[position] == len(reaching)
        assert cosine == pytest.approx(np.mean(reaching), abs=1e-5)
    lengths = [len(tokenizer(text, truncation=True, max_length=48)["input_ids"]) for text in texts]
    assert len(set(lengths)) == 4  # four different lengths, 48 the longest
    assert together.texts == [sum(length > position + 1 for length in lengths) for position in range(47)]


def test_the_curve_follows_how_much_of_cls_the_decoder_reads(tokenizer, articles):
    """Each layer's cross-attention to [CLS] (the released path's only way in) set to copy h0 into the
    residual stream, four times over, makes every decoder state nearly h0: cosine ≈ 1 at every position.
    Zeroed, the states no longer depend on [CLS] and the cosine falls far below at every position."""
    texts = texts_of_length(tokenizer, articles, 32, 6)
    objective = tiny_seed(tokenizer, attention_span=2)
    identity = torch.eye(objective.encoder.config.hidden_size)
    curves = {}
    for name, gain in (("copies", 4.0), ("cut off", 0.0)):
        with torch.no_grad():
            for layer in objective.decoder.layers:
                layer.cross_attention.value.weight.copy_(identity)
                layer.cross_attention.value.bias.zero_()
                layer.cross_attention.output.weight.copy_(gain * identity)
                layer.cross_attention.output.bias.zero_()
        curves[name] = np.array(cls_reliance(objective, texts, max_length=32).cosine)
    assert (curves["copies"] > 0.9).all()
    assert (curves["cut off"] < curves["copies"] - 0.3).all()


@pytest.fixture(scope="module")
def seed_run(wiki_shard, tmp_path_factory):
    return tiny_run(wiki_shard, tmp_path_factory.mktemp("runs") / "seed", "seed")


def test_diagnose_reports_the_reliance_of_seed_runs_only(seed_run, cpdae_run, articles, tmp_path):
    assert run_diagnostics(seed_run) == {"masked_lm", "cls_reliance"}  # what the objectives declare
    assert run_diagnostics(cpdae_run) == {"masked_lm", "decoded_words"}
    objective, max_length = load_weak_decoder(seed_run)
    assert max_length == 64 and objective.config.attention_span == 2
    result = diagnose(seed_run, articles, lengths=(32,), pairs=4, reliance_texts=5)
    curve = result["details"]["cls_reliance"]
    assert len(curve["cosine"]) == 63 and curve["texts"] == [5] * 63
    assert (curve["attention_span"], curve["decoder_layers"], curve["bottleneck"]) == (2, 3, "cls")
    assert result["metrics"]["cls_reliance@first"] == curve["cosine"][0]
    measured = result["metrics"].keys()
    assert {"cls_reliance@last_quarter", "cls_reliance_drop", "random_pair_cosine@32"} <= measured
    json_path, plot_path = write_diagnostics(result, tmp_path / "seed")
    assert json.loads(json_path.read_text())["details"]["cls_reliance"]["cosine"] == curve["cosine"]
    assert plot_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    other = diagnose(cpdae_run, articles, lengths=(32,), pairs=4, word_texts=0, reliance_texts=5)
    assert "cls_reliance" not in other["details"]
    assert not any(metric.startswith("cls_reliance") for metric in other["metrics"])
    with pytest.raises(ValueError, match="no weak decoder"):
        load_weak_decoder(cpdae_run)
    skipped = diagnose(seed_run, articles, lengths=(32,), pairs=4, reliance_texts=0)
    assert "cls_reliance" not in skipped["details"]


# ----- embedding-space statistics ---------------------------------------------------------------------


def test_statistics_equal_their_definitions():
    """Numbers, not text: the closed forms against brute force over every pair."""
    vectors = torch.randn(30, 16, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    unit = vectors / vectors.norm(dim=-1, keepdim=True)
    cosines = unit @ unit.T
    distinct = ~torch.eye(30, dtype=torch.bool)
    assert anisotropy(vectors) == pytest.approx(float(cosines[distinct].mean()), rel=1e-9)
    squared = ((unit[:, None] - unit[None]) ** 2).sum(-1)[distinct]
    assert uniformity(vectors) == pytest.approx(math.log(float(torch.exp(-2 * squared).mean())), rel=1e-9)
    assert alignment(vectors, 3 * vectors) == pytest.approx(0.0, abs=1e-12)  # scale does not matter
    assert alignment(vectors, -vectors) == pytest.approx(4.0)
    assert anisotropy(np.repeat(vectors[:1].numpy(), 5, axis=0)) == pytest.approx(1.0)


def test_scifact_positive_pairs_are_its_judged_pairs(shared_data):
    pairs = positive_pairs(shared_data / "scifact", split="test", limit=16, seed=3)
    assert len(pairs) == 16 and all(isinstance(document, Document) and query for query, document in pairs)
    assert positive_pairs(shared_data / "scifact", split="test", limit=16, seed=3) == pairs
    assert len(positive_pairs(shared_data / "scifact", split="test", limit=None)) == 339  # BEIR's test qrels


def test_positive_pairs_are_closer_than_mismatched_pairs(minilm_path, wiki_shard):
    pairs = positive_pairs(wiki_shard, limit=10, seed=3, max_articles=15)  # ICT pairs
    assert len(pairs) == 10
    for query, document in pairs:  # the query sentence is taken out of its passage
        assert query not in document.text and document.title and "#" in document.id
    queries, documents = embed_pairs(minilm_path, pairs, pooling="model")
    statistics = embedding_statistics(queries, documents)
    assert statistics["alignment"] == pytest.approx(alignment(queries, documents))
    assert 0.0 <= statistics["alignment"] < alignment(queries, np.roll(documents, 1, axis=0)) <= 4.0
    assert -4.5 < statistics["uniformity"] < 0.0 and -1.0 <= statistics["anisotropy"] <= 1.0


# ----- CPDAE §3.3, Table 4 ----------------------------------------------------------------------------


def test_objective_is_rebuilt_with_the_checkpoint_weights(cpdae_run):
    objective, config = load_objective(cpdae_run)
    assert type(objective).__name__ == "Cpdae" and config.data.max_seq_length == 64 and not objective.training
    with safe_open(model_weights_path(latest_checkpoint(cpdae_run)), "pt") as weights:
        for name, parameter in objective.state_dict().items():
            assert torch.equal(parameter, weights.get_tensor(name)), name
    assert "decoded_words" in run_diagnostics(cpdae_run)


def test_decoded_words_are_vocabulary_tokens_by_probability(cpdae_run, articles, tokenizer):
    objective, max_length = load_word_decoder(cpdae_run)
    assert max_length == 64  # the run's training length
    words = decoded_words(objective, articles[:3], k=7, max_length=max_length)
    vocabulary = tokenizer.get_vocab()
    assert len(words) == 3 and all(len(top) == 7 for top in words)
    for top in words:
        probabilities = [probability for _, probability in top]
        assert all(token in vocabulary for token, _ in top)
        assert probabilities == sorted(probabilities, reverse=True)
        assert 0 < probabilities[-1] <= probabilities[0] <= 1

    text = articles[0].split("\n")[0]
    per_word = word_probabilities(objective, text, max_length)
    assert [word for word, _ in per_word][:3] == text.split()[:3]  # "Anarchism is a", in order
    assert all(0 < probability <= 1 for _, probability in per_word)


def test_common_word_mass_is_a_share_of_the_distribution(cpdae_run, articles, tokenizer):
    common = most_frequent_tokens(tokenizer, articles, count=100)
    assert len(common) == 100 and not set(common) & set(tokenizer.all_special_ids)
    assert tokenizer.convert_ids_to_tokens(common[:3]) == ["the", ",", "."]
    mass = common_word_mass(load_word_decoder(cpdae_run)[0], articles[:4], common, max_length=64)
    assert set(mass) == {"common_mass", "own_rare_mass", "target_common_mass"}
    assert all(0.0 <= value <= 1.0 for value in mass.values())
    assert mass["common_mass"] + mass["own_rare_mass"] <= 1.0
    # the reference: the share of common words among each text's distinct words (first 64 tokens)
    objective, _ = load_objective(cpdae_run)
    shares = []
    for text in articles[:4]:
        words = set(tokenizer(text, truncation=True, max_length=64)["input_ids"])
        words -= set(tokenizer.all_special_ids)
        shares.append(len(words & set(common)) / len(words))
    assert mass["target_common_mass"] == pytest.approx(np.mean(shares))
    assert common_word_mass(objective, articles[:4], common, max_length=64) == mass


def test_decoded_words_need_a_cpdae_run(wiki_shard, tmp_path, articles):
    mlm = tiny_run(wiki_shard, tmp_path / "mlm", "mlm")
    assert run_diagnostics(mlm) == {"masked_lm"} and run_diagnostics(mlm / "encoder") == set()
    with pytest.raises(ValueError, match="bag-of-words decoder"):
        load_word_decoder(mlm)
    with pytest.raises(ValueError, match="bag-of-words decoder"):
        decoded_words(load_objective(mlm)[0], articles[:1])


# ----- seedr diagnose ---------------------------------------------------------------------------------


def test_diagnose_writes_json_and_plot_that_report_renders(cpdae_run, wiki_shard, shared_data, tmp_path):
    out = tmp_path / "diagnostics"
    arguments = ["diagnose", str(cpdae_run), "--corpus", str(wiki_shard), "--max-documents", "30",
                 "--lengths", "32,64", "--pairs", "8", "--positives", str(shared_data / "scifact"),
                 "--positive-pairs", "12", "--word-texts", "2", "--top-k", "3", "--out", str(out)]
    result = runner.invoke(app, arguments, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    written = json.loads((out / "diagnostics.json").read_text())
    metrics = written["metrics"]
    assert {"random_pair_cosine@32", "random_pair_cosine_std@64", "decoded_common_mass",
            "decoded_own_rare_mass", "target_common_mass", "alignment", "uniformity",
            "anisotropy"} <= metrics.keys()
    assert len(written["details"]["decoded_words"]["top_words"]) == 2
    assert (out / "diagnostics.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    report = runner.invoke(app, ["report", str(out), "--out", str(tmp_path / "report")],
                           catch_exceptions=False)
    assert report.exit_code == 0, report.output
    text = (tmp_path / "report" / "report.md").read_text()
    assert "### diagnostics" in text and "random_pair_cosine@32" in text and "decoded_common_mass" in text


def test_diagnose_help_and_clear_errors(tmp_path, wiki_shard):
    assert "Example: seedr diagnose" in runner.invoke(app, ["diagnose", "--help"], terminal_width=200).output
    result = runner.invoke(app, ["diagnose", "minilm", "--out", str(tmp_path / "d")])
    assert result.exit_code == 1 and "nothing to diagnose" in result.output
    result = runner.invoke(app, ["diagnose", "minilm", "--corpus", str(wiki_shard), "--max-documents", "5",
                                 "--lengths", "32", "--pooling", "max", "--out", str(tmp_path / "d")])
    assert result.exit_code == 1 and "valid: cls, mean, model" in result.output
    result = runner.invoke(app, ["diagnose", "minilm", "--corpus", str(wiki_shard), "--lengths", "32,long",
                                 "--out", str(tmp_path / "d")])
    assert result.exit_code == 1 and "comma-separated token counts" in result.output
    assert not (tmp_path / "d").exists()
