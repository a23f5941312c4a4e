"""Every encoder seedr saves carries a model card (README.md with Hugging Face metadata) that
huggingface_hub.ModelCard.load parses: base model, objective and its paper, data, steps, evaluation
results found in the run folder, and how to load it."""

from __future__ import annotations

import json
from pathlib import Path

from huggingface_hub import ModelCard
from typer.testing import CliRunner

from helpers import tiny_bert
from seedr.cli import app
from seedr.config import record_run
from seedr.modeling.encoder import save_encoder
from seedr.modeling.model_card import write_model_card
from seedr.training.finetune import FinetuneConfig
from seedr.training.publish import write_run_card


def test_a_pretrained_encoder_carries_a_card_with_its_run(wiki_shard, tmp_path):
    out = tmp_path / "runs" / "seed"
    result = CliRunner().invoke(app, [
        "pretrain", "--objective", "seed", "--corpus", str(wiki_shard), "--out", str(out), "--size", "tiny",
        "--tokenizer", "minilm", "--set", "model.hidden_size=32", "--set", "model.num_attention_heads=2",
        "--set", "model.intermediate_size=64", "--set", "data.max_documents=20", "--set", "data.max_seq_length=32",
        "--set", "train.max_steps=3", "--set", "train.batch_size=4", "--set", "train.log_every=1"])
    assert result.exit_code == 0, result.output
    card = ModelCard.load(out / "encoder" / "README.md")
    assert card.data.library_name == "sentence-transformers" and "seedr" in card.data.tags
    assert card.data.base_model is None  # from scratch: no hub model to name
    assert "`seed` — SEED-Encoder (Lu et al., EMNLP 2021" in card.text  # the objective and its paper
    assert "from scratch, size `tiny`" in card.text
    assert f"`{wiki_shard}`" in card.text and "**Training steps**: 3" in card.text
    assert "SentenceTransformer('path/to/this/folder')" in card.text and "AutoModel.from_pretrained" in card.text
    assert "states[:, 0]  # the [CLS] vector" in card.text


def test_a_card_lists_the_evaluations_of_its_run_folder(tokenizer, shared_data, tmp_path):
    run = tmp_path / "finetune"
    config = FinetuneConfig(model="minilm", train_data=str(shared_data / "scifact"), loss="nll",
                            negatives="bm25", dev_qrels=str(shared_data / "scifact" / "qrels" / "test.tsv"))
    record_run(run, config, seed=42)
    (run / "metrics.jsonl").write_text(
        '{"step": 100, "loss": 0.71, "dev/MRR@10": 0.52, "dev/nDCG@10": 0.55}\n'
        '{"step": 200, "loss": 0.43, "dev/MRR@10": 0.61, "dev/nDCG@10": 0.63}\n')
    (run / "scifact-test.json").write_text(json.dumps(  # as `seedr evaluate --json` writes it
        {"mode": "qrels", "runs": {"dense": "dense.trec"}, "metrics": {"nDCG@10": 0.6466, "R@100": 0.9}}))
    encoder = save_encoder(tiny_bert(tokenizer), tokenizer, run / "encoder", pooling="mean")
    assert ModelCard.load(encoder / "README.md").data.eval_results is None  # the folder alone: nothing yet

    write_run_card(encoder, run_dir=run)  # the run's loss and negatives described from its config.yaml
    card = ModelCard.load(encoder / "README.md")
    assert card.data.base_model == "sentence-transformers/all-MiniLM-L6-v2"
    found = {(result.dataset_name, result.metric_type): result.metric_value for result in card.data.eval_results}
    assert found == {(config.dev_qrels, "MRR@10"): 0.61, (config.dev_qrels, "nDCG@10"): 0.63,
                     ("scifact-test", "nDCG@10"): 0.6466, ("scifact-test", "R@100"): 0.9}
    assert "`nll` — " in card.text and "`bm25` — " in card.text and "**Training steps**: 200" in card.text
    assert "| scifact-test | nDCG@10 | 0.6466 |" in card.text
    assert "(states * mask).sum(1) / mask.sum(1)" in card.text  # the folder's own pooling

    write_model_card(encoder, run_dir=run)  # the card alone knows no registry: what it is not told, it names only
    assert "**Fine-tuning loss**: `nll`\n" in ModelCard.load(encoder / "README.md").text


def test_the_card_does_not_change_how_the_folder_loads(tokenizer, tmp_path):
    from sentence_transformers import SentenceTransformer

    folder = save_encoder(tiny_bert(tokenizer), tokenizer, tmp_path / "encoder")
    assert (folder / "README.md").exists()
    assert SentenceTransformer(str(folder), device="cpu").encode(["tides"]).shape == (1, 32)


def test_loading_a_card_from_a_path(tmp_path: Path, tokenizer):
    folder = save_encoder(tiny_bert(tokenizer), tokenizer, tmp_path / "plain")
    card = ModelCard.load(folder / "README.md")
    assert card.data.model_name == "plain" and "no training details recorded" in card.text


def test_a_masked_lm_base_says_so_with_its_held_out_accuracy(tokenizer, tmp_path):
    """A product saved with its MLM head (``objective.save_head``) is carded as a masked-LM base, not a
    retriever, with the held-out masked-LM figures that ``seedr diagnose --out RUN`` left in the run."""
    from seedr.objectives.mlm import MaskedLanguageModel, MLMConfig

    run = tmp_path / "base"
    record_run(run, {"objective_name": "mlm", "model": {"init": None, "size": "mini"}, "data": {"corpus": ["wiki"]}},
               seed=1)
    (run / "diagnostics.json").write_text(json.dumps({"metrics": {
        "heldout_masked_accuracy": 0.41, "heldout_mlm_loss": 3.2, "unigram_loss": 6.6}, "details": {}}))
    objective = MaskedLanguageModel(tiny_bert(tokenizer), tokenizer, MLMConfig(save_head=True))
    folder = objective.save_encoder(tmp_path / "seedr-base")
    write_model_card(folder, run_dir=run)
    card = ModelCard.load(folder / "README.md")
    assert card.data.pipeline_tag == "fill-mask" and card.data.model_name == "seedr-base"
    assert "masked-language-model base" in card.text and "not a retriever" in card.text
    found = {result.metric_type: result.metric_value for result in card.data.eval_results}
    assert found == {"heldout_masked_accuracy": 0.41, "heldout_mlm_loss": 3.2, "unigram_loss": 6.6}
    assert "| held-out text | masked-token accuracy | 0.4100 |" in card.text and "pipeline('fill-mask'" in card.text

    plain = save_encoder(tiny_bert(tokenizer), tokenizer, tmp_path / "plain")
    assert ModelCard.load(plain / "README.md").data.pipeline_tag == "sentence-similarity"
