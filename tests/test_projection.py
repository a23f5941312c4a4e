"""Projection heads (the ICLR 2020 two-tower models' linear layer on [CLS], saved as a sentence-transformers
``Dense`` module) survive fine-tuning and retrieval: ``DualEncoder``, ``TextEncoder``, ``seedr encode`` and
``SentenceTransformer(dir)`` give the same embeddings, before and after fine-tuning. Also: the one
tokenisation of text pairs shared by encoding, fine-tuning and two-tower pre-training. Tiny BERT (hidden
32, 2 layers) on real SciFact abstracts and queries."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import tiny_bert
from torch import nn
from typer.testing import CliRunner

from seedr.cli import app
from seedr.config.settings import FinetuneConfig, TrainConfig
from seedr.data.corpus import load_corpus
from seedr.data.queries import read_queries
from seedr.data.records import Document
from seedr.io import DataError
from seedr.losses import NLLLoss
from seedr.modeling.encoder import save_encoder
from seedr.modeling.projection import Projection, load_projection, read_modules
from seedr.objectives.ict.objective import ICTObjective
from seedr.objectives.pair_tasks import Pair
from seedr.objectives.two_tower_options import TwoTowerConfig
from seedr.retrieval.dual_encoder import DOCUMENT_TOWER, DualEncoder
from seedr.retrieval.embeddings import load_embeddings
from seedr.retrieval.encode import TextEncoder, tokenize_pairs
from seedr.training.finetune import FinetuneCollator, FinetuneExample, finetune

MAX_LENGTH = 128  # the tiny BERT's positions; saved as max_seq_length so sentence-transformers cuts there too


@pytest.fixture(scope="module")
def scifact(shared_data: Path) -> tuple[list[Document], list[str]]:
    """The first 40 SciFact abstracts (with their titles) and 12 real test queries."""
    corpus = load_corpus(shared_data / "scifact" / "corpus.jsonl")
    queries = read_queries(shared_data / "scifact" / "queries.jsonl")
    return list(corpus.values())[:40], list(queries.values())[:12]


@pytest.fixture(scope="module")
def scifact_train(shared_data: Path, tmp_path_factory) -> Path:
    """A BEIR folder cut from real SciFact: 16 training queries, their abstracts and others (60 in all)."""
    source = shared_data / "scifact"
    folder = tmp_path_factory.mktemp("scifact-train")
    (folder / "qrels").mkdir()
    lines = (source / "qrels" / "train.tsv").read_text().splitlines()
    qids = list(dict.fromkeys(line.split("\t")[0] for line in lines[1:]))[:16]
    kept = [line for line in lines[1:] if line.split("\t")[0] in qids]
    (folder / "qrels" / "train.tsv").write_text("\n".join([lines[0], *kept]) + "\n")
    needed = {line.split("\t")[1] for line in kept}
    corpus_lines = (source / "corpus.jsonl").read_text().splitlines()
    documents = [line for line in corpus_lines if json.loads(line)["_id"] in needed]
    documents += [line for line in corpus_lines if json.loads(line)["_id"] not in needed][:60 - len(documents)]
    (folder / "corpus.jsonl").write_text("\n".join(documents) + "\n")
    queries = [line for line in (source / "queries.jsonl").read_text().splitlines()
               if json.loads(line)["_id"] in qids]
    (folder / "queries.jsonl").write_text("\n".join(queries) + "\n")
    return folder


def two_tower_model(tokenizer, folder: Path, separate_towers: bool = False) -> ICTObjective:
    """A two-tower objective with a 16-dimensional projection, saved to ``folder`` as pre-training does."""
    torch.manual_seed(0)
    objective = ICTObjective(tiny_bert(tokenizer), tokenizer,
                             TwoTowerConfig(projection_dim=16, separate_towers=separate_towers)).eval()
    objective.save_encoder(folder, max_seq_length=MAX_LENGTH)
    return objective


def sentence_transformer(folder: Path):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu")


def untitled(documents: list[Document]) -> list[Document]:
    """The abstracts alone, so seedr's document input equals sentence-transformers' single-text input."""
    return [Document(document.id, document.text) for document in documents]


# ------------------------------------------------------------------------------------------ loading


def test_dual_encoder_loads_the_projection_and_embeds_as_sentence_transformers(tokenizer, scifact, tmp_path):
    documents, queries = scifact
    objective = two_tower_model(tokenizer, tmp_path / "pretrained")
    model = DualEncoder.from_pretrained(tmp_path / "pretrained", NLLLoss(), query_max_length=MAX_LENGTH,
                                        document_max_length=MAX_LENGTH).eval()
    assert model.shared and isinstance(model.query_projection, Projection)
    assert torch.equal(model.query_projection.weight, objective.projection.weight)
    assert torch.equal(model.query_projection.bias, objective.projection.bias)
    reference = sentence_transformer(tmp_path / "pretrained")
    texts = [document.text for document in documents]
    expected_queries, expected_documents = reference.encode(queries), reference.encode(texts)
    assert expected_queries.shape == (len(queries), 16)
    np.testing.assert_allclose(model.embed_queries(queries), expected_queries, atol=1e-5)
    np.testing.assert_allclose(model.embed_documents(untitled(documents)), expected_documents, atol=1e-5)
    # what seedr encodes and searches with
    encoder = TextEncoder(tmp_path / "pretrained")
    assert encoder.dim == 16 and (encoder.pooling, encoder.normalize, encoder.max_length) == ("cls", False, 128)
    np.testing.assert_allclose(encoder.encode(texts, batch_size=7), expected_documents, atol=1e-5)
    # documents with titles ([CLS] title [SEP] text [SEP]) go through the same projection in both
    np.testing.assert_allclose(encoder.encode_documents(documents), model.embed_documents(documents), atol=1e-5)


def test_a_dense_module_written_by_sentence_transformers_loads_with_its_activation(tokenizer, scifact, tmp_path):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling, Transformer

    save_encoder(tiny_bert(tokenizer), tokenizer, tmp_path / "bert", max_seq_length=MAX_LENGTH)
    torch.manual_seed(1)
    reference = SentenceTransformer(modules=[
        Transformer(str(tmp_path / "bert"), max_seq_length=MAX_LENGTH), Pooling(32, "cls"),
        Dense(32, 8, bias=False, activation_function=nn.Tanh()), Normalize()], device="cpu")
    reference.save(str(tmp_path / "st"))
    projection = load_projection(tmp_path / "st")
    assert isinstance(projection.activation, nn.Tanh) and projection.bias is None
    texts = [document.text for document in scifact[0][:10]]
    encoder = TextEncoder(tmp_path / "st")
    assert encoder.normalize and encoder.dim == 8  # the folder's Normalize module, after the projection
    np.testing.assert_allclose(encoder.encode(texts), reference.encode(texts), atol=1e-5)
    # fine-tuning keeps the head as it found it: the tanh, no bias, then Normalize (cosine)
    model = DualEncoder.from_pretrained(tmp_path / "st", document_max_length=MAX_LENGTH)
    assert model.similarity.name == "cosine"
    model.save(tmp_path / "again")
    kinds = [module["type"].rsplit(".", 1)[-1] for module in read_modules(tmp_path / "again")]
    assert kinds == ["Transformer", "Pooling", "Dense", "Normalize"]
    np.testing.assert_allclose(sentence_transformer(tmp_path / "again").encode(texts), reference.encode(texts),
                               atol=1e-5)


def test_models_without_projection_are_unchanged(tokenizer, scifact, tmp_path):
    save_encoder(tiny_bert(tokenizer), tokenizer, tmp_path / "bert", max_seq_length=MAX_LENGTH)
    assert load_projection(tmp_path / "bert") is None
    encoder = TextEncoder(tmp_path / "bert")
    assert encoder.projection is None and encoder.dim == 32
    for similarity, head in (("dot", []), ("cosine", [("2_Normalize", "Normalize")])):
        model = DualEncoder.from_pretrained(tmp_path / "bert", similarity=similarity, document_max_length=MAX_LENGTH)
        assert model.query_projection is None and model.document_projection is None
        model.save(tmp_path / similarity)
        modules = read_modules(tmp_path / similarity)
        assert [(m["path"], m["type"].rsplit(".", 1)[-1]) for m in modules[2:]] == head
        texts = [document.text for document in scifact[0][:6]]
        np.testing.assert_allclose(TextEncoder(tmp_path / similarity).encode(texts),
                                   sentence_transformer(tmp_path / similarity).encode(texts), atol=1e-5)


@pytest.mark.parametrize("kinds", [["Transformer", "Pooling", "Normalize", "Dense"],
                                   ["Transformer", "Pooling", "Dense", "LayerNorm"]])
def test_heads_seedr_would_not_reproduce_are_refused(tokenizer, tmp_path, kinds):
    two_tower_model(tokenizer, tmp_path / "model")
    modules = read_modules(tmp_path / "model")
    by_kind = {module["type"].rsplit(".", 1)[-1]: module for module in modules}
    by_kind.setdefault("Normalize", {"path": "3_Normalize", "type": "sentence_transformers.models.Normalize"})
    by_kind.setdefault("LayerNorm", {"path": "3_LayerNorm", "type": "sentence_transformers.models.LayerNorm"})
    changed = [{**by_kind[kind], "idx": index, "name": str(index)} for index, kind in enumerate(kinds)]
    (tmp_path / "model" / "modules.json").write_text(json.dumps(changed))
    with pytest.raises(DataError, match="modules.json.*Transformer → Pooling → "):
        TextEncoder(tmp_path / "model")
    with pytest.raises(DataError, match=" → ".join(kinds)):
        DualEncoder.from_pretrained(tmp_path / "model")


def test_towers_must_embed_into_the_same_space(tokenizer):
    with pytest.raises(ValueError, match="16 dimensions.*32"):
        DualEncoder(tiny_bert(tokenizer), tokenizer, document_encoder=tiny_bert(tokenizer),
                    query_projection=Projection(32, 16))


# ------------------------------------------------------------------------------------------ fine-tuning


def test_fine_tuning_trains_and_ships_the_projection(tokenizer, scifact, scifact_train, tmp_path):
    """The user's path: pre-train with a projection, `seedr finetune`, `seedr encode` — one embedding throughout."""
    two_tower_model(tokenizer, tmp_path / "pretrained")
    before = load_projection(tmp_path / "pretrained")
    config = FinetuneConfig(model=str(tmp_path / "pretrained"), train_data=str(scifact_train), loss="nll",
                            negatives="in_batch", query_max_length=MAX_LENGTH, document_max_length=MAX_LENGTH,
                            train=TrainConfig(max_steps=2, batch_size=8, learning_rate=1e-2, warmup_steps=0,
                                              log_every=1, save_every=100))
    product = Path(finetune(config, tmp_path / "run")["encoder"])
    after = load_projection(product)
    assert after is not None and after.out_features == 16
    assert not torch.allclose(after.weight, before.weight) and not torch.allclose(after.bias, before.bias)
    documents, queries = scifact
    reference = sentence_transformer(product)
    expected = reference.encode(queries)
    model = DualEncoder.from_pretrained(product, query_max_length=MAX_LENGTH, document_max_length=MAX_LENGTH)
    assert torch.equal(model.query_projection.weight, after.weight)
    np.testing.assert_allclose(model.embed_queries(queries), expected, atol=1e-5)
    np.testing.assert_allclose(TextEncoder(product).encode_queries(queries), expected, atol=1e-5)
    # `seedr encode` writes the projected embeddings (here of the abstracts alone) and records their size
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": d.id, "title": d.title, "text": d.text}) + "\n"
                              for d in documents[:20]))
    result = CliRunner().invoke(app, ["encode", "--model", str(product), "--corpus", str(corpus),
                                      "--out", str(tmp_path / "embeddings"), "--title", "none",
                                      "--compute-dtype", "float32"])  # exactly sentence-transformers' vectors
    assert result.exit_code == 0, result.output
    ids, vectors = load_embeddings(tmp_path / "embeddings")
    assert ids == [d.id for d in documents[:20]]
    np.testing.assert_allclose(vectors, reference.encode([d.text for d in documents[:20]]), atol=1e-5)


