"""Every encoder seedr saves carries a model card (README.md with Hugging Face metadata) that
huggingface_hub.ModelCard.load parses: base model, objective and its paper, data, steps, evaluation
results found in the run folder, and how to load it. A card reads the same on every machine: titled by
its folder's final name or its run's, never by the temporary it was written in, and naming models and
data by names, never by absolute paths or paths relative to where the command ran (issue 42)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from helpers import tiny_bert
from huggingface_hub import ModelCard
from typer.testing import CliRunner

from seedr.cli import app
from seedr.config.settings import FinetuneConfig
from seedr.modeling.encoder import save_encoder
from seedr.modeling.model_card import write_model_card
from seedr.provenance import record_run
from seedr.training.run_card import write_run_card


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
    assert "`wiki/enwiki-2015-00.jsonl.xz`" in card.text and "**Training steps**: 3" in card.text
    assert "SentenceTransformer('path/to/this/folder')" in card.text and "AutoModel.from_pretrained" in card.text
    assert card.data.model_name == "seed" and card.text.startswith("\n# seed\n")
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
    dev = "scifact/qrels/test.tsv"  # the shared data set's file, named within the shared data
    assert found == {(dev, "MRR@10"): 0.61, (dev, "nDCG@10"): 0.63,
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
    from seedr.objectives.mlm.objective import MaskedLanguageModel
    from seedr.objectives.mlm.options import MLMConfig

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


# ------------------------------------------------------------------ cards read the same on every machine

#: What only one machine's card could hold: an ``atomic_directory`` temporary (``.<name>.<pid>@<host>.*.tmp``).
TEMPORARY = re.compile(r"\.tmp\b|\.\d+@[^\s/`]+")


def assert_portable(card: Path, *machine_paths: Path | str) -> str:
    """The card's text, checked to name no temporary folder and no absolute path of this machine."""
    text = card.read_text(encoding="utf-8")
    assert not TEMPORARY.search(text), TEMPORARY.search(text)
    for path in {*map(str, machine_paths), "/root", "/work", "/home", "/tmp", str(Path.home())}:
        assert path not in text, f"{card} names {path}"
    return text


def beir_folder(source: Path, folder: Path, queries: int) -> Path:
    """A BEIR folder of SciFact's first ``queries`` test queries, their judgments and judged abstracts."""
    lines = (source / "qrels" / "test.tsv").read_text().splitlines()
    qids = list(dict.fromkeys(line.split("\t")[0] for line in lines[1:]))[:queries]
    judged = [line for line in lines[1:] if line.split("\t")[0] in qids]
    (folder / "qrels").mkdir(parents=True)
    (folder / "qrels" / "test.tsv").write_text("\n".join([lines[0], *judged]) + "\n")
    documents = {line.split("\t")[1] for line in judged}
    for name, wanted, field in (("corpus.jsonl", documents, "_id"), ("queries.jsonl", set(qids), "_id")):
        rows = [row for row in (source / name).read_text().splitlines() if json.loads(row)[field] in wanted]
        (folder / name).write_text("\n".join(rows) + "\n")
    return folder


