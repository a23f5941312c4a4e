"""Length-sorted vs corpus-order batching when encoding a corpus: documents per second.

``seedr.retrieval.encode.encode_texts`` tokenises all texts, sorts them by token length and pads per
batch, so a batch holds texts of similar length. The reference encodes the same texts in corpus
order, one ``encode_texts`` call per batch (padding to each batch's longest text, as a plain loop
over a DataLoader would). Both run the same model on the same real SciFact abstracts; outputs are
checked equal first. Reports the median of ``--repeats`` timed runs and the padding each wastes.

Run:  .venv/bin/python bench/bench_encode.py --documents 512 --max-length 256 --batch-size 32
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from seedr.data.corpus import read_corpus
from seedr.modeling.encoder import load_encoder, load_tokenizer, resolve_model_path
from seedr.retrieval.encode import encode_texts

SCIFACT = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "scifact" / "corpus.jsonl"


def corpus_order(model, tokenizer, texts: list[str], args: argparse.Namespace) -> np.ndarray:
    return np.concatenate([encode_texts(model, tokenizer, texts[start:start + args.batch_size], "mean",
                                        args.max_length, args.batch_size)
                           for start in range(0, len(texts), args.batch_size)])


def length_sorted(model, tokenizer, texts: list[str], args: argparse.Namespace) -> np.ndarray:
    return encode_texts(model, tokenizer, texts, "mean", args.max_length, args.batch_size)


def padded_tokens(lengths: np.ndarray, batch_size: int) -> int:
    """Tokens fed to the model, padding included, when ``lengths`` are batched in this order."""
    batches = (lengths[start:start + batch_size] for start in range(0, len(lengths), batch_size))
    return sum(len(batch) * max(batch) for batch in batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--corpus", type=Path, default=SCIFACT)
    parser.add_argument("--documents", type=int, default=512)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    texts = [document.text for document in itertools.islice(read_corpus(args.corpus), args.documents)]
    tokenizer = load_tokenizer(args.model)
    model = load_encoder(resolve_model_path(args.model)).eval()
    tokens = tokenizer(texts, truncation=True, max_length=args.max_length)["input_ids"]
    lengths = np.array([len(ids) for ids in tokens])
    np.testing.assert_allclose(corpus_order(model, tokenizer, texts[:64], args),
                               length_sorted(model, tokenizer, texts[:64], args), atol=1e-5)

    print(f"{len(texts)} SciFact abstracts, max length {args.max_length}, batch {args.batch_size}, "
          f"{args.threads} threads; real tokens {lengths.sum()}")
    print("| batching | docs/s | tokens fed (with padding) |")
    print("|---|---:|---:|")
    for name, run, order in (("corpus order", corpus_order, lengths),
                             ("length-sorted", length_sorted, np.sort(lengths)[::-1])):
        seconds = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            run(model, tokenizer, texts, args)
            seconds.append(time.perf_counter() - start)
        speed = len(texts) / statistics.median(seconds)
        print(f"| {name} | {speed:.1f} | {padded_tokens(order, args.batch_size)} |")


if __name__ == "__main__":
    main()
