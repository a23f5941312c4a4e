"""`seedr pretrain` end to end on real Wikipedia articles (wiki shard 00) with tiny encoders, the
recipes of seedr/recipes/pretrain/, and the command's clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from seedr.cli import app
from seedr.config.loading import from_dict, load_config
from seedr.config.settings import PretrainConfig
from seedr.objectives import OBJECTIVES
from seedr.recipes import recipes_dir

RECIPES = recipes_dir("pretrain")
TINY = ["--size", "tiny", "--tokenizer", "minilm", "--set", "model.hidden_size=32",
        "--set", "model.num_attention_heads=2", "--set", "model.intermediate_size=64"]

runner = CliRunner()


def pretrain(*arguments: str):
    return runner.invoke(app, ["pretrain", *arguments], catch_exceptions=False)


def settings(**values) -> list[str]:
    return [item for key, value in values.items() for item in ("--set", f"{key.replace('__', '.')}={value}")]


def test_help_ends_with_an_example():
    result = runner.invoke(app, ["pretrain", "--help"], terminal_width=200)
    assert result.exit_code == 0
    assert "Example: seedr pretrain --config seed " in result.output
    for option in ("--objective", "--corpus", "--out", "--config", "--set", "--model", "--size", "--tokenizer",
                   "--resume"):
        assert option in result.output


def test_a_recipe_is_named_or_given_by_path(tmp_path):
    """``--config seed`` is the recipe shipped in the package (issue 22.1: from any folder); a path is
    read as given; an unknown name lists the known ones, a missing file says so, in one line each."""
    from seedr.recipes import recipe_names, recipe_path

    assert recipe_path("seed", "pretrain") == RECIPES / "seed.yaml" and "dpr" in recipe_names("finetune")
    mine = tmp_path / "seed"  # a file of that name, given as a path, wins over the shipped recipe
    mine.write_text("objective_name: mlm\n")
    assert recipe_path(mine, "pretrain") == mine
    result = pretrain("--config", "nope", "--out", str(tmp_path / "run"))
    assert result.exit_code == 1 and "no pretrain recipe 'nope'; known: " in result.output
    assert "seed, seed_strong" in result.output and not (tmp_path / "run").exists()
    result = pretrain("--config", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "run"))
    assert result.exit_code == 1 and "missing.yaml: no such recipe file" in result.output


@pytest.mark.parametrize("recipe", sorted(RECIPES.glob("*.yaml")), ids=lambda path: path.stem)
def test_every_recipe_is_a_valid_configuration_of_its_objective(recipe):
    config = load_config(PretrainConfig, recipe)
    objective_class = OBJECTIVES.get(config.objective_name)
    from_dict(objective_class.config_class, config.objective, "objective")  # unknown option → ValueError
    assert config.train.resolved_warmup_steps < config.train.max_steps
    assert "CPU-scale variant" in recipe.read_text()


def test_recipes_hold_the_papers_settings():
    seed = load_config(PretrainConfig, RECIPES / "seed.yaml")
    assert (seed.objective["decoder_layers"], seed.objective["attention_span"]) == (3, 2)
    assert (seed.train.max_steps, seed.train.learning_rate, seed.train.resolved_warmup_steps) == (1_000_000, 1e-4, 10_000)
    assert seed.train.adam_epsilon == 1e-6 and seed.data.max_seq_length == 512 and seed.model.init is None
    strong = load_config(PretrainConfig, RECIPES / "seed_strong.yaml")
    assert (strong.objective["decoder_layers"], strong.objective["attention_span"]) == (5, "all")
    cpdae = load_config(PretrainConfig, RECIPES / "cpdae.yaml")
    assert (cpdae.train.learning_rate, cpdae.train.batch_size, cpdae.objective["contrastive_weight"]) == (5e-5, 64, 0.1)
    assert cpdae.train.resolved_warmup_steps == cpdae.train.max_steps // 10 and cpdae.model.init is not None
    for name in ("ict", "bfs", "wlp", "ict_bfs_wlp"):
        two_tower = load_config(PretrainConfig, RECIPES / f"{name}.yaml")
        assert two_tower.objective_name == name
        assert (two_tower.objective["query_max_length"], two_tower.objective["document_max_length"]) == (64, 288)
        assert (two_tower.train.max_steps, two_tower.train.resolved_warmup_steps) == (100_000, 10_000)


def test_unknown_config_key_is_one_clear_line_and_exit_1(tmp_path):
    result = pretrain("--objective", "mlm", "--out", str(tmp_path / "run"), "--set", "train.max_stepz=3")
    assert result.exit_code == 1
    assert "unknown option(s) ['max_stepz']" in result.output and "max_steps" in result.output
    result = pretrain("--out", str(tmp_path / "run"), "--set", "objective.attention_span=3",
                      "--objective", "mlm", *TINY)
    assert result.exit_code == 1 and "attention_span" in result.output  # mlm has no decoder
    assert not (tmp_path / "run").exists()


def test_an_unknown_key_suggests_the_nearest_valid_one(tmp_path):
    result = pretrain("--objective", "mlm", "--out", str(tmp_path / "run"), "--set", "train.batchsize=8")
    assert result.exit_code == 1 and "did you mean `train.batch_size`?" in result.output
    result = pretrain("--objective", "seed", "--out", str(tmp_path / "run"), "--set", "objective.attention_spn=3",
                      *TINY)
    assert result.exit_code == 1 and "did you mean `objective.attention_span`?" in result.output
    result = pretrain("--objective", "mlm", "--out", str(tmp_path / "run"), "--set", "objectiv_name=seed")
    assert result.exit_code == 1 and "did you mean `objective_name`?" in result.output


def test_a_warning_before_an_error_is_one_line_without_source(tmp_path):
    """Python prints a warning as two lines, file:line then its source; the command prints its message."""
    result = pretrain("--objective", "mlm", "--corpus", str(tmp_path / "missing.jsonl"), "--out",
                      str(tmp_path / "run"), "--set", "train.max_steps=2", *TINY)
    assert result.exit_code == 1 and "no such corpus file" in result.output
    lines = result.output.splitlines()
    assert any(line.startswith("warning: warm-up takes 1 of 2 steps (50%)") for line in lines), result.output
    assert "UserWarning" not in result.output and ".py:" not in result.output and "cls(**values)" not in result.output


def test_starting_an_objective_from_an_encoder_announces_what_it_changes(shared_data, tmp_path):
    """SEED from MiniLM: its MLM head and weak decoder start from random weights (MiniLM has neither), and its
    pooling turns from mean to the [CLS] bottleneck: one line each as the run starts, and in the model card."""
    from seedr.api import resolve_settings
    from seedr.training.pretrain import build_objective

    out = tmp_path / "seed"
    result = pretrain("--config", "seed", "--model", "minilm", "--corpus", str(shared_data / "scifact" / "corpus.jsonl"),
                      "--out", str(out), *settings(train__max_steps=1, train__batch_size=2, train__global_batch_size=2,
                                                   data__max_seq_length=32, data__max_documents=20,
                                                   train__warmup_steps=0))
    assert result.exit_code == 0, result.output
    said = [line for line in result.output.splitlines() if line.startswith(("MLM head:", "weak decoder:", "pooling:"))]
    assert [line.split(":")[0] for line in said] == ["MLM head", "weak decoder", "pooling"], result.output
    assert "about ln 30,522 = 10.3" in said[0] and "random weights" in said[1]
    assert said[2].startswith("pooling: the saved encoder pools by cls (SEED-Encoder's [CLS] bottleneck), where "
                              "minilm pooled by mean")
    card = (out / "encoder" / "README.md").read_text(encoding="utf-8")
    assert all(f"- **Changed from the base model**: {line}" in card for line in said)
    # a start that changes nothing says nothing: MLM from seedr-base keeps its head and its [CLS] pooling
    objective, _ = build_objective(resolve_settings("pretrain", objective="mlm", model="seedr-base"))
    assert objective.changes("seedr-base") == []


def test_contradictory_or_missing_model_options_exit_1(tmp_path):
    result = pretrain("--objective", "mlm", "--out", str(tmp_path / "a"), "--model", "minilm", "--size", "tiny")
    assert result.exit_code == 1 and "exclude each other" in result.output
    result = pretrain("--objective", "mlm", "--out", str(tmp_path / "b"), "--size", "tiny")
    assert result.exit_code == 1 and "needs a tokenizer" in result.output
    result = pretrain("--objective", "nonsense", "--out", str(tmp_path / "c"), *TINY)
    assert result.exit_code == 1 and "valid names" in result.output and "seed" in result.output


def test_mlm_from_scratch_on_200_wiki_articles(wiki_shard, tmp_path):
    out = tmp_path / "runs" / "mlm"
    arguments = ["--objective", "mlm", "--corpus", str(wiki_shard), "--out", str(out), *TINY,
                 *settings(data__max_documents=200, data__max_seq_length=64, train__max_steps=20,
                           train__batch_size=8, train__warmup_steps=2, train__log_every=5, train__save_every=10)]
    result = pretrain(*arguments)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [5, 10, 15, 20]
    assert all(line["mlm"] == pytest.approx(line["loss"]) for line in lines)

    recorded = yaml.safe_load((out / "config.yaml").read_text())
    assert recorded["objective_name"] == "mlm" and recorded["objective"]["mask_probability"] == 0.15
    shards = Path(recorded["data"]["shards"])
    assert shards.parent == tmp_path / "runs" / "shards"  # cached beside the run, shared by its siblings
    manifest = json.loads((shards / "manifest.json").read_text())
    assert manifest["documents"] == 200 and manifest["max_seq_length"] == 64
    assert manifest["packing"] == "full_sentences"
    assert json.loads((out / "run.json").read_text())["seed"] == 42

    from transformers import AutoModel

    encoder = AutoModel.from_pretrained(out / "encoder")
    assert encoder.config.hidden_size == 32 and encoder.config.num_hidden_layers == 2

    # a finished run resumed: nothing to do, the same product; a second run reuses the shards
    before = (out / "encoder" / "model.safetensors").read_bytes()
    assert pretrain(*arguments, "--resume").exit_code == 0
    assert (out / "encoder" / "model.safetensors").read_bytes() == before
    sibling = pretrain(*[str(tmp_path / "runs" / "mlm2") if a == str(out) else a for a in arguments],
                       "--set", "train.max_steps=2", "--set", "train.warmup_steps=0")  # no warm-up as long as the run
    assert sibling.exit_code == 0 and "tokenising" not in sibling.output
    assert list((tmp_path / "runs" / "shards").iterdir()) == [shards]
    # the same command again without --resume is refused before anything is read (issue 42.5): here a
    # corpus that is not there would otherwise be the error
    again = pretrain(*[str(tmp_path / "missing.jsonl") if a == str(wiki_shard) else a for a in arguments])
    assert again.exit_code == 1 and "already holds checkpoints of a run; resume it (--resume)" in again.output
    assert "missing.jsonl" not in again.output


def test_seed_recipe_cpu_variant_runs(wiki_shard, tmp_path):
    out = tmp_path / "seed"
    result = pretrain("--config", "seed", "--corpus", str(wiki_shard), "--out", str(out),
                      *TINY, *settings(data__max_documents=20, data__max_seq_length=64, train__max_steps=3,
                                       train__batch_size=4, train__warmup_steps=1, train__log_every=1))
    assert result.exit_code == 0, result.output
    # the recipe's global batch of 256 over --set train.batch_size=4: said at the start, recorded as used
    output = " ".join(result.output.split())
    assert "batch: global 256 = 4 per process × 1 process × 64 accumulation steps (train.global_batch_size=256 " \
           "over train.batch_size=4 accumulates 64 batches per optimizer step; to step on every batch, --set " \
           "train.global_batch_size=4)" in output
    recorded = yaml.safe_load((out / "config.yaml").read_text())["train"]
    assert (recorded["global_batch_size"], recorded["gradient_accumulation_steps"]) == (256, 64)
    last = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])
    assert {"mlm", "weak_decoder"} <= last.keys()
    assert last["loss"] == pytest.approx(last["mlm"] + last["weak_decoder"], rel=1e-5)
    state = json.loads((out / "checkpoints" / "step-3" / "extra_state.json").read_text())
    assert state == {"data": None, "callbacks": []}


def test_ict_recipe_trains_on_pairs(wiki_shard, tmp_path):
    out = tmp_path / "ict"
    result = pretrain("--config", str(RECIPES / "ict.yaml"), "--corpus", str(wiki_shard), "--out", str(out),
                      *TINY, *settings(objective__pairs__max_articles=30, objective__projection_dim=16,
                                       objective__document_max_length=64, train__max_steps=2,
                                       train__batch_size=4, train__warmup_ratio=0, train__log_every=1))
    assert result.exit_code == 0, result.output
    last = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])
    assert last["step"] == 2 and "ict" in last and "accuracy" in last
    from sentence_transformers import SentenceTransformer

    embedding = SentenceTransformer(str(out / "encoder"), device="cpu").encode(["Anarchism is a philosophy."])
    assert embedding.shape == (1, 16)  # the paper's linear layer on [CLS], here 16-dimensional


def test_pair_objective_without_corpus_is_a_clear_error(tmp_path):
    result = pretrain("--objective", "bfs", "--out", str(tmp_path / "bfs"), *TINY)
    assert result.exit_code == 1 and "give the corpus" in result.output


def test_bow_mlp_baseline_trains_on_pairs_and_loads_everywhere(wiki_shard, tmp_path):
    out = tmp_path / "bow"
    result = pretrain("--config", str(RECIPES / "bow_mlp_ict_bfs_wlp.yaml"), "--corpus", str(wiki_shard),
                      "--out", str(out), *settings(objective__pairs__max_articles=30, model__bow_mlp__embedding_dim=64,
                                                   model__bow_mlp__hidden_dim=32, model__bow_mlp__output_dim=16,
                                                   train__max_steps=2, train__batch_size=4,
                                                   train__warmup_ratio=0, train__log_every=1))
    assert result.exit_code == 0, result.output
    last = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])
    assert {"ict", "bfs", "wlp"} <= set(last)
    from sentence_transformers import SentenceTransformer

    from seedr.retrieval.encode import TextEncoder

    text = ["Anarchism is a political philosophy."]
    expected = SentenceTransformer(str(out / "encoder"), device="cpu").encode(text)
    assert expected.shape == (1, 16)  # the MLP's output is the embedding
    assert abs(TextEncoder(out / "encoder").encode(text) - expected).max() < 1e-5


def test_bow_mlp_needs_a_two_tower_objective(tmp_path):
    result = pretrain("--objective", "mlm", "--tokenizer", "minilm", "--out", str(tmp_path / "bow"),
                      "--set", "model.architecture=bow_mlp")
    assert result.exit_code == 1 and "two-tower objective" in result.output


def test_idf_rec_computes_its_idf_table_from_the_corpus(wiki_shard, tmp_path):
    out = tmp_path / "runs" / "idf-rec"
    arguments = ["--objective", "cpdae", "--corpus", str(wiki_shard), "--out", str(out), *TINY,
                 *settings(objective__idf_rec="true", objective__contrastive_weight=0, objective__idf_path="auto",
                           data__max_documents=20, data__max_seq_length=64, train__max_steps=2,
                           train__batch_size=4, train__warmup_steps=1, train__log_every=1)]
    result = pretrain(*arguments)
    assert result.exit_code == 0, result.output
    recorded = yaml.safe_load((out / "config.yaml").read_text())
    shards = Path(recorded["data"]["shards"])
    idf_path = Path(recorded["objective"]["idf_path"])
    assert idf_path == shards / "idf.npy"  # cached beside the token shards, the path recorded for resuming
    from seedr.data.shards import TokenShards
    from seedr.objectives.cpdae.objective import compute_idf

    examples = TokenShards(shards)
    idf = np.load(idf_path)
    np.testing.assert_allclose(idf, compute_idf(examples, len(idf)), rtol=1e-6)  # over the training examples
    assert idf.shape == (30522,) and idf.min() == 0.0  # [CLS] is in every example
    modified = idf_path.stat().st_mtime_ns
    sibling = pretrain(*[str(tmp_path / "runs" / "idf-rec-2") if a == str(out) else a for a in arguments])
    assert sibling.exit_code == 0 and idf_path.stat().st_mtime_ns == modified  # made once, reused