def test_no_card_names_a_temporary_folder_or_a_path_of_the_machine(tokenizer, wiki_shard, shared_data,
                                                                   tmp_path, monkeypatch):
    """Pre-training and fine-tuning publish <run>/encoder, ``seedr average`` and ``save_encoder`` write
    inside temporaries of ``atomic_directory``; commands are given paths relative to where they run (the
    issue: a card titled ``.encoder.13229@vm.293_rlfu.tmp`` with ``Base model: runs/seed-mydomain``)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mydomain").mkdir()
    shutil.copy(wiki_shard, tmp_path / "mydomain")
    beir_folder(shared_data / "scifact", tmp_path / "scifact", queries=12)
    runner = CliRunner()
    result = runner.invoke(app, [
        "pretrain", "--objective", "mlm", "--corpus", "mydomain", "--out", "runs/seed-mydomain", "--size", "tiny",
        "--tokenizer", "minilm", "--set", "model.hidden_size=32", "--set", "model.num_attention_heads=2",
        "--set", "model.intermediate_size=64", "--set", "data.max_documents=10", "--set", "data.max_seq_length=32",
        "--set", "train.max_steps=2", "--set", "train.batch_size=4"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, [
        "finetune", "--model", "runs/seed-mydomain", "--train", "scifact", "--negatives", "bm25", "--loss", "nll",
        "--out", "runs/ft", "--dev-qrels", "scifact/qrels/test.tsv", "--dev-every", "2",
        "--set", "train_split=test", "--set", "train.max_steps=2", "--set", "train.batch_size=4",
        "--set", "train.warmup_ratio=0",
        "--set", "document_max_length=32", "--set", "query_max_length=16", "--set", "negative_options.depth=5"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["average", "runs/ft", "runs/seed-mydomain", "--out", "soup"])
    assert result.exit_code == 0, result.output
    save_encoder(tiny_bert(tokenizer), tokenizer, "plain")

    pretrained = assert_portable(tmp_path / "runs" / "seed-mydomain" / "encoder" / "README.md", tmp_path)
    assert pretrained.startswith("---") and "\n# seed-mydomain\n" in pretrained
    assert "**Data**: `mydomain`" in pretrained
    finetuned = assert_portable(tmp_path / "runs" / "ft" / "encoder" / "README.md", tmp_path)
    assert "\n# ft\n" in finetuned and "**Base model**: `seed-mydomain`" in finetuned
    assert "**Data**: `scifact` (split `test`)" in finetuned and "scifact/qrels/test.tsv" in finetuned
    soup = assert_portable(tmp_path / "soup" / "README.md", tmp_path)
    assert "\n# soup\n" in soup and "- `ft` × 0.5" in soup and "- `seed-mydomain` × 0.5" in soup
    assert "\n# plain\n" in assert_portable(tmp_path / "plain" / "README.md", tmp_path)
    for card in (tmp_path / "runs").rglob("README.md"):  # the checkpoints' cards too
        assert_portable(card, tmp_path)


def test_the_committed_base_card_names_no_path_of_the_machine_it_was_trained_on():
    card = Path(__file__).resolve().parents[1] / "models" / "seedr-base" / "README.md"
    text = assert_portable(card, Path(__file__).resolve().parents[1])
    assert ModelCard.load(card).data.model_name == "seedr-base" and "\n# seedr-base\n" in text
    assert "**Data**: `wiki/enwiki-2015-0[0-6].jsonl.xz`" in text


def test_a_temporary_folder_is_carded_by_the_name_it_will_have(tokenizer, tmp_path):
    from seedr.io import atomic_directory
    from seedr.modeling.model_card import final_folder, portable_name

    with atomic_directory(tmp_path / "my-encoder") as temporary:
        assert final_folder(temporary) == tmp_path / "my-encoder"
        save_encoder(tiny_bert(tokenizer), tokenizer, temporary)
    assert ModelCard.load(tmp_path / "my-encoder" / "README.md").data.model_name == "my-encoder"
    assert [portable_name(name) for name in ("minilm", "seedr-base", "models/seedr-base", "/srv/runs/seed/encoder",
                                             "../shared/data/scifact", "mydata/qrels/dev.tsv", "x/corpus.jsonl")] \
        == ["minilm", "seedr-base", "seedr-base", "seed", "scifact", "mydata/qrels/dev.tsv", "x/corpus.jsonl"]


def test_the_card_gives_the_sentence_transformers_calls_of_seedrs_vectors(tokenizer, tmp_path):
    """The calls themselves are checked against seedr's vectors in test_sentence_transformers_parity.py."""
    folder = save_encoder(tiny_bert(tokenizer), tokenizer, tmp_path / "plain", max_seq_length=64)
    text = ModelCard.load(folder / "README.md").text
    usage = text[text.index("## Usage"):]
    assert "query_vectors = model.encode(queries)" in usage
    assert ("document_vectors = model.encode([[title, text] if title and text else title or text "
            "for title, text in documents])") in usage
    assert "cut to 64 tokens" in usage and "--compute-dtype float32" in usage

    (folder / "seedr_dual_encoder.json").write_text(json.dumps({"title": "join"}))  # as fine-tuning records it
    usage = ModelCard.load(write_model_card(folder)).text
    assert "model.encode([f'{title} {text}' if title else text for title, text in documents])" in usage
