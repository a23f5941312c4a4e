"""An independent reference for seedr's calibrated plain fine-tuning: the same recipe written
with sentence-transformers and plain PyTorch, no seedr code in the training or the evaluation.

all-MiniLM-L6-v2 (mean pooling, as its folder declares) is fine-tuned with MultipleNegativesRankingLoss
(cosine × 20, in-batch documents) on SciFact's training (query, positive) pairs, each with one negative
drawn at random, per epoch, from the query's BM25 top 30 (positives removed; BM25 by ``bm25s``, the
library seedr's BM25 wraps, with Lucene's k1 0.9 / b 0.4), batch 16, two epochs, AdamW lr 2e-5 held
constant, weight decay 0.01 (not on biases and LayerNorm weights), no clipping, documents as
"title text" cut to 256 tokens, queries to 64. SciFact test is then encoded with
``SentenceTransformer.encode`` (normalised), searched exhaustively, and scored with ``ir_measures``
(pytrec_eval), ties broken by document id.

    python bench/reference_finetune.py --out docs/results/reference_finetune            # float32
    python bench/reference_finetune.py --precision bf16 --out /tmp/reference-bf16       # bf16 autocast
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import random
import sys
import time
from pathlib import Path

import bm25s
import ir_measures
import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

from seedr.modeling.encoder import resolve_model_path  # only to find the offline MiniLM folder

SCIFACT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "scifact"


def read_jsonl(path: Path) -> dict[str, dict]:
    with path.open(encoding="utf-8") as stream:
        return {row["_id"]: row for row in map(json.loads, stream)}


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as stream:
        for row in csv.DictReader(stream, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return qrels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=SCIFACT)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--max-pairs", type=int, default=None, help="train on the first N pairs (smoke tests)")
    args = parser.parse_args()
    started = time.perf_counter()
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16")

    corpus, queries = read_jsonl(args.data / "corpus.jsonl"), read_jsonl(args.data / "queries.jsonl")
    doc_ids = list(corpus)
    texts = [(corpus[d].get("title", "") + " " + corpus[d]["text"]).strip() for d in doc_ids]
    text_of = dict(zip(doc_ids, texts))
    train = read_qrels(args.data / "qrels" / "train.tsv")
    pairs = [(q, d) for q, docs in train.items() for d, grade in docs.items() if grade > 0][:args.max_pairs]

    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    train_queries = sorted({q for q, _ in pairs})
    hits, _ = retriever.retrieve(bm25s.tokenize([queries[q]["text"] for q in train_queries], stopwords="en",
                                                show_progress=False), k=30, show_progress=False)
    candidates = {q: [doc_ids[i] for i in row if doc_ids[i] not in train[q]] for q, row in zip(train_queries, hits)}

    model = SentenceTransformer(str(resolve_model_path("minilm")), device="cpu")
    loss = MultipleNegativesRankingLoss(model, scale=20.0)
    no_decay = ("bias", "LayerNorm.weight")
    groups = [{"params": [p for n, p in model.named_parameters() if not any(k in n for k in no_decay)],
               "weight_decay": 0.01},
              {"params": [p for n, p in model.named_parameters() if any(k in n for k in no_decay)],
               "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=2e-5)
    model.train()
    steps, losses = 0, []
    for epoch in range(args.epochs):
        random.shuffle(pairs)
        for start in range(0, len(pairs), 16):
            batch = pairs[start:start + 16]
            columns = ([queries[q]["text"] for q, _ in batch],
                       [text_of[d] for _, d in batch],
                       [text_of[random.choice(candidates[q])] for q, _ in batch])
            model.max_seq_length = 64
            features = [model.preprocess(columns[0])]
            model.max_seq_length = 256
            features += [model.preprocess(column) for column in columns[1:]]
            with autocast:
                value = loss(features, None)
            value.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            steps += 1
            losses.append(value.item())
            print(f"epoch {epoch + 1} step {steps}: loss {value.item():.4f}", file=sys.stderr, flush=True)
    trained = time.perf_counter() - started

    model.eval()
    test = read_qrels(args.data / "qrels" / "test.tsv")
    test_ids = sorted(test)
    with torch.inference_mode(), autocast:
        model.max_seq_length = 256
        documents = model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                                 show_progress_bar=True).astype(np.float32)
        model.max_seq_length = 64
        encoded = model.encode([queries[q]["text"] for q in test_ids], batch_size=64, normalize_embeddings=True,
                               convert_to_numpy=True).astype(np.float32)
    scores = encoded @ documents.T
    run = []
    for row, query_id in zip(scores, test_ids):
        top = sorted(range(len(doc_ids)), key=lambda i: (-row[i], doc_ids[i]))[:100]
        run += [ir_measures.ScoredDoc(query_id, doc_ids[i], float(row[i])) for i in top]
    qrels = [ir_measures.Qrel(q, d, g) for q, docs in test.items() for d, g in docs.items()]
    measures = [ir_measures.parse_measure(m) for m in ("nDCG@10", "R@100", "RR@10")]
    metrics = {str(k): v for k, v in ir_measures.calc_aggregate(measures, qrels, run).items()}

    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "run.trec").open("w", encoding="utf-8") as stream:
        for rank, doc in enumerate(run):
            stream.write(f"{doc.query_id} Q0 {doc.doc_id} {rank % 100 + 1} {doc.score:.6f} reference\n")
    result = {"command": "python " + " ".join(sys.argv), "metrics": metrics, "steps": steps, "pairs": len(pairs),
              "precision": args.precision, "seed": args.seed, "final_loss": losses[-1] if losses else None,
              "train_seconds": round(trained, 1), "wall_seconds": round(time.perf_counter() - started, 1),
              "machine": {"platform": platform.platform(), "cpus": torch.get_num_threads(), "torch": torch.__version__}}
    (args.out / "results.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result["metrics"], indent=2))


if __name__ == "__main__":
    main()