def test_separate_towers_each_train_and_save_their_own_projection(tokenizer, scifact, tmp_path):
    documents, queries = scifact
    objective = two_tower_model(tokenizer, tmp_path / "pretrained", separate_towers=True)
    model = DualEncoder.from_pretrained(tmp_path / "pretrained", NLLLoss(), query_max_length=MAX_LENGTH,
                                        document_max_length=MAX_LENGTH)
    assert not model.shared
    assert torch.equal(model.document_projection.weight, objective.document_projection.weight)
    assert model.document_projection.weight.data_ptr() != model.query_projection.weight.data_ptr()
    before = {name: parameter.detach().clone() for name, parameter in model.named_parameters()
              if "projection" in name}
    examples = [FinetuneExample(str(i), query, document, (negative,))
                for i, (query, document, negative) in enumerate(zip(queries[:4], documents[:4], documents[4:8]))]
    batch = FinetuneCollator(tokenizer, MAX_LENGTH, MAX_LENGTH, {})(examples)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(2):
        optimizer.zero_grad()
        model(**batch).loss.backward()
        optimizer.step()
    parameters = dict(model.named_parameters())
    for name in ("query_projection.weight", "query_projection.bias", "document_projection.weight"):
        assert not torch.allclose(parameters[name], before[name]), name
    # ⟨q, Wd + b⟩ = ⟨q, Wd⟩ + ⟨q, b⟩: the document bias shifts all of a query's scores alike, so a softmax
    # over documents cannot see it (no gradient); it is still saved and applied at encoding
    assert torch.allclose(parameters["document_projection.bias"].grad, torch.zeros(16), atol=1e-6)
    model.eval().save(tmp_path / "product")
    assert (tmp_path / "product" / "2_Dense").is_dir() and (tmp_path / "product" / DOCUMENT_TOWER / "2_Dense").is_dir()
    np.testing.assert_allclose(sentence_transformer(tmp_path / "product").encode(queries),
                               model.embed_queries(queries), atol=1e-5)
    texts = untitled(documents[:10])
    np.testing.assert_allclose(sentence_transformer(tmp_path / "product" / DOCUMENT_TOWER).encode(
        [d.text for d in texts]), model.embed_documents(texts), atol=1e-5)
    # reloading restores both towers' projections
    again = DualEncoder.from_pretrained(tmp_path / "product", document_max_length=MAX_LENGTH)
    assert torch.equal(again.document_projection.weight, model.document_projection.weight)
    assert torch.equal(again.query_projection.bias, model.query_projection.bias)


