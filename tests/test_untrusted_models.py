"""Model folders are untrusted input (issue 46): loading one never runs code it carries (an ``auto_map``, a
custom ``model_type`` or a pickled module weight is refused in one line naming the file, whatever stdin
answers), its fingerprint covers every module ``modules.json`` names, lengths beyond its positions are
refused before any data is read, and a damaged ``tokenizer.json`` is one line naming it. Copies of the
seedr base and tiny BERTs over MiniLM's vocabulary, real SciFact abstracts and queries."""

from __future__ import annotations

import builtins
import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from helpers import first_lines, tiny_bert
from typer.testing import CliRunner

from seedr.cli import app
from seedr.io import DataError
from seedr.modeling import encoder as encoder_module
from seedr.modeling.encoder import (
    load_encoder,
    load_tokenizer,
    model_fingerprint,
    resolve_model_path,
    save_encoder,
)
from seedr.modeling.projection import PROJECTION_FOLDER, Projection, load_projection

runner = CliRunner()
POSITIONS = 64  # the tiny models' max_position_embeddings


def seedr(*args: object, stdin: str | None = None):
    return runner.invoke(app, [str(a) for a in args], input=stdin)


def assert_one_error_line(result, *expected: str) -> None:
    """Exit 1, exactly one line starting ``error:`` holding every ``expected`` text, no traceback."""
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    assert all(text in " ".join(result.output.split()) for text in expected), result.output
    assert "Traceback" not in result.output


def tiny_model(tokenizer, folder: Path, projection: bool = False) -> Path:
    """A random 2-layer, 32-wide BERT with 64 positions saved as a model folder, with a 16-dimensional
    ``Dense`` projection if asked (as two-tower pre-training saves one)."""
    torch.manual_seed(0)
    model = tiny_bert(tokenizer, intermediate_size=64, max_position_embeddings=POSITIONS)
    head = Projection(model.config.hidden_size, 16) if projection else None
    return save_encoder(model, tokenizer, folder, max_seq_length=POSITIONS, projection=head)


@pytest.fixture(scope="module")
def corpus(shared_data: Path, tmp_path_factory) -> Path:
    """The first 20 SciFact abstracts, verbatim (BEIR corpus.jsonl)."""
    return first_lines(shared_data / "scifact" / "corpus.jsonl", 20, tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def queries(shared_data: Path, tmp_path_factory) -> Path:
    return first_lines(shared_data / "scifact" / "queries.jsonl", 5, tmp_path_factory.mktemp("queries"))


@pytest.fixture(scope="module")
def model(tokenizer, tmp_path_factory) -> Path:
    return tiny_model(tokenizer, tmp_path_factory.mktemp("model") / "tiny")


@pytest.fixture(scope="module")
def projected(tokenizer, tmp_path_factory) -> Path:
    return tiny_model(tokenizer, tmp_path_factory.mktemp("projected") / "tiny", projection=True)


def copy_model(source: Path, folder: Path) -> Path:
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("report"))
    return folder


def edit_json(path: Path, **changes: object) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


# ------------------------------------------------------------------ 1. a model folder's own Python never runs


def evil_folder(folder: Path, marker: Path, where: str) -> Path:
    """A copy of the seedr base whose ``where`` (config or tokenizer) asks transformers to run
    ``modeling_evil.py`` beside the weights, a file that writes ``marker`` when imported; for ``tokenizer
    folder``, its tokenizer files alone (as ``seedr prepare`` writes a tokenizer folder)."""
    copy_model(resolve_model_path("seedr-base"), folder)
    if where == "tokenizer folder":
        for name in ("config.json", "model.safetensors", "modules.json", "1_Pooling"):
            shutil.rmtree(folder / name) if (folder / name).is_dir() else (folder / name).unlink()
    (folder / "modeling_evil.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "from transformers import BertConfig, BertModel, PreTrainedTokenizerFast\n"
        "class EvilConfig(BertConfig):\n    model_type = 'evil'\n"
        "class EvilModel(BertModel):\n    config_class = EvilConfig\n"
        "class EvilTokenizer(PreTrainedTokenizerFast):\n    pass\n")
    if where == "config":
        edit_json(folder / "config.json", model_type="evil",
                  auto_map={"AutoConfig": "modeling_evil.EvilConfig", "AutoModel": "modeling_evil.EvilModel"})
    else:
        edit_json(folder / "tokenizer_config.json", tokenizer_class="EvilTokenizer",
                  auto_map={"AutoTokenizer": [None, "modeling_evil.EvilTokenizer"]})
    return folder


