"""Helpers shared by the test modules (the fixtures are in ``conftest.py``): real Wikipedia text, tiny
BERTs, small files written in the real formats of data we do not have, and checks of ``DataError``."""

from __future__ import annotations

import functools
import json
import lzma
from pathlib import Path

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import BertModel

from seedr.data.corpus import load_corpus, write_corpus
from seedr.data.queries import read_qrels, read_queries, write_qrels
from seedr.io import DataError
from seedr.modeling.encoder import build_encoder, load_tokenizer, save_encoder


@functools.cache
def wiki_leads(shard: Path, count: int) -> tuple[str, ...]:
    """The first lead paragraph of the shard's first ``count`` articles that have one."""
    leads = []
    with lzma.open(shard, "rt", encoding="utf-8") as lines:
        for line in lines:
            article = json.loads(line)
            if article["lead"]:
                leads.append(article["lead"][0])
            if len(leads) == count:
                break
    return tuple(leads)


def wiki_token_ids(shard: Path, tokenizer, count: int, max_length: int) -> list[list[int]]:
    """``[CLS] … [SEP]`` token-id lists of real lead paragraphs, as the tokenised-corpus shards hold."""
    return [tokenizer(text, truncation=True, max_length=max_length)["input_ids"]
            for text in wiki_leads(shard, count)]


def tiny_bert(tokenizer, **sizes) -> BertModel:
    """A freshly initialised 2-layer, 32-wide, 2-head BERT over the tokenizer's vocabulary (the tiny config
    transformers tests its models with); ``sizes`` are further ``build_encoder`` arguments."""
    return build_encoder(len(tokenizer), **{"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                                            "max_position_embeddings": 128, **sizes})


def save_tiny_bert(folder: Path, pooling: str) -> Path:
    """A freshly initialised 2-layer, 32-wide BERT with MiniLM's (BERT) vocabulary, saved in ``folder`` as
    seedr saves an encoder (``pooling``: its sentence-transformers pooling)."""
    torch.manual_seed(0)
    tokenizer = load_tokenizer("minilm")
    save_encoder(tiny_bert(tokenizer), tokenizer, folder, pooling=pooling, max_seq_length=128)
    return folder


def first_lines(source: Path, count: int, folder: Path) -> Path:
    """A copy of the first ``count`` lines of a real line-per-record file (BEIR corpus or queries) in ``folder``."""
    lines = source.read_text(encoding="utf-8").splitlines()[:count]
    path = folder / source.name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def scifact_cut(source: Path, folder: Path, test: int, train: int, others: int) -> Path:
    """A real BEIR folder cut from SciFact (``source``) into ``folder``: its first ``test`` test and ``train``
    training queries, their judged abstracts and the first ``others`` abstracts."""
    corpus = load_corpus(source / "corpus.jsonl")
    queries = read_queries(source / "queries.jsonl")
    tested = dict(list(read_qrels(source / "qrels" / "test.tsv").items())[:test])
    trained = dict(list(read_qrels(source / "qrels" / "train.tsv").items())[:train])
    judged = [doc for documents in [*tested.values(), *trained.values()] for doc in documents]  # in file order
    kept = [*list(corpus)[:others], *judged]
    folder.mkdir(parents=True, exist_ok=True)
    write_corpus(folder / "corpus.jsonl", [corpus[doc] for doc in dict.fromkeys(kept)])
    with open(folder / "queries.jsonl", "w") as stream:
        stream.writelines(json.dumps({"_id": qid, "text": queries[qid]}) + "\n"
                          for qid in [*tested, *trained])
    write_qrels(folder / "qrels" / "test.tsv", tested, format="beir")
    write_qrels(folder / "qrels" / "train.tsv", trained, format="beir")
    return folder


def write(path: Path, text: str | bytes) -> Path:
    """Write ``text`` (UTF-8) or raw ``bytes`` to ``path``, byte for byte, and return the path."""
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def check_data_error(info: pytest.ExceptionInfo[DataError], path: Path, line: int | None, field: str | None,
                     reason: str | None = None) -> None:
    """The error names the file, the line and the field, in its attributes and in its message."""
    error = info.value
    assert (error.path, error.line, error.field) == (str(path), line, field)
    message = str(error)
    assert message.startswith(str(path) if line is None else f"{path}, line {line}")
    if field is not None:
        assert repr(field) in message
    if reason is not None:
        assert reason in message


class LargestTensor(TorchDispatchMode):
    """Records the largest number of elements of any tensor an operation produces."""

    largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        for tensor in result if isinstance(result, tuple | list) else (result,):
            if isinstance(tensor, torch.Tensor):
                self.largest = max(self.largest, tensor.numel())
        return result


def bm25_experiment(title: str, metrics: str = "nDCG@10", conditions: str = "  bm25: {retrieve: bm25}\n",
                    resamples: int = 100) -> str:
    """An experiment file of BM25 conditions on conftest's SciFact slice (``--set data=FOLDER``): it runs in
    seconds, so tests see what locks, names and ``--record`` do at the end of a whole run."""
    return (f"title: {title}\n"
            'variables: {data: ""}\n'
            "tasks:\n"
            "  scifact:\n"
            "    kind: qrels\n"
            '    corpus: "{data}/corpus.jsonl"\n'
            '    queries: "{data}/queries.jsonl"\n'
            '    qrels: "{data}/qrels/test.tsv"\n'
            f"    metrics: [{metrics}]\n"
            f"conditions:\n{conditions}"
            "baseline: bm25\n"
            f"resamples: {resamples}\n")


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` with its bytes (None for a folder): what a refusal must leave alone."""
    return {str(path.relative_to(folder)): None if path.is_dir() else path.read_bytes()
            for path in sorted(folder.rglob("*"))}


def one_error_line(output: str) -> str:
    """The command's only output line, which is an ``error:`` line (asserted)."""
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    return lines[0]


def sharpen(module: torch.nn.Module) -> None:
    """Redraw every matrix with std 0.2 (BERT draws 0.02): outputs far from uniform, so that a wrong mask,
    position or stream moves the loss far beyond the 1e-5 the tests allow."""
    generator = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for parameter in module.parameters():
            if parameter.dim() == 2:
                parameter.copy_(0.2 * torch.randn(parameter.shape, generator=generator))


def pretrain_tiny(config: str, corpus: Path, out: Path, **settings: object) -> tuple[dict, str]:
    """``seedr pretrain --config CONFIG`` from seedr-base for 2 steps of 4 texts of 48 tokens (10 documents
    of ``corpus``), ``settings`` (``{"objective.span_length": 24}``) over these; returns the last logged
    metrics and the command's output."""
    from typer.testing import CliRunner

    from seedr.cli import app

    arguments = ["pretrain", "--config", config, "--model", "seedr-base", "--corpus", str(corpus), "--out", str(out)]
    for key, value in {"data.max_documents": 10, "data.max_seq_length": 48, "train.max_steps": 2,
                       "train.batch_size": 4, "train.global_batch_size": 4, "train.warmup_steps": 1,
                       "train.log_every": 1, **settings}.items():
        arguments += ["--set", f"{key}={value}"]
    result = CliRunner().invoke(app, arguments, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads((out / "metrics.jsonl").read_text().splitlines()[-1]), result.output
