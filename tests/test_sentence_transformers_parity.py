"""A seedr encoder gives seedr's own vectors outside seedr: the sentence-transformers calls its model card
and ``save_encoder``'s docstring give — ``model.encode(queries)``, and ``model.encode`` of documents as
text pairs ``[title, text]`` (or the one non-empty field) — reproduce ``seedr encode`` and ``seedr search``
(title mode ``pair``, float32) for every document, truncation and untitled documents included, and the
folder loads in transformers and sentence-transformers without a missing-weights report (issue 42). The
card's call, run as written, holds for the product of every shipped fine-tuning recipe (each title mode,
separate towers), and the README's call for the README's retriever."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import tiny_bert
from safetensors import safe_open
from typer.testing import CliRunner

from seedr.cli import app
from seedr.data.records import Document
from seedr.modeling.encoder import (
    PLACEHOLDER_POOLER,
    POOLER_KEYS,
    load_encoder,
    save_encoder,
)
from seedr.recipes import recipes_dir
from seedr.retrieval.embeddings import load_embeddings
from seedr.retrieval.encode import TextEncoder

ROOT = Path(__file__).resolve().parents[1]
MAX_LENGTH = 48  # shorter than most SciFact abstracts: truncation is compared too


def st_documents(documents: list[Document]) -> list[str | list[str]]:
    """The documented layout (the model card's, ``save_encoder``'s): a pair when both fields are there."""
    return [[d.title, d.text] if d.title and d.text else d.title or d.text for d in documents]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture(scope="module")
def scifact_documents(shared_data: Path) -> list[Document]:
    """40 real SciFact abstracts: most longer than ``MAX_LENGTH`` tokens; every fifth without its title,
    one with its title only, and one whose title alone is longer than ``MAX_LENGTH``."""
    rows = [json.loads(line) for line in (shared_data / "scifact" / "corpus.jsonl").read_text().splitlines()[:40]]
    documents = [Document(id=row["_id"], text=row["text"], title="" if i % 5 == 0 else row["title"])
                 for i, row in enumerate(rows)]
    documents[1] = Document(id=rows[1]["_id"], text="", title=rows[1]["title"])
    documents[2] = Document(id=rows[2]["_id"], text=rows[2]["text"], title=rows[3]["text"])
    return documents


@pytest.fixture(scope="module")
def queries(shared_data: Path) -> list[str]:
    lines = (shared_data / "scifact" / "queries.jsonl").read_text().splitlines()[:20]
    return [json.loads(line)["text"] for line in lines]


@pytest.fixture(scope="module", params=["cls", "mean"])
def encoder_dir(request, tokenizer, tmp_path_factory) -> Path:
    """A tiny seedr encoder as fine-tuning saves it: its pooling, cosine with ``Normalize`` for mean."""
    torch.manual_seed(0)
    cosine = request.param == "mean"
    return save_encoder(tiny_bert(tokenizer), tokenizer, tmp_path_factory.mktemp("encoder") / request.param,
                        pooling=request.param, max_seq_length=MAX_LENGTH, similarity="cosine" if cosine else "dot",
                        normalize=cosine)


def loaded_quietly(load) -> object:
    """``load()``, with everything it printed, logged or warned checked for a missing-weights report."""
    stream, records = io.StringIO(), []
    handler = logging.Handler()
    handler.emit = records.append
    # transformers' and sentence-transformers' loggers do not propagate to the root logger
    loggers = [logging.getLogger(name) for name in ("", "transformers", "sentence_transformers")]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream), \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = load()
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
    said = stream.getvalue() + "".join(record.getMessage() for record in records) + \
        "".join(str(warning.message) for warning in caught)
    assert "missing" not in said.lower() and "newly initialized" not in said, said
    return model


def test_sentence_transformers_computes_seedrs_vectors(encoder_dir, scifact_documents, queries, tmp_path):
    from sentence_transformers import SentenceTransformer

    seedr = TextEncoder(encoder_dir, device="cpu", dtype="float32")
    assert seedr.max_length == MAX_LENGTH and seedr.title == "pair"
    lengths = [len(item) for item in seedr.tokenizer([d.title for d in scifact_documents],
                                                     [d.text for d in scifact_documents])["input_ids"]]
    assert sum(length > MAX_LENGTH for length in lengths) > 20  # most are cut
    model = SentenceTransformer(str(encoder_dir), device="cpu")

    documents = model.encode(st_documents(scifact_documents))
    assert cosines(seedr.encode_documents(scifact_documents), documents).min() >= 0.99999
    assert cosines(seedr.encode_queries(queries), model.encode(queries)).min() >= 0.99999
    # the retrieval API of sentence-transformers ≥ 5 is the same call here (the folder declares no prompts)
    assert cosines(documents, model.encode_document(st_documents(scifact_documents))).min() >= 0.99999

    # `seedr encode` itself (float32), on the same documents written as a BEIR corpus
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": d.id, "title": d.title, "text": d.text}) + "\n"
                              for d in scifact_documents))
    result = CliRunner().invoke(app, ["encode", "--model", str(encoder_dir), "--corpus", str(corpus),
                                      "--out", str(tmp_path / "embeddings"), "--compute-dtype", "float32",
                                      "--device", "cpu"])
    assert result.exit_code == 0, result.output
    ids, vectors = load_embeddings(tmp_path / "embeddings")
    assert ids == [d.id for d in scifact_documents]
    assert cosines(np.asarray(vectors), documents).min() >= 0.99999

    # what users tried first, the pair as one string, is not the same input (DPR's token types are lost)
    joined = model.encode([f"{d.title} [SEP] {d.text}" for d in scifact_documents if d.title and d.text])
    paired = model.encode(st_documents([d for d in scifact_documents if d.title and d.text]))
    assert not np.allclose(joined, paired, atol=1e-6)


def test_a_saved_encoder_loads_without_a_missing_weights_report(encoder_dir, scifact_documents):
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel

    with safe_open(str(encoder_dir / "model.safetensors"), framework="pt") as weights:
        assert PLACEHOLDER_POOLER in weights.metadata() and set(POOLER_KEYS) <= set(weights.keys())
    model = loaded_quietly(lambda: AutoModel.from_pretrained(str(encoder_dir)))
    loaded_quietly(lambda: SentenceTransformer(str(encoder_dir), device="cpu"))
    # the placeholder is BERT's pooler as identity: pooler_output = tanh([CLS]), no random projection
    batch = TextEncoder(encoder_dir, device="cpu").tokenizer(["what causes tides?"], return_tensors="pt")
    with torch.inference_mode():
        output = model(**batch)
    torch.testing.assert_close(output.pooler_output, torch.tanh(output.last_hidden_state[:, 0]))
    # seedr itself leaves the placeholder out, as it built the encoder, and says nothing about it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert loaded_quietly(lambda: load_encoder(encoder_dir)).pooler is None


def test_the_committed_base_loads_without_a_missing_weights_report():
    """``models/seedr-base`` is a masked-LM checkpoint with the placeholder pooler, laid out as Google's BERT
    checkpoints are (pooler and MLM head): nothing is missing for any class; each reports what it leaves
    as UNEXPECTED, as for those (``AutoModel`` the MLM head ``cls.*``, ``BertForMaskedLM`` the pooler)."""
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, BertForMaskedLM

    base = ROOT / "models" / "seedr-base"
    assert (base / "model.safetensors").stat().st_size <= 25_000_000
    loaded_quietly(lambda: AutoModel.from_pretrained(str(base)))
    loaded_quietly(lambda: SentenceTransformer(str(base), device="cpu"))
    masked_lm = loaded_quietly(lambda: BertForMaskedLM.from_pretrained(str(base)))
    with safe_open(str(base / "model.safetensors"), framework="pt") as weights:
        torch.testing.assert_close(masked_lm.cls.predictions.transform.dense.weight,
                                   weights.get_tensor("cls.predictions.transform.dense.weight"), rtol=0, atol=0)


def test_an_average_of_encoders_saved_before_and_after_placeholders_loads_quietly(tokenizer, tmp_path):
    """``seedr average`` of an encoder saved before placeholders existed (no pooler) and one saved after."""
    from safetensors.torch import load_file, save_file
    from transformers import AutoModel

    from seedr.modeling.averaging import average_encoders

    new = save_encoder(tiny_bert(tokenizer), tokenizer, tmp_path / "new")
    old = save_encoder(tiny_bert(tokenizer), tokenizer, tmp_path / "old")
    tensors = load_file(str(old / "model.safetensors"))
    save_file({name: tensor for name, tensor in tensors.items() if name not in POOLER_KEYS},
              str(old / "model.safetensors"), metadata={"format": "pt"})
    for members in ([old, new], [new, old]):
        soup = tmp_path / f"soup-{members[0].name}"
        average_encoders(members, soup)
        loaded_quietly(lambda: AutoModel.from_pretrained(str(soup)))  # noqa: B023 (called at once)
        with safe_open(str(soup / "model.safetensors"), framework="pt") as weights:
            assert PLACEHOLDER_POOLER in weights.metadata()
            torch.testing.assert_close(weights.get_tensor(POOLER_KEYS[0]), torch.eye(32), rtol=0, atol=0)


def card_python(folder: Path) -> str:
    """The model card's Python example, run against ``folder`` itself."""
    card = (folder / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", card, re.DOTALL)
    assert block, card
    return block.group(1).replace("path/to/this/folder", str(folder))


@pytest.mark.parametrize("recipe", sorted(path.stem for path in recipes_dir("finetune").glob("*.yaml")))
def test_every_recipe_s_model_card_gives_seedr_s_vectors(recipe, tokenizer, scifact_documents, queries, tmp_path):
    """Each shipped fine-tuning recipe's product (its pooling, similarity, towers and title mode: ``join`` for
    ``sentence_encoder``, the papers' ``pair`` otherwise): the card's call, run as written with
    sentence-transformers over documents with titles, gives the vectors seedr trains and searches with."""
    import seedr
    from seedr.training.finetune import build_model

    torch.manual_seed(0)
    base = save_encoder(tiny_bert(tokenizer), tokenizer, tmp_path / "base", max_seq_length=MAX_LENGTH)
    config = seedr.resolve_settings("finetune", config=recipe, model=base,
                                    settings={"query_max_length": MAX_LENGTH, "document_max_length": MAX_LENGTH})
    model = build_model(config, str(base))
    if not model.shared:  # separate towers that differ, so that a document encoded by the query tower shows
        with torch.no_grad():
            for parameter in model.document_encoder.parameters():
                parameter.add_(0.1 * torch.randn_like(parameter))
    product = model.save(tmp_path / "encoder")
    titled = [(d.title, d.text) for d in scifact_documents]
    namespace = {"queries": queries, "documents": titled}
    code = "\n".join(line for line in card_python(product).splitlines()
                     if not line.startswith(("queries = ", "documents = ")))  # our texts instead of the card's
    exec(compile(code, "model card", "exec"), namespace)  # noqa: S102 (seedr's own card)
    assert cosines(model.embed_queries(queries), namespace["query_vectors"]).min() >= 0.99999
    assert cosines(model.embed_documents(scifact_documents), namespace["document_vectors"]).min() >= 0.99999
    seedr_encoder = TextEncoder(product, device="cpu", dtype="float32")  # `seedr encode` and `seedr search`
    assert seedr_encoder.title == model.title
    assert cosines(seedr_encoder.encode_queries(queries), namespace["query_vectors"]).min() >= 0.99999
    assert cosines(seedr_encoder.encode_documents(scifact_documents), namespace["document_vectors"]).min() >= 0.99999


def test_the_readme_s_call_is_the_card_s_for_its_retriever(tokenizer, scifact_documents, tmp_path):
    """The README's sentence-transformers snippet encodes documents as its retriever (``sentence_encoder``,
    titles joined) was trained to read them: the same vectors as seedr's."""
    import seedr
    from seedr.training.finetune import build_model

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Using a seedr encoder anywhere"):]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    base = save_encoder(tiny_bert(tokenizer), tokenizer, tmp_path / "base", max_seq_length=MAX_LENGTH)
    model = build_model(seedr.resolve_settings("finetune", config="sentence_encoder", model=base,
                                               settings={"document_max_length": MAX_LENGTH}), str(base))
    product = model.save(tmp_path / "encoder")
    namespace = {"documents": [(d.title, d.text) for d in scifact_documents]}
    exec(compile(code.replace("runs/retriever/encoder", str(product)), "README", "exec"), namespace)  # noqa: S102
    assert cosines(model.embed_documents(scifact_documents), namespace["document_vectors"]).min() >= 0.99999
    card = (product / "README.md").read_text(encoding="utf-8")
    assert next(line for line in code.splitlines() if line.startswith("document_vectors")) in card