@pytest.mark.parametrize(("where", "named"), [("config", "config.json"), ("tokenizer", "tokenizer_config.json")])
def test_a_folder_with_its_own_code_is_refused_whatever_stdin_answers(corpus: Path, tmp_path: Path, where,
                                                                      named) -> None:
    marker = tmp_path / "pwned"
    evil = evil_folder(tmp_path / "evil", marker, where)
    result = seedr("encode", "--model", evil, "--corpus", corpus, "--out", tmp_path / "emb", stdin="y\n" * 5)
    assert_one_error_line(result, f"{evil / named}", "auto_map", "modeling_evil.py", "never runs")
    assert "[y/N]" not in result.output
    assert not marker.exists() and not (tmp_path / "emb").exists()


def test_a_tokenizer_folder_with_its_own_code_is_refused_whatever_stdin_answers(tmp_path: Path) -> None:
    """A tokenizer folder has no config.json naming a tokenizer transformers provides: its ``auto_map`` alone
    decides, and transformers asks on stdin whether to run it."""
    marker = tmp_path / "pwned"
    evil = evil_folder(tmp_path / "evil", marker, "tokenizer folder")
    result = seedr("pretrain", "--objective", "mlm", "--size", "tiny", "--tokenizer", evil, "--out", tmp_path / "run",
                   "--set", "data.max_documents=20", "--set", "train.max_steps=1", stdin="y\n" * 5)
    assert_one_error_line(result, f"{evil / 'tokenizer_config.json'}", "auto_map", "modeling_evil.py", "never runs")
    assert not marker.exists()


def test_an_architecture_transformers_does_not_know_is_refused(model: Path, corpus: Path, tmp_path: Path) -> None:
    custom = copy_model(model, tmp_path / "custom")
    edit_json(custom / "config.json", model_type="evil")
    result = seedr("encode", "--model", custom, "--corpus", corpus, "--out", tmp_path / "emb", stdin="y\n")
    assert_one_error_line(result, str(custom / "config.json"), "model_type", "'evil'")
    with pytest.raises(DataError, match="model_type"):
        load_encoder(custom)


def test_the_loaders_themselves_never_trust_remote_code(tmp_path: Path, monkeypatch) -> None:
    """With the folder check out of the way and every prompt answered yes, transformers still runs nothing:
    each loader says trust_remote_code=False."""
    marker = tmp_path / "pwned"
    monkeypatch.setattr(encoder_module, "check_model_folder", lambda folder: None, raising=False)
    monkeypatch.setattr(builtins, "input", lambda prompt="": "y")
    config = evil_folder(tmp_path / "config", marker, "config")
    tokenizer = evil_folder(tmp_path / "tokenizer", marker, "tokenizer folder")
    with pytest.raises(ValueError, match="trust_remote_code"):
        load_encoder(config)
    with pytest.raises(DataError, match="trust_remote_code"):
        load_tokenizer(tokenizer)
    assert not marker.exists()


# ------------------------------------------------------------------ 2. no pickle behind a module


