"""Fine-tuning: data, collation, the dual encoder and its product, and whole runs (BM25/ANCE/static
rounds/few-shot/DPR input, resume) with a tiny BERT on real SciFact; one slow run with MiniLM."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from safetensors.torch import load_file
from typer.testing import CliRunner

from seedr.cli import app
from seedr.config.loading import load_config
from seedr.config.settings import FinetuneConfig, TrainConfig
from seedr.data.queries import sample_queries
from seedr.data.training_sets import load_training_set
from seedr.engine.trainer import Trainer
from seedr.losses import NLLLoss, Similarity, TripletLoss
from seedr.losses.base import in_batch_false_negatives
from seedr.modeling.encoder import load_tokenizer
from seedr.negatives import NegativeTable
from seedr.recipes import recipes_dir
from seedr.retrieval.dual_encoder import DOCUMENT_TOWER, DualEncoder
from seedr.retrieval.encode import TextEncoder
from seedr.training.few_shot import few_shot_table
from seedr.training.finetune import (
    FinetuneCollator,
    FinetuneData,
    FinetuneExample,
    build_model,
    check_dev_metrics,
    finetune,
    steps_for_epochs,
)
from tests.helpers import save_tiny_bert

runner = CliRunner()
RECIPES = recipes_dir("finetune")


# ------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def scifact_small(shared_data: Path, tmp_path_factory) -> Path:
    """A small BEIR folder cut from real SciFact: 40 train and 20 test queries, their abstracts, and other
    abstracts up to 200 documents (SciFact's own files, rows kept verbatim)."""
    source = shared_data / "scifact"
    folder = tmp_path_factory.mktemp("scifact-small")
    (folder / "qrels").mkdir()
    chosen_queries: set[str] = set()
    needed: set[str] = set()
    for split, count in (("train", 40), ("test", 20)):
        lines = (source / "qrels" / f"{split}.tsv").read_text().splitlines()
        qids = list(dict.fromkeys(line.split("\t")[0] for line in lines[1:]))[:count]
        kept = [line for line in lines[1:] if line.split("\t")[0] in qids]
        (folder / "qrels" / f"{split}.tsv").write_text("\n".join([lines[0], *kept]) + "\n")
        chosen_queries.update(qids)
        needed.update(line.split("\t")[1] for line in kept)
    corpus_lines = (source / "corpus.jsonl").read_text().splitlines()
    documents = [line for line in corpus_lines if json.loads(line)["_id"] in needed]
    documents += [line for line in corpus_lines if json.loads(line)["_id"] not in needed][:200 - len(documents)]
    (folder / "corpus.jsonl").write_text("\n".join(documents) + "\n")
    queries = [line for line in (source / "queries.jsonl").read_text().splitlines()
               if json.loads(line)["_id"] in chosen_queries]
    (folder / "queries.jsonl").write_text("\n".join(queries) + "\n")
    return folder


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    """A freshly initialised 2-layer, 32-wide BERT with MiniLM's (BERT) vocabulary, [CLS] pooling."""
    return save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), "cls")


def _config(tiny_model: Path, data: Path, **changes) -> FinetuneConfig:
    train = changes.pop("train", {})
    config = FinetuneConfig(model=str(tiny_model), train_data=str(data), query_max_length=32, document_max_length=64,
                            encode_batch_size=64,
                            train=TrainConfig(**{"max_steps": 4, "batch_size": 8, "learning_rate": 1e-3,
                                                 "log_every": 1, "save_every": 100, **train}))
    for key, value in changes.items():
        setattr(config, key, value)
    return config