def test_cosine_fine_tuning_writes_normalize_after_the_projection(tokenizer, scifact, tmp_path):
    two_tower_model(tokenizer, tmp_path / "pretrained")
    model = DualEncoder.from_pretrained(tmp_path / "pretrained", similarity="cosine", document_max_length=MAX_LENGTH)
    model.save(tmp_path / "cosine")
    modules = read_modules(tmp_path / "cosine")
    assert [module["path"] for module in modules] == ["", "1_Pooling", "2_Dense", "3_Normalize"]
    texts = [document.text for document in scifact[0][:10]]
    vectors = TextEncoder(tmp_path / "cosine").encode(texts)  # normalisation read from the folder
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(vectors, sentence_transformer(tmp_path / "cosine").encode(texts), atol=1e-5)


# ------------------------------------------------------------------------------------------ tokenisation


def test_one_tokenisation_of_text_pairs_everywhere(tokenizer, scifact):
    documents = [scifact[0][0], Document("untitled", scifact[0][1].text), scifact[0][2]]
    firsts = [document.title or document.text for document in documents]
    seconds = [document.text if document.title else None for document in documents]
    one_by_one = [dict(tokenizer(first, second, truncation=True, max_length=64))
                  for first, second in zip(firsts, seconds)]
    assert tokenize_pairs(tokenizer, firsts, seconds, 64) == one_by_one
    assert one_by_one[0]["input_ids"].count(tokenizer.sep_token_id) == 2  # [CLS] title [SEP] text [SEP]
    assert one_by_one[1]["input_ids"].count(tokenizer.sep_token_id) == 1  # [CLS] text [SEP]
    expected = tokenizer.pad(one_by_one, return_tensors="pt")
    # fine-tuning batches
    example = FinetuneExample("q", "a query", documents[0], tuple(documents[1:]))
    batch = FinetuneCollator(tokenizer, 32, 64, {})([example])
    for key in ("input_ids", "attention_mask", "token_type_ids"):
        assert torch.equal(batch[f"document_{key}"], expected[key])
    # two-tower pre-training batches
    objective = ICTObjective(tiny_bert(tokenizer), tokenizer, TwoTowerConfig(document_max_length=64))
    pairs = [Pair(f"query {i}", document.text, document.title, {"task": "ict"}) for i, document in enumerate(documents)]
    two_tower = objective.collate(pairs)
    for key in ("input_ids", "attention_mask", "token_type_ids"):
        assert torch.equal(two_tower[f"document_{key}"], expected[key])