class Exploit:
    """Unpickled, it writes a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("name", ["pytorch_model.bin", "model.pt"])
@pytest.mark.parametrize("crafted", [True, False])
def test_pickled_dense_weights_are_refused_never_unpickled(projected: Path, corpus: Path, tmp_path: Path, name,
                                                           crafted) -> None:
    marker = tmp_path / "pwned"
    folder = copy_model(projected, tmp_path / "model")
    dense = folder / PROJECTION_FOLDER
    (dense / "model.safetensors").unlink()
    state = {"linear.weight": Exploit(marker) if crafted else torch.zeros(16, 32), "linear.bias": torch.zeros(16)}
    torch.save(state, dense / name)
    result = seedr("encode", "--model", folder, "--corpus", corpus, "--out", tmp_path / "emb")
    assert_one_error_line(result, str(dense / name), "safetensors only", "model.safetensors")
    assert "weights_only" not in result.output
    with pytest.raises(DataError, match="safetensors only"):
        load_projection(folder)
    assert not marker.exists() and not (tmp_path / "emb").exists()


# ------------------------------------------------------------------ 8. the fingerprint covers every module


def test_the_fingerprint_covers_a_module_wherever_modules_json_puts_it(projected: Path, corpus: Path,
                                                                        queries: Path, tmp_path: Path) -> None:
    folder = copy_model(projected, tmp_path / "model")
    (folder / PROJECTION_FOLDER).rename(folder / "proj")
    modules = json.loads((folder / "modules.json").read_text())
    modules[2]["path"] = "proj"
    (folder / "modules.json").write_text(json.dumps(modules))
    assert seedr("encode", "--model", folder, "--corpus", corpus, "--out", tmp_path / "emb").exit_code == 0
    assert seedr("index", "--embeddings", tmp_path / "emb", "--out", tmp_path / "index").exit_code == 0
    before = model_fingerprint(folder)

    from safetensors.torch import load_file, save_file

    weights = load_file(folder / "proj" / "model.safetensors")
    save_file({key: -value for key, value in weights.items()}, folder / "proj" / "model.safetensors")
    assert model_fingerprint(folder) != before
    result = seedr("search", "--index", tmp_path / "index", "--queries", queries, "--out", tmp_path / "run.trec")
    assert_one_error_line(result, "fingerprint", "encode and index the corpus again")
    assert not (tmp_path / "run.trec").exists()


def test_modules_outside_the_folder_are_refused(projected: Path, tmp_path: Path) -> None:
    folder = copy_model(projected, tmp_path / "model")
    modules = json.loads((folder / "modules.json").read_text())
    for path in ("../elsewhere", "/etc"):
        modules[2]["path"] = path
        (folder / "modules.json").write_text(json.dumps(modules))
        with pytest.raises(DataError, match="inside the model folder") as info:
            model_fingerprint(folder)
        assert info.value.path == str(folder / "modules.json")


def test_a_module_folder_linked_out_of_the_model_is_refused(projected: Path, tmp_path: Path) -> None:
    """#58 item 7: ``1_Pooling -> /`` had the fingerprint walk and hash the whole file system. A module
    folder resolves inside the model folder, refused in one line before anything is read; the link to a
    file (as a Hugging Face cache makes) still reads."""
    folder = copy_model(projected, tmp_path / "model")
    pooling = folder / "1_Pooling"
    for path in pooling.iterdir():
        path.unlink()
    pooling.rmdir()
    pooling.symlink_to("/", target_is_directory=True)
    with pytest.raises(DataError, match="link leading out of the model folder") as info:
        model_fingerprint(folder)
    assert info.value.path == str(pooling) and "\n" not in str(info.value)
    corpus = tmp_path / "corpus.jsonl"  # a corpus that is there: inputs are checked before the model
    corpus.write_text('{"_id": "d1", "text": "a text"}\n')
    result = seedr("encode", "--model", folder, "--corpus", corpus, "--out", tmp_path / "emb")
    assert_one_error_line(result, "link leading out of the model folder")
    linked = copy_model(projected, tmp_path / "linked")
    weights = linked / "model.safetensors"
    weights.rename(tmp_path / "blob")
    weights.symlink_to(tmp_path / "blob")
    assert model_fingerprint(linked) == model_fingerprint(projected)


def test_the_fingerprint_of_a_standard_folder_is_unchanged(projected: Path) -> None:
    """Indexes recorded before every module was covered stay valid: a folder as seedr saves it has the files
    it had (config.json and the weights in 2_Dense/, 1_Pooling/config.json)."""
    import hashlib

    files = ["1_Pooling/config.json", "2_Dense/config.json", "2_Dense/model.safetensors", "config.json",
             "model.safetensors", "modules.json", "sentence_bert_config.json", "tokenizer.json",
             "tokenizer_config.json"]
    digest = hashlib.sha256()
    for name in files:
        digest.update(name.encode() + b"\0" + (projected / name).read_bytes() + b"\0")
    assert model_fingerprint(projected) == digest.hexdigest()


# ------------------------------------------------------------------ 13. lengths beyond the model's positions


def test_encode_refuses_a_length_beyond_the_models_positions(model: Path, corpus: Path, tmp_path: Path) -> None:
    result = seedr("encode", "--model", model, "--corpus", corpus, "--out", tmp_path / "emb", "--max-length", 100000)
    assert_one_error_line(result, "--max-length", "100000", f"{POSITIONS} positions", str(model))
    assert not (tmp_path / "emb").exists()
    result = seedr("encode", "--model", model, "--corpus", corpus, "--out", tmp_path / "emb", "--max-length",
                   POSITIONS, "--limit", 3)
    assert result.exit_code == 0, result.output


def test_continued_pretraining_refuses_a_length_beyond_the_models_positions(model: Path, wiki_shard: Path,
                                                                           tmp_path: Path) -> None:
    out = tmp_path / "runs" / "mlm"
    result = seedr("pretrain", "--objective", "mlm", "--model", model, "--corpus", wiki_shard, "--out", out,
                   "--set", "data.max_seq_length=2048", "--set", "train.max_steps=1")
    assert_one_error_line(result, "data.max_seq_length", "2048", f"{POSITIONS} positions", str(model))
    assert not (tmp_path / "runs" / "shards").exists()  # refused before the corpus is tokenised


def test_the_usable_positions_leave_out_a_padding_offset() -> None:
    """RoBERTa-style models number positions from ``pad_token_id + 1``: of 66 embeddings, 64 are usable."""
    from transformers import BertConfig, BertModel, RobertaConfig, RobertaModel

    from seedr.modeling.folders import usable_positions

    sizes = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64,
             "vocab_size": 100}
    for config, model_class in ((RobertaConfig(max_position_embeddings=66, pad_token_id=1, **sizes), RobertaModel),
                                (BertConfig(max_position_embeddings=64, **sizes), BertModel)):
        limit = usable_positions(config.to_dict())
        assert limit == 64
        model = model_class(config).eval()
        with torch.no_grad():
            model(torch.full((1, limit), 5))
            with pytest.raises((IndexError, RuntimeError)):
                model(torch.full((1, limit + 1), 5))
    assert usable_positions({"model_type": "seedr_bow_mlp"}) is None


# ------------------------------------------------------------------ 14. a damaged tokenizer.json


@pytest.mark.parametrize("damage", ["truncated", "nested", "empty object"])
def test_a_damaged_tokenizer_json_is_one_line_naming_it(model: Path, corpus: Path, tmp_path: Path, damage) -> None:
    folder = copy_model(model, tmp_path / "model")
    tokenizer_file = folder / "tokenizer.json"
    text = {"truncated": tokenizer_file.read_text()[:5000], "nested": "[" * 200_000 + "]" * 200_000,
            "empty object": "{}"}[damage]
    tokenizer_file.write_text(text)
    with pytest.raises(DataError) as info:
        load_tokenizer(folder)
    assert info.value.path == str(tokenizer_file)
    result = seedr("encode", "--model", folder, "--corpus", corpus, "--out", tmp_path / "emb")
    assert_one_error_line(result, str(tokenizer_file), "not a tokenizer")
    assert not (tmp_path / "emb").exists()


@pytest.mark.parametrize(("name", "other_type"), [("config.json", "[]"), ("tokenizer_config.json", "[]"),
                                                  ("sentence_bert_config.json", "[]"), ("1_Pooling/config.json", "[]"),
                                                  ("modules.json", "{}")])
def test_damaged_json_beside_the_weights_is_one_line_naming_it(model: Path, corpus: Path, tmp_path: Path, name,
                                                               other_type) -> None:
    folder = copy_model(model, tmp_path / "model")
    for text in ("{" * 200_000, (folder / name).read_text()[:40], other_type):
        (folder / name).write_text(text)
        result = seedr("encode", "--model", folder, "--corpus", corpus, "--out", tmp_path / "emb")
        assert_one_error_line(result, str(folder / name))
        assert not (tmp_path / "emb").exists()


def test_tower_and_fine_tuning_lengths_beyond_the_positions_are_refused_before_loading(model: Path, tmp_path: Path,
                                                                                       shared_data: Path) -> None:
    """The lengths of the two towers (pre-training) and of queries and documents (fine-tuning) are checked
    against the model's positions as data.max_seq_length is: one line naming the setting and the limit."""
    from typer.testing import CliRunner

    from seedr.cli import app

    runner = CliRunner()
    towers = runner.invoke(app, ["pretrain", "--objective", "ict", "--model", str(model), "--corpus",
                                 str(shared_data / "wiki" / "enwiki-2015-00.jsonl.xz"), "--out", str(tmp_path / "ict"),
                                 "--set", "objective.document_max_length=4096"])
    assert towers.exit_code == 1 and "objective.document_max_length 4096 is more than the 64 positions" in \
        " ".join(towers.output.split())
    tuned = runner.invoke(app, ["finetune", "--model", str(model), "--train", str(shared_data / "scifact"), "--out",
                                str(tmp_path / "ft"), "--set", "query_max_length=1000"])
    assert tuned.exit_code == 1 and "query_max_length 1000 is more than the 64 positions" in " ".join(tuned.output.split())
    assert not (tmp_path / "ft" / "negatives").exists()  # refused before any negative was mined