def _metrics(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


# --------------------------------------------------------------------------------------- configuration


def test_a_partial_train_mapping_keeps_fine_tuning_defaults_and_the_warmup_follows_the_run() -> None:
    config = load_config(FinetuneConfig, None, ["train.max_steps=50"])
    assert config.train.learning_rate == 2e-5  # fine-tuning's, not pre-training's 1e-4
    assert config.train.resolved_warmup_steps == 5  # the default share of 50 steps, not 100 steps
    in_steps = load_config(FinetuneConfig, None, ["train.max_steps=50", "train.warmup_steps=20"])
    assert in_steps.train.resolved_warmup_steps == 20  # steps given replace the share


@pytest.mark.parametrize("recipe", sorted(RECIPES.glob("*.yaml")), ids=lambda path: path.stem)
def test_recipes_reach_their_peak_rate_in_a_cpu_scale_run(recipe: Path) -> None:
    """The README's CPU examples cut a recipe to 200 (or 100) steps: the warm-up is cut with it."""
    for steps in (100, 200):
        train = load_config(FinetuneConfig, recipe, [f"train.max_steps={steps}"]).train
        assert train.warmup_steps is None and train.resolved_warmup_steps <= steps // 10


# --------------------------------------------------------------------------------------- data + collate


def test_epochs_are_deterministic_and_use_labelled_documents(scifact_small: Path) -> None:
    training = load_training_set(scifact_small)
    assert len(training.queries) == 40 and all(training.qrels[q] for q in training.queries)
    from seedr.negatives import NEGATIVES

    table = NEGATIVES.build("bm25", {"depth": 30}).mine(training.corpus, training.queries, training.qrels, None, "")
    data = FinetuneData(training, table, Path("/run/negatives"), Path("/run"), negatives_per_query=3, seed=5,
                        epoch_over="queries")
    first, again, second = data.dataset(0), data.dataset(0), data.dataset(1)
    assert first == again and [e.query_id for e in first] != [e.query_id for e in second]
    assert sorted(e.query_id for e in first) == sorted(training.queries)  # every query once per epoch
    for example in first + second:
        assert example.positive.id in training.qrels[example.query_id]
        assert len(example.negatives) == 3
        assert not {d.id for d in example.negatives} & set(training.qrels[example.query_id])
    # episodes (ANCE) are consecutive slices of the same shuffled passes
    episodes = FinetuneData(training, table, Path("/run/negatives"), Path("/run"), 3, seed=5, examples_per_epoch=16,
                            epoch_over="queries")
    stream = [e.query_id for k in range(5) for e in episodes.dataset(k)]
    assert stream[:40] == [e.query_id for e in first] and stream[40:80] == [e.query_id for e in second]


def test_an_epoch_passes_over_the_919_pairs_or_809_queries_of_scifact_train(shared_data: Path, tmp_path: Path) -> None:
    training = load_training_set(shared_data / "scifact")
    no_negatives = NegativeTable({}, {"strategy": "in_batch"})
    pairs, queries = (FinetuneData(training, no_negatives, Path("/run/negatives"), Path("/run"), 0, seed=5,
                                   epoch_over=unit) for unit in ("pairs", "queries"))
    labelled = sorted((qid, doc) for qid, judged in training.qrels.items() for doc, grade in judged.items() if grade > 0)
    assert len(labelled) == 919 and len(training.queries) == 809
    assert sorted((e.query_id, e.positive.id) for e in pairs.dataset(0)) == labelled  # each pair once
    by_query = queries.dataset(0)
    assert sorted(e.query_id for e in by_query) == sorted(training.queries)  # each query once
    assert all((e.query_id, e.positive.id) in set(labelled) for e in by_query)
    # epochs → optimizer steps, batches of 32 on one process: the partial last batch kept or dropped
    train = TrainConfig(batch_size=32)
    assert [steps_for_epochs(1, len(data.units), train, 1, drop) for data in (pairs, queries)
            for drop in (False, True)] == [29, 28, 26, 25]  # 919 = 28 × 32 + 23; 809 = 25 × 32 + 9
    assert steps_for_epochs(2, 919, TrainConfig(batch_size=16, gradient_accumulation_steps=2), 1, False) == 58
    assert FinetuneConfig().epoch_over == "pairs" and FinetuneConfig().drop_last is False
    with pytest.raises(ValueError, match="epoch_over"):
        FinetuneConfig(epoch_over="documents")
    with pytest.raises(ValueError, match="dev_metrics R@1000 go deeper than the 100 documents"):
        check_dev_metrics(FinetuneConfig(dev_metrics=["nDCG@10", "R@1000"], dev_depth=100))
    with pytest.raises(ValueError, match="dev_metrics R@1000 go deeper"):  # before any data is read
        finetune(FinetuneConfig(dev_metrics=["R@1000"], dev_depth=100, train_data="missing"), tmp_path / "run")


def test_collator_lays_out_positives_then_negatives(scifact_small: Path) -> None:
    training = load_training_set(scifact_small)
    tokenizer = load_tokenizer("minilm")
    from seedr.training.finetune import FinetuneExample

    shared_doc = next(doc for doc in training.corpus.values()
                      if sum(doc.id in judged for judged in training.qrels.values()) == 0)
    qids = sorted(training.queries)[:2]
    # qrels saying the second query's positive is also relevant to the first: it is then no negative of it
    relevant = {qids[0]: {training.corpus[next(iter(training.qrels[qids[0]]))].id,
                          training.corpus[next(iter(training.qrels[qids[1]]))].id},
                qids[1]: set(training.qrels[qids[1]])}
    examples = [FinetuneExample(q, training.queries[q], training.corpus[next(iter(training.qrels[q]))], (shared_doc,))
                for q in qids]
    batch = FinetuneCollator(tokenizer, 16, 48, relevant)(examples)
    assert batch["query_input_ids"].shape[0] == 2 and batch["query_input_ids"].shape[1] <= 16
    assert batch["document_input_ids"].shape[0] == 4 and batch["document_input_ids"].shape[1] <= 48
    mask = in_batch_false_negatives(batch["relevant_keys"], batch["document_keys"])
    assert mask.tolist() == [[False, True, False, False], [False, False, False, False]]
    # documents are "title [SEP] text": token type 1 on the text, as at search time
    first = batch["document_input_ids"][0].tolist()
    title_ids = tokenizer(examples[0].positive.title, add_special_tokens=False)["input_ids"]
    assert first[1:1 + len(title_ids)] == title_ids and batch["document_token_type_ids"][0].max() == 1


# ------------------------------------------------------------------------------------------ dual encoder


def _inputs(model: DualEncoder, queries: list[str], documents: list[str]) -> dict[str, torch.Tensor]:
    q = model.tokenizer(queries, padding=True, return_tensors="pt")
    d = model.tokenizer(documents, padding=True, return_tensors="pt")
    return {"query_input_ids": q["input_ids"], "query_attention_mask": q["attention_mask"],
            "document_input_ids": d["input_ids"], "document_attention_mask": d["attention_mask"]}


def test_forward_returns_the_named_loss_and_trains_both_towers(tiny_model: Path) -> None:
    model = DualEncoder.from_pretrained(tiny_model, NLLLoss(), shared=False)
    assert model.document_encoder is not None and model.pooling == "cls" and model.similarity == Similarity("dot")
    inputs = _inputs(model, ["what heals wounds", "gene expression in mice"],
                     ["wound healing study", "mouse gene expression", "a negative", "another negative"])
    output = model(**inputs)
    assert set(output.parts) == {"nll"} and torch.isfinite(output.loss)
    assert 0 <= output.metrics["accuracy"].item() <= 1
    output.loss.backward()
    query_grad = model.query_encoder.embeddings.word_embeddings.weight.grad
    document_grad = model.document_encoder.embeddings.word_embeddings.weight.grad
    assert query_grad is not None and query_grad.abs().sum() > 0 and document_grad.abs().sum() > 0
    # the towers see different tokens: rows used only by documents get gradient only in the document tower
    only_in_documents = model.tokenizer("negative", add_special_tokens=False)["input_ids"][0]
    assert query_grad[only_in_documents].abs().sum() == 0 and document_grad[only_in_documents].abs().sum() > 0


@pytest.mark.parametrize("pooling,similarity", [("cls", "dot"), ("mean", "cosine")])
def test_saved_product_loads_in_transformers_and_sentence_transformers(tiny_model: Path, tmp_path: Path,
                                                                         pooling: str, similarity: str) -> None:
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel

    model = DualEncoder.from_pretrained(tiny_model, TripletLoss(), shared=False, pooling=pooling,
                                        similarity=similarity).eval()
    model.save(tmp_path / "product")
    texts = ["Dense retrieval with a dual encoder.", "Wound healing in diabetic mice"]
    expected = model.embed_queries(texts)
    st = SentenceTransformer(str(tmp_path / "product"), device="cpu")
    # under cosine, sentence-transformers normalises at scoring time (similarity_fn_name), seedr at encoding
    assert np.allclose(st.encode(texts, normalize_embeddings=similarity == "cosine"), expected, atol=1e-5)
    assert st.similarity_fn_name == similarity
    hf = AutoModel.from_pretrained(str(tmp_path / "product"))
    tokens = model.tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        states = hf(**tokens).last_hidden_state
    pooled = states[:, 0] if pooling == "cls" else (states * tokens["attention_mask"][..., None]).sum(1) / \
        tokens["attention_mask"].sum(1, keepdim=True)
    if similarity == "cosine":  # embed_* L2-normalise under cosine, so an inner-product index ranks right
        pooled = torch.nn.functional.normalize(pooled, dim=-1)
    assert np.allclose(pooled.numpy(), expected, atol=1e-5)
    # the document tower is a loadable model of its own, and reloading restores towers and settings
    documents = SentenceTransformer(str(tmp_path / "product" / DOCUMENT_TOWER), device="cpu")
    assert documents.encode(texts).shape == expected.shape
    again = DualEncoder.from_pretrained(tmp_path / "product")
    assert not again.shared and again.pooling == pooling and again.similarity == model.similarity


# ------------------------------------------------------------------------------------------ whole runs


def test_finetune_command_trains_and_ships_a_loadable_encoder(tiny_model: Path, scifact_small: Path,
                                                             tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    out = tmp_path / "run"
    result = runner.invoke(app, [
        "finetune", "--model", str(tiny_model), "--train", str(scifact_small), "--negatives", "bm25",
        "--loss", "nll", "--out", str(out), "--dev-qrels", str(scifact_small / "qrels" / "test.tsv"),
        "--dev-every", "10", "--set", "train.max_steps=30", "--set", "train.batch_size=8",
        "--set", "train.learning_rate=1e-3", "--set", "train.warmup_ratio=0", "--set", "train.log_every=5",
        "--set", "document_max_length=64", "--set", "query_max_length=32", "--set", "negative_options.depth=50",
        # a random tiny BERT learns within a few steps with mean pooling and a scaled cosine, not with [CLS]
        "--set", "pooling=mean", "--set", "similarity=cosine"])
    assert result.exit_code == 0, result.output
    lines = _metrics(out)
    losses = [line["loss"] for line in lines if "loss" in line]
    assert losses[-1] < 0.75 * losses[0], losses  # the training loss falls
    assert [line["step"] for line in lines if "dev/nDCG@10" in line] == [0, 10, 20, 30]  # Figure 6's curve
    recorded = yaml.safe_load((out / "config.yaml").read_text())
    assert recorded["loss"] == "nll" and recorded["negative_options"] == {"depth": 50}
    assert recorded["pooling"] == "mean" and recorded["similarity"] == "cosine"
    assert recorded["train"]["max_steps"] == 30
    provenance = json.loads((out / "negatives" / "provenance.json").read_text())
    assert provenance["strategy"] == "bm25" and provenance["depth"] == 50
    encoder = SentenceTransformer(str(out / "encoder"), device="cpu")
    assert encoder.encode(["cancer"]).shape == (1, 32) and encoder.similarity_fn_name == "cosine"


@pytest.fixture()
def seed_run(tiny_model: Path, tmp_path: Path) -> Path:
    """A SEED-Encoder pre-training run as seedr leaves it: its ``config.yaml`` and, in ``encoder/``, an
    encoder saved with the [CLS] pooling of the objective's bottleneck."""
    import shutil

    run = tmp_path / "seed"
    shutil.copytree(tiny_model, run / "encoder")
    (run / "config.yaml").write_text(yaml.safe_dump({"objective_name": "seed", "objective": {"bottleneck": "cls"}}))
    return run


def test_a_seed_is_fine_tuned_through_the_vector_its_objective_trained(seed_run: Path, scifact_small: Path,
                                                                        tmp_path: Path) -> None:
    """``sentence_encoder`` says ``pooling: mean`` (MiniLM's); a SEED-Encoder seed keeps its [CLS] bottleneck
    unless the user sets a pooling, and the run says which in its first line."""
    import seedr

    for model in (seed_run, seed_run / "encoder"):
        resolved = seedr.resolve_settings("finetune", config="sentence_encoder", model=model)
        assert (resolved.pooling, resolved.similarity) == ("cls", "cosine")  # the similarity stays the recipe's
    asked = seedr.resolve_settings("finetune", config="sentence_encoder", model=seed_run, settings={"pooling": "mean"})
    assert asked.pooling == "mean"
    assert seedr.resolve_settings("finetune", config="sentence_encoder", model="minilm").pooling == "mean"
    mlm = tmp_path / "mlm"  # MLM trains no pooled vector: the recipe's pooling stands
    (mlm / "encoder").mkdir(parents=True)
    for file in (seed_run / "encoder").iterdir():
        (mlm / "encoder" / file.name).symlink_to(file)
    (mlm / "config.yaml").write_text(yaml.safe_dump({"objective_name": "mlm"}))
    assert seedr.resolve_settings("finetune", config="sentence_encoder", model=mlm).pooling == "mean"

    tiny = ["--train", str(scifact_small), "--set", "epochs=null", "--set", "train.max_steps=1",
            "--set", "train.batch_size=4", "--set", "document_max_length=32", "--set", "query_max_length=16"]
    result = runner.invoke(app, ["finetune", "--config", "sentence_encoder", "--model", str(seed_run),
                                 "--out", str(tmp_path / "kept"), *tiny])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == \
        f"pooling: cls, as the seed {seed_run} was pre-trained (SEED-Encoder's [CLS] bottleneck)"
    assert yaml.safe_load((tmp_path / "kept" / "config.yaml").read_text())["pooling"] == "cls"
    pooled = json.loads((tmp_path / "kept" / "encoder" / "1_Pooling" / "config.json").read_text())
    assert pooled["pooling_mode_cls_token"] and not pooled["pooling_mode_mean_tokens"]
    result = runner.invoke(app, ["finetune", "--config", "sentence_encoder", "--model", str(seed_run),
                                 "--out", str(tmp_path / "mean"), "--set", "pooling=mean", *tiny])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == \
        f"pooling: mean (set), though the seed {seed_run} was pre-trained through cls (SEED-Encoder's [CLS] bottleneck)"


def test_config_yaml_records_the_settings_the_run_resolved(tiny_model: Path, scifact_small: Path,
                                                            tmp_path: Path) -> None:
    config = _config(tiny_model, scifact_small, loss="nll", epochs=1.0, train={"warmup_ratio": 0.25})
    assert (config.pooling, config.similarity, config.scale, config.shared_encoder) == (None, None, None, None)
    summary = finetune(config, tmp_path / "run")
    recorded = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    # the tiny model's folder says [CLS]; seedr's defaults then: one shared encoder, dot product (scale 1)
    assert (recorded["pooling"], recorded["similarity"], recorded["scale"]) == ("cls", "dot", 1.0)
    assert recorded["shared_encoder"] is True
    # one epoch over the pairs in batches of 8 sets the steps, and the warm-up is a quarter of them
    steps = summary["steps"]
    assert recorded["train"]["max_steps"] == steps == -(-summary["examples_per_epoch"] // 8)
    assert TrainConfig(**recorded["train"]).resolved_warmup_steps == -(-steps // 4)


def test_the_title_mode_is_trained_recorded_and_used_by_encode(tiny_model: Path, scifact_small: Path,
                                                                tmp_path: Path) -> None:
    config = _config(tiny_model, scifact_small, loss="nll", title="join", train={"max_steps": 2})
    finetune(config, tmp_path / "run")
    encoder_dir = tmp_path / "run" / "encoder"
    assert json.loads((encoder_dir / "seedr_dual_encoder.json").read_text())["title"] == "join"
    assert yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["title"] == "join"
    # fine-tuning fed "title text" as one segment: one [SEP], token type 0 throughout
    model = DualEncoder.from_pretrained(encoder_dir, document_max_length=64)
    assert model.title == "join"
    training = load_training_set(scifact_small)
    titled = next(document for document in training.corpus.values() if document.title)
    example = FinetuneExample("q", "a query", titled, ())
    batch = FinetuneCollator(model.tokenizer, 32, 64, {}, model.title)([example])
    assert int((batch["document_input_ids"] == model.tokenizer.sep_token_id).sum()) == 1
    assert not batch["document_token_type_ids"].any()
    # seedr encode reads the mode from the model folder: the vectors the model was trained to give
    result = runner.invoke(app, ["encode", "--model", str(encoder_dir), "--corpus", str(scifact_small / "corpus.jsonl"),
                                 "--out", str(tmp_path / "emb"), "--limit", "5", "--max-length", "64"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "emb" / "manifest.json").read_text())["encoder"]["title"] == "join"
    documents = list(training.corpus.values())[:5]
    shipped = TextEncoder(encoder_dir, max_length=64).encode_documents(documents)
    np.testing.assert_allclose(shipped, model.embed_documents(documents), atol=1e-5)
    assert TextEncoder(encoder_dir, max_length=64, title="pair").title == "pair"  # unless told otherwise
    with pytest.raises(ValueError, match="title must be one of"):
        FinetuneConfig(title="prefix")


def test_bad_input_is_one_clear_line(tiny_model: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["finetune", "--model", str(tiny_model), "--out", str(tmp_path / "x")])
    assert result.exit_code == 1 and "no training data" in result.output
    result = runner.invoke(app, ["finetune", "--train", str(tmp_path / "missing"), "--out", str(tmp_path / "x")])
    assert result.exit_code == 1 and "no such file or folder" in result.output
    help_text = runner.invoke(app, ["finetune", "--help"]).output
    assert "seedr finetune --model minilm --train" in help_text


def _killed_after_checkpoint(step: int):
    """``Trainer._save`` that stands for a kill right after the checkpoint of ``step`` is written."""
    save = Trainer._save

    def save_then_stop(trainer: Trainer) -> None:
        save(trainer)
        if trainer.step == step:
            raise KeyboardInterrupt(f"killed after the checkpoint of step {step}")

    return save_then_stop


def test_resume_continues_exactly(tiny_model: Path, scifact_small: Path, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config(tiny_model, scifact_small, loss="triplet", train={"max_steps": 6, "save_every": 3})
    finetune(config, tmp_path / "whole")
    with monkeypatch.context() as patch, pytest.raises(KeyboardInterrupt):
        patch.setattr(Trainer, "_save", _killed_after_checkpoint(3))
        finetune(config, tmp_path / "cut")
    finetune(config, tmp_path / "cut", resume=True)
    whole = load_file(tmp_path / "whole" / "encoder" / "model.safetensors")
    resumed = load_file(tmp_path / "cut" / "encoder" / "model.safetensors")
    assert all(torch.equal(whole[name], resumed[name]) for name in whole)


def test_ance_refreshes_inline_like_a_separate_process(tiny_model: Path, scifact_small: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config(tiny_model, scifact_small, loss="nll", negatives="ance",
                     negative_options={"refresh_every": 2, "depth": 30}, train={"max_steps": 6, "save_every": 2,
                                                                               "keep_checkpoints": 3})
    out = tmp_path / "ance"
    finetune(config, out)
    refreshes = sorted(p.name for p in (out / "ance").iterdir())
    assert refreshes == ["refresh-0", "refresh-2", "refresh-4"]
    provenance = json.loads((out / "ance" / "refresh-2" / "provenance.json").read_text())
    assert provenance["step"] == 2 and provenance["checkpoint"] == "checkpoints/step-2/encoder"
    assert json.loads((out / "ance" / "refresh-0" / "provenance.json").read_text())["checkpoint"] == str(tiny_model)
    logged = [line for line in _metrics(out) if "ance/changed" in line]
    assert [line["step"] for line in logged] == [2, 4] and all(line["ance/changed"] > 0 for line in logged)
    # the refresh as its own stage (another process), from the checkpoint of that step, mines the same negatives
    result = runner.invoke(app, ["finetune", "--ance-refresh-only", "--model", str(out / "checkpoints" / "step-2"),
                                 "--train", str(scifact_small), "--out", str(tmp_path / "separate"),
                                 "--set", "negative_options.depth=30", "--set", "query_max_length=32",
                                 "--set", "document_max_length=64"])
    assert result.exit_code == 0, result.output
    inline, alone = NegativeTable.load(out / "ance" / "refresh-2"), NegativeTable.load(tmp_path / "separate")
    assert {q: [n.id for n in c] for q, c in inline.negatives.items()} == \
        {q: [n.id for n in c] for q, c in alone.negatives.items()}
    assert alone.provenance["step"] == 2  # read from the checkpoint
    # the negative table is resumable state: resuming from step 2 ends with the same weights
    with monkeypatch.context() as patch, pytest.raises(KeyboardInterrupt):
        patch.setattr(Trainer, "_save", _killed_after_checkpoint(2))
        finetune(config, tmp_path / "cut")
    assert not (tmp_path / "cut" / "ance" / "refresh-4").exists()
    finetune(config, tmp_path / "cut", resume=True)
    whole = load_file(out / "encoder" / "model.safetensors")
    resumed = load_file(tmp_path / "cut" / "encoder" / "model.safetensors")
    assert all(torch.equal(whole[name], resumed[name]) for name in whole)


def test_static_rounds_mine_with_the_previous_round(tiny_model: Path, scifact_small: Path, tmp_path: Path) -> None:
    config = _config(tiny_model, scifact_small, loss="nll", negatives="static", epochs=1.0,
                     negative_options={"rounds": 2, "depth": 30})
    summary = finetune(config, tmp_path / "rounds")
    first = json.loads((tmp_path / "rounds" / "round-1" / "negatives" / "provenance.json").read_text())
    second = json.loads((tmp_path / "rounds" / "round-2" / "negatives" / "provenance.json").read_text())
    assert first["checkpoint"] == str(tiny_model)
    assert second["checkpoint"] == str(tmp_path / "rounds" / "round-1" / "encoder")
    # one epoch: the labelled pairs of the 40 queries (some have two positives) in batches of 8
    assert summary["examples_per_epoch"] > 40 and summary["steps"] == -(-summary["examples_per_epoch"] // 8)
    assert len(summary["rounds"]) == 2 and (tmp_path / "rounds" / "encoder" / "model.safetensors").exists()
    round_two = load_file(tmp_path / "rounds" / "round-2" / "encoder" / "model.safetensors")
    final = load_file(tmp_path / "rounds" / "encoder" / "model.safetensors")
    assert all(torch.equal(round_two[name], final[name]) for name in final)


def test_few_shot_runs_each_seed_on_its_own_sample_and_averages(tiny_model: Path, scifact_small: Path,
                                                                 tmp_path: Path) -> None:
    training = load_training_set(scifact_small)
    assert sample_queries(training.queries, count=10, seed=1) == sample_queries(training.queries, count=10, seed=1)
    assert sample_queries(training.queries, count=10, seed=1) != sample_queries(training.queries, count=10, seed=2)
    config = _config(tiny_model, scifact_small, loss="nll", negatives="in_batch", few_shot=16.0, seeds=[1, 2],
                     dev_qrels=str(scifact_small / "qrels" / "test.tsv"), train={"max_steps": 2})
    summary = finetune(config, tmp_path / "few")
    table = json.loads((tmp_path / "few" / "few-shot.json").read_text())
    assert [run["seed"] for run in table["runs"]] == [1, 2] and all(run["queries"] == 16 for run in table["runs"])
    for name, mean in table["mean"].items():
        assert mean == pytest.approx(np.mean([run["dev"][name] for run in table["runs"]]))
    assert summary["dev"] == table["mean"]
    for seed in (1, 2):
        recorded = yaml.safe_load((tmp_path / "few" / f"seed-{seed}" / "config.yaml").read_text())
        assert recorded["train"]["seed"] == seed
    assert "mean ± std" in (tmp_path / "few" / "few-shot.md").read_text()
    assert few_shot_table([{"seed": 1, "queries": 1, "dev": {"m": 0.2}}, {"seed": 2, "queries": 1, "dev": {"m": 0.4}}])[
        "std"]["m"] == pytest.approx(np.std([0.2, 0.4], ddof=1))


def test_few_shot_needs_a_dev_set_only_to_compare_seeds(tiny_model: Path, scifact_small: Path, tmp_path: Path) -> None:
    """Several seeds are compared on dev; one seed (an experiment's condition) trains on its sample and its
    encoder is evaluated afterwards, so it needs none."""
    with pytest.raises(ValueError, match="several seeds are compared on a dev set"):
        finetune(_config(tiny_model, scifact_small, loss="nll", negatives="in_batch", few_shot=16.0, seeds=[1, 2],
                         train={"max_steps": 2}), tmp_path / "two")
    summary = finetune(_config(tiny_model, scifact_small, loss="nll", negatives="in_batch", few_shot=16.0,
                               train={"max_steps": 2}), tmp_path / "one")
    (run,) = summary["few_shot"]["runs"]
    assert run["queries"] == 16 and run["dev"] == {}
    assert (tmp_path / "one" / f"seed-{run['seed']}" / "encoder" / "model.safetensors").is_file()


def test_dpr_training_file(tiny_model: Path, scifact_small: Path, tmp_path: Path) -> None:
    training = load_training_set(scifact_small)
    def context(doc):
        return {"title": doc.title, "text": doc.text, "passage_id": doc.id}
    unjudged = [d for d in training.corpus.values() if all(d.id not in j for j in training.qrels.values())]
    items = [{"question": training.queries[q], "answers": ["-"],
              "positive_ctxs": [context(training.corpus[next(iter(training.qrels[q]))])],
              "hard_negative_ctxs": [context(unjudged[i]), context(unjudged[i + 1])]}
             for i, q in enumerate(sorted(training.queries)[:16])]
    (tmp_path / "train.json").write_text(json.dumps(items))
    config = _config(tiny_model, tmp_path / "train.json", loss="nll", negatives="static", train={"max_steps": 2})
    summary = finetune(config, tmp_path / "dpr")
    provenance = json.loads((tmp_path / "dpr" / "negatives" / "provenance.json").read_text())
    assert "hard_negative_ctxs" in provenance["source"] and provenance["negatives"] == 32
    assert summary["queries"] == 16 and (tmp_path / "dpr" / "encoder" / "config.json").exists()


# --------------------------------------------------------------------------------------------- slow


@pytest.mark.slow
@pytest.mark.timeout(3600)  # the whole SciFact encoded twice: past the 900 s default on a slower CPU
def test_minilm_fine_tuned_on_scifact_train_improves_scifact_test(shared_data: Path, tmp_path: Path) -> None:
    """MiniLM fine-tuned DPR-style (NLL over a BM25 negative + the batch's other documents) on SciFact's
    809 training queries for 200 steps: its SciFact test nDCG@10 (full 5,183-abstract corpus, exact
    search) rises. Documents are cut at 128 tokens before and after, to keep CPU time in check."""
    scifact = shared_data / "scifact"
    out = tmp_path / "minilm-scifact"
    config = FinetuneConfig(model="minilm", train_data=str(scifact), loss="nll", negatives="bm25",
                            dev_qrels=str(scifact / "qrels" / "test.tsv"), dev_every=0, document_max_length=128,
                            epoch_over="queries",  # as measured in seedr/recipes/finetune/dpr.yaml
                            train=TrainConfig(max_steps=200, batch_size=8, learning_rate=2e-5, warmup_steps=20,
                                              log_every=10, save_every=200, keep_checkpoints=1))
    started = time.perf_counter()
    summary = finetune(config, out)
    minutes = (time.perf_counter() - started) / 60
    lines = _metrics(out)
    before, after = lines[0]["dev/nDCG@10"], summary["dev"]["dev/nDCG@10"]
    losses = [line["loss"] for line in lines if "loss" in line]
    print(f"SciFact test nDCG@10: MiniLM {before:.4f} -> fine-tuned {after:.4f}; MRR@10 {lines[0]['dev/MRR@10']:.4f} "
          f"-> {summary['dev']['dev/MRR@10']:.4f}; training loss {losses[0]:.3f} -> {losses[-1]:.3f}; {minutes:.1f} min")
    assert after > before + 0.01
    # the shipped encoder embeds as the model that was evaluated (loaded the way `seedr encode` loads it)
    training = load_training_set(scifact)
    documents = list(training.corpus.values())[:16]
    shipped = TextEncoder(out, pooling="mean", normalize=True, max_length=128).encode_documents(documents)
    assert np.allclose(shipped, DualEncoder.from_pretrained(out, document_max_length=128).embed_documents(documents),
                       atol=1e-5)


def test_reinitialize_keeps_the_architecture_with_fresh_seeded_weights(tiny_model: Path) -> None:
    """``reinitialize``: ICLR 2020's "No Pretraining" rows — the folder's architecture and vocabulary,
    new weights drawn from the training seed (the same seed, the same weights)."""
    loaded = build_model(_config(tiny_model, tiny_model), str(tiny_model))
    fresh = [build_model(_config(tiny_model, tiny_model, reinitialize=True, train={"seed": seed}), str(tiny_model))
             for seed in (1, 1, 2)]
    before = loaded.query_encoder.state_dict()
    after = [model.query_encoder.state_dict() for model in fresh]
    assert after[0].keys() == before.keys() and fresh[0].tokenizer.vocab_size == loaded.tokenizer.vocab_size
    weight = "encoder.layer.0.attention.self.query.weight"
    assert not torch.equal(after[0][weight], before[weight])
    assert torch.equal(after[0][weight], after[1][weight]) and not torch.equal(after[0][weight], after[2][weight])


def test_a_refused_watch_or_model_leaves_no_run_folder_and_the_fixed_rerun_starts_afresh(
        tiny_model: Path, scifact_small: Path, tmp_path: Path) -> None:
    # a damaged watched qrels file was refused only after the negatives were mined, and a model folder
    # holding a pickle only once config.yaml and run.json were written: the next plain run was then told to
    # --resume a run "stopped before its first checkpoint"
    damaged = tmp_path / "watched.tsv"
    damaged.write_text("query-id\tcorpus-id\tscore\n1\t31715818\n")
    pickled = tmp_path / "pickled"
    shutil.copytree(tiny_model, pickled)
    (pickled / "model.safetensors").rename(pickled / "pytorch_model.bin")
    out = tmp_path / "ft"
    lengths = ["--set", "query_max_length=16", "--set", "document_max_length=32",
               "--set", "train.max_steps=1", "--set", "train.batch_size=4"]
    watch = ["--dev-qrels", str(scifact_small / "qrels" / "test.tsv"),
             "--set", f"watch.queries={scifact_small}/queries.jsonl",
             "--set", f"watch.corpus={scifact_small}/corpus.jsonl"]
    for arguments, said in [([*watch, "--model", str(tiny_model), "--set", f"watch.qrels={damaged}"],
                             f"{damaged}, line 2: expected 3 tab-separated columns"),
                            (["--model", str(pickled)], "pytorch_model.bin: seedr loads safetensors only")]:
        result = runner.invoke(app, ["finetune", "--train", str(scifact_small), "--out", str(out), *lengths,
                                     *arguments])
        assert result.exit_code == 1 and said in result.output, result.output
        assert "mining" not in result.output and not out.exists()
    result = runner.invoke(app, ["finetune", "--train", str(scifact_small), "--out", str(out), *lengths,
                                 *watch, "--model", str(tiny_model),
                                 "--set", f"watch.qrels={scifact_small}/qrels/test.tsv"])
    assert result.exit_code == 0, result.output
    assert "watch/MRR@10" in _metrics(out)[-1]
