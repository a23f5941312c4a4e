"""Documents longer than the encoder's input: FirstP and MaxP.

- **FirstP** encodes a document by its first passage only (ANCE FirstP, Xiong et al. ICLR 2021 §5,
  the setting of SEED-Encoder's MS MARCO document results, Lu et al. EMNLP 2021 §4.1: "the first 512
  tokens of the long document", the rest cut off).
- **MaxP** cuts a document into consecutive passages, indexes every passage, and scores a document by
  its best passage (Dai & Callan, SIGIR 2019; ANCE MaxP: four 512-token passages, the first 2,048
  tokens). Search fetches enough passages that the top-k documents are exact (``search_max_passage``).

Passages are cut on the tokenizer's tokens and keep the original characters (token offsets), so the
passage text is the document text verbatim; every passage keeps the document's title as its first
segment (encoded ``title [SEP] passage`` like any document, see ``seedr.retrieval.encode``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice

import numpy as np
from transformers import PreTrainedTokenizerBase

from seedr.config.settings import MAX_LENGTH
from seedr.data.records import Document, Run
from seedr.data.runs import rank_documents, run_from_topk
from seedr.registry import Registry
from seedr.retrieval.faiss_index import DenseIndex

#: Passage ids are ``<document id>#<passage number from 0>``.
PASSAGE_SEPARATOR = "#"


@dataclass(frozen=True)
class Passages:
    """Passages cut from documents: ``passages`` (``Document``s with passage ids, the document's title)
    and ``parent`` (passage id → document id)."""

    passages: list[Document]
    parent: dict[str, str]

    @property
    def max_per_document(self) -> int:
        """The largest number of passages any one document has."""
        counts: dict[str, int] = {}
        for document_id in self.parent.values():
            counts[document_id] = counts.get(document_id, 0) + 1
        return max(counts.values(), default=0)


def split_documents(documents: Iterable[Document], tokenizer: PreTrainedTokenizerBase, passage_length: int = MAX_LENGTH,
                    stride: int | None = None, max_passages: int | None = None) -> Passages:
    """Cut each document into passages that fit ``passage_length`` tokens with its title and the
    special tokens ([CLS] title [SEP] passage [SEP]).

    Args:
        passage_length: the encoder's input length (512 for BERT, as ANCE).
        stride: tokens between passage starts; ``None`` = the passage's own length (no overlap, ANCE
            MaxP); smaller values overlap passages (Dai & Callan use 150-word windows every 75 words).
        max_passages: keep at most this many passages per document, from its start (ANCE MaxP: 4;
            FirstP: 1); ``None`` keeps them all.
    """
    documents = list(documents)
    # verbose=False: documents are longer than the model's maximum on purpose; no warning for that
    encoded = tokenizer([document.text for document in documents], add_special_tokens=False,
                        return_offsets_mapping=True, verbose=False)
    titles = tokenizer([document.title for document in documents], add_special_tokens=False, verbose=False)
    passages: list[Document] = []
    parent: dict[str, str] = {}
    for index, document in enumerate(documents):
        offsets = encoded["offset_mapping"][index]
        word_ids = encoded.word_ids(index)
        # passages start and end on word boundaries, so a passage re-tokenises to the same tokens
        word_starts = [p for p in range(len(offsets)) if p == 0 or word_ids[p] != word_ids[p - 1]] + [len(offsets)]
        specials = 3 if document.title else 2  # [CLS] title [SEP] text [SEP] / [CLS] text [SEP]
        # a very long title cannot starve the text: it is truncated at encoding time instead
        window = max(passage_length - specials - len(titles["input_ids"][index]), passage_length // 2)
        start, number = 0, 0
        while max_passages is None or number < max_passages:
            end = start + window
            if end < len(offsets):  # back off to the last word start inside the window (unless one word is longer)
                end = next((w for w in reversed(word_starts[:bisect.bisect_right(word_starts, end)]) if w > start), end)
            piece = offsets[start:end]
            text = document.text[piece[0][0]:piece[-1][1]] if piece else document.text
            passage_id = f"{document.id}{PASSAGE_SEPARATOR}{number}"
            passages.append(Document(passage_id, text, document.title))
            parent[passage_id] = document.id
            number += 1
            if end >= len(offsets):
                break
            # the next passage starts at the first word start at or after start + stride (default: the end)
            start = end if stride is None else word_starts[bisect.bisect_left(word_starts, start + max(stride, 1))]
    return Passages(passages, parent)


def firstp_passages(documents: Iterable[Document], tokenizer: PreTrainedTokenizerBase,
                   passage_length: int = MAX_LENGTH) -> Passages:
    """FirstP: each document's first passage only."""
    return split_documents(documents, tokenizer, passage_length, max_passages=1)


def maxp_passages(documents: Iterable[Document], tokenizer: PreTrainedTokenizerBase, passage_length: int = MAX_LENGTH,
                 stride: int | None = None, max_passages: int | None = 4) -> Passages:
    """MaxP's passages: the first ``max_passages`` passages of each document (ANCE MaxP: 4 × 512 tokens)."""
    return split_documents(documents, tokenizer, passage_length, stride, max_passages)


#: How ``seedr index``/``search`` turn long documents into indexable passages: ``firstp`` | ``maxp``.
LONG_DOCUMENTS: Registry = Registry("long-document mode")
LONG_DOCUMENTS.register("firstp")(firstp_passages)
LONG_DOCUMENTS.register("maxp")(maxp_passages)


def long_document_passages(documents: Iterable[Document], tokenizer: PreTrainedTokenizerBase, mode: str,
                           passage_length: int, chunk_size: int = 1_000) -> Iterator[Document]:
    """Stream documents cut into passages, ``mode`` ``firstp`` or ``maxp`` (``LONG_DOCUMENTS``;
    ANCE/SEED-Encoder's MS MARCO document settings), a chunk at a time so a large corpus is never
    tokenised at once. Passage ids are ``<document id>#<n>``."""
    split = LONG_DOCUMENTS.get(mode)
    iterator = iter(documents)
    while chunk := list(islice(iterator, chunk_size)):
        yield from split(chunk, tokenizer, passage_length).passages


def max_passage_run(passage_run: Run, parent: Mapping[str, str], k: int | None = None) -> Run:
    """Document scores from passage scores: each document's best passage (MaxP), top ``k`` kept."""
    documents: Run = {}
    for qid, scores in passage_run.items():
        best: dict[str, float] = {}
        for passage_id, score in scores.items():
            document_id = parent[passage_id]
            if score > best.get(document_id, float("-inf")):
                best[document_id] = score
        documents[qid] = dict(rank_documents(best)[:k]) if k is not None else best
    return documents


def search_max_passage(index: DenseIndex, query_embeddings: np.ndarray, query_ids: Sequence[str],
                       passages: Passages, k: int) -> Run:
    """Top ``k`` documents per query by their best passage in a passage ``index``.

    Fetches ``k × max_per_document`` passages: every passage ranked above the k-th document's best
    one belongs to one of the k − 1 documents ahead of it, so the document top k is exact.
    """
    depth = k * max(passages.max_per_document, 1)
    scores, ids = index.search(query_embeddings, depth)
    return max_passage_run(run_from_topk(list(query_ids), scores, ids), passages.parent, k)