# ------------------------------------------------------------------ issue 58: a config.json the weights do not fit


@pytest.mark.parametrize(("field", "value", "says"), [
    ("hidden_size", 1e12, "hidden_size must be a positive integer, got 1000000000000.0"),
    ("hidden_size", 10**12, "hidden_size is 1000000000000, but the weights hold encoder.layer.0.attention.self.query"),
    ("hidden_size", 64, "hidden_size is 64, but the weights hold"),
    ("vocab_size", 10**12, "vocab_size is 1000000000000, but the weights hold embeddings.word_embeddings.weight"),
    ("num_hidden_layers", 10**9, "num_hidden_layers is 1000000000, but the weights hold layers numbered 0 to 1"),
    ("num_hidden_layers", 3, "num_hidden_layers is 3"),
    ("intermediate_size", 10**12, "intermediate_size is 1000000000000"),
    ("max_position_embeddings", 10**12, "max_position_embeddings is 1000000000000"),
    ("max_position_embeddings", -1, "max_position_embeddings must be a positive integer, got -1"),
])
def test_a_config_that_does_not_describe_its_weights_is_refused_naming_the_field(model: Path, corpus: Path,
                                                                                 tmp_path: Path, field, value,
                                                                                 says) -> None:
    """A crafted ``"hidden_size": 1e12`` ended in a traceback (``RuntimeError: Storage size calculation
    overflowed``), and more layers than the weights hold were built from random numbers, with a warning:
    the config is checked against the safetensors header's shapes before the model is built."""
    crafted = copy_model(model, tmp_path / "crafted")
    edit_json(crafted / "config.json", **{field: value})
    with pytest.raises(DataError) as info:
        load_encoder(crafted)
    assert (info.value.path, info.value.field) == (str(crafted / "config.json"), field)
    assert says in str(info.value)
    result = seedr("encode", "--model", crafted, "--corpus", corpus, "--out", tmp_path / "emb")
    assert_one_error_line(result, str(crafted / "config.json"), says)
    assert not (tmp_path / "emb").exists() and not [path for path in tmp_path.iterdir() if path.name.startswith(".")]


@pytest.mark.parametrize(("field", "value", "says"), [
    ("layer_norm_eps", -1, "layer_norm_eps must be a positive number, got -1"),
    ("layer_norm_eps", -1.0, "layer_norm_eps must be a positive number, got -1.0"),
    ("num_attention_heads", 1e9, "num_attention_heads must be a positive integer, got 1000000000.0"),
    ("num_attention_heads", 10**9, "num_attention_heads is 1000000000, which does not divide hidden_size 32"),
    ("hidden_dropout_prob", 2, "hidden_dropout_prob must be a probability from 0 to 1, got 2"),
    ("use_cache", 3, "not a configuration transformers can read (StrictDataclassFieldValidationError"),
])
def test_a_config_value_no_shape_shows_is_refused_naming_config_json(model: Path, corpus: Path,
                                                                     tmp_path: Path, field, value,
                                                                     says) -> None:
    """#65 item 10: ``"layer_norm_eps": -1`` blamed ``tokenizer.json`` (the tokenizer's loader reads the
    config, and transformers refuses the int there), -1.0 gave NaN vectors, and ``"num_attention_heads":
    1e9`` or 10**9 failed naming no file (the attention's constructor): each is one line naming
    config.json and the field, before anything is written; so is a type transformers refuses."""
    crafted = copy_model(model, tmp_path / "crafted")
    edit_json(crafted / "config.json", **{field: value})
    with pytest.raises(DataError) as info:
        load_tokenizer(crafted)
    named = field if field != "use_cache" else None  # transformers' own check: the field is in its message
    assert (info.value.path, info.value.field) == (str(crafted / "config.json"), named)
    for arguments in (("encode", "--model", crafted, "--corpus", corpus, "--out", tmp_path / "emb"),
                      ("pretrain", "--config", "mlm", "--model", crafted, "--corpus", corpus, "--out",
                       tmp_path / "run", "--set", "train.max_steps=1")):
        result = seedr(*arguments)
        where = f"{crafted / 'config.json'}: " + (f"field {field!r}: " if named else "")
        assert_one_error_line(result, where + says)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["crafted"]


def test_an_unexpected_error_is_one_line_and_debug_shows_its_traceback(model: Path, corpus: Path, tmp_path: Path,
                                                                       monkeypatch) -> None:
    """An exception no check foresaw (here a library's RuntimeError) is one line naming its type, exit 1;
    ``seedr --debug`` raises it, for the traceback."""
    import seedr.pipeline.encode

    def broken(*args, **kwargs):
        raise RuntimeError("Storage size calculation overflowed\n(deep in a library)")

    monkeypatch.setattr(seedr.pipeline.encode, "run", broken)
    monkeypatch.setenv("SEEDR_DEBUG", "")  # restored (unset) after the test, which --debug sets
    arguments = ["encode", "--model", str(model), "--corpus", str(corpus), "--out", str(tmp_path / "emb")]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert [line for line in result.output.splitlines() if line.strip()] == [
        "error: RuntimeError: Storage size calculation overflowed (deep in a library) (unexpected: run "
        "`seedr --debug ...` for the traceback)"], result.output
    debugged = runner.invoke(app, ["--debug", *arguments])
    assert isinstance(debugged.exception, RuntimeError) and debugged.exit_code == 1
