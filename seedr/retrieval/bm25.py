"""BM25 (Robertson & Zaragoza 2009) with ``bm25s`` — the lexical baseline of all three papers.

Defaults, and why: ``k1=0.9, b=0.4`` with Lucene's BM25 variant (``method="lucene"``: idf
``log(1 + (N - df + 0.5) / (df + 0.5))``, no ``(k1 + 1)`` factor) are Anserini/Pyserini's defaults,
used for the MS MARCO and BEIR baselines those toolkits publish. BEIR's own BM25 ran on Elasticsearch
(``k1=1.2, b=0.75``, title and text as two fields); its SciFact nDCG@10 is 0.665, Pyserini's
"flat" index (title and text concatenated, k1=0.9, b=0.4) reports 0.679 and its "multifield" 0.665.
seedr indexes title and text concatenated (``include_title=True``), tokenised by bm25s's
scikit-learn-style splitter (``\\b\\w\\w+\\b`` on lower-cased text), English stop words removed and
words reduced by the Snowball English stemmer (PyStemmer) — close to, not identical with, Lucene's
English analyzer (Porter stemmer, possessive filter, its own stop list), so figures differ from
Lucene's by about a point.

Rankings are deterministic: all documents are scored, and the top k are chosen and ordered by
(−score, document id).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import scipy.sparse
import Stemmer
from bm25s.tokenization import Tokenizer
from tqdm.auto import tqdm

from seedr.data.records import Document, Run
from seedr.data.runs import id_ranks
from seedr.retrieval.feedback import RM3, rm3_query
from seedr.io import DataError, atomic_directory, iter_lines, read_json

SETTINGS = "seedr_bm25.json"
#: The documents' term counts in an index folder, for RM3 feedback.
TERM_COUNTS = "term_counts.npz"


@dataclass(frozen=True)
class BM25Settings:
    k1: float = 0.9
    b: float = 0.4
    method: str = "lucene"
    stemmer: str | None = "english"
    stopwords: str | None = "en"
    include_title: bool = True


def _tokenizer(settings: BM25Settings) -> Tokenizer:
    stemmer = Stemmer.Stemmer(settings.stemmer) if settings.stemmer else None
    return Tokenizer(lower=True, stopwords=settings.stopwords, stemmer=stemmer)


def top_k_positions(scores: np.ndarray, k: int, id_rank: np.ndarray) -> np.ndarray:
    """Positions of the ``k`` best ``scores`` ordered by (−score, ``id_rank``), exact under ties."""
    k = min(k, len(scores))
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    threshold = np.partition(scores, len(scores) - k)[len(scores) - k]
    candidates = np.flatnonzero(scores >= threshold)  # every document tied with the k-th is a candidate
    return candidates[np.lexsort((id_rank[candidates], -scores[candidates]))[:k]]


class BM25Index:
    """A BM25 index over a corpus, searched with query text; see the module docstring for defaults.

    Example:
        >>> index = BM25Index.build(read_corpus("scifact/corpus.jsonl"))
        >>> run = index.search({"1": "0-dimensional biomaterials show inductive properties."}, k=100)
    """

    def __init__(self, retriever: bm25s.BM25, tokenizer: Tokenizer, ids: list[str],
                 settings: BM25Settings, term_counts: scipy.sparse.csr_matrix | None = None) -> None:
        self.retriever, self.tokenizer, self.ids, self.settings = retriever, tokenizer, ids, settings
        self.term_counts = term_counts  # documents x terms, raw counts: RM3's P(t|d) (``search_rm3``)
        self._id_rank = id_ranks(ids)

    @classmethod
    def build(cls, documents: Iterable[Document], k1: float = 0.9, b: float = 0.4, method: str = "lucene",
              stemmer: str | None = "english", stopwords: str | None = "en", include_title: bool = True,
              show_progress: bool = False, total: int | None = None) -> BM25Index:
        """Index ``documents``; ``method`` is a bm25s variant (lucene, robertson, atire, bm25l, bm25+). An id
        that a TREC run cannot hold (empty, or with whitespace) is a ``ValueError`` before anything is indexed.

        With ``show_progress``, reading the documents shows passages/s (and an ETA given their ``total``,
        e.g. ``seedr.data.corpus.count_documents``), then bm25s's tokenising and indexing bars.
        """
        settings = BM25Settings(k1, b, method, stemmer, stopwords, include_title)
        ids, texts = [], []
        reading = tqdm(documents, desc="bm25 read", unit="passage", total=total, disable=not show_progress)
        for document in reading:
            if not document.id or any(c.isspace() for c in document.id):  # before anything is indexed or saved
                raise ValueError(f"document id {document.id!r} is empty or has whitespace: a TREC run cannot hold it")
            ids.append(document.id)
            title = document.title if include_title else ""
            texts.append(f"{title} {document.text}" if title else document.text)
        if len(set(ids)) != len(ids):
            raise ValueError("document ids are not unique")
        tokenizer = _tokenizer(settings)
        tokens = tokenizer.tokenize(texts, update_vocab=True, return_as="tuple", show_progress=show_progress)
        retriever = bm25s.BM25(k1=k1, b=b, method=method)
        retriever.index(tokens, show_progress=show_progress)
        return cls(retriever, tokenizer, ids, settings, _term_counts(tokens.ids, len(tokens.vocab)))

    def search(self, queries: dict[str, str], k: int = 1000, show_progress: bool = False) -> Run:
        """Top ``k`` documents of each query by BM25 score, ties by document id."""
        run: Run = {}
        for qid, token_ids in self._query_tokens(queries, "bm25", show_progress):
            scores = self.retriever.get_scores_from_ids(token_ids)  # (N,)
            positions = top_k_positions(scores, k, self._id_rank)
            run[qid] = {self.ids[p]: float(scores[p]) for p in positions}
        return run

    def _query_tokens(self, queries: dict[str, str], name: str, show_progress: bool) -> Any:
        """``(qid, term ids)`` of each query, behind a progress bar called ``name``."""
        qids = list(queries)
        # update_vocab=False: query words absent from the corpus are dropped, never added
        tokens = self.tokenizer.tokenize([queries[qid] for qid in qids], update_vocab=False, return_as="ids",
                                         show_progress=False)
        return tqdm(zip(qids, tokens), total=len(qids), desc=name, unit="query", disable=not show_progress)

    def search_rm3(self, queries: dict[str, str], k: int = 1000, feedback: RM3 | None = None,
                   show_progress: bool = False) -> Run:
        """Top ``k`` documents of each query after RM3 feedback (``seedr.retrieval.feedback``): a first BM25
        pass, the query expanded from its top documents, then BM25 of the weighted query (ties by id)."""
        if self.term_counts is None:
            raise ValueError(f"this BM25 index holds no term counts ({TERM_COUNTS}), which RM3 needs: it was "
                             f"saved by an older seedr; build it again")
        feedback = feedback or RM3()
        vocabulary = [""] * len(self.tokenizer.get_vocab_dict())
        for text, term in self.tokenizer.get_vocab_dict().items():
            vocabulary[term] = text
        run: Run = {}
        for qid, token_ids in self._query_tokens(queries, "bm25+rm3", show_progress):
            first = self.retriever.get_scores_from_ids(token_ids)
            top = top_k_positions(first, feedback.documents, self._id_rank)
            weights = rm3_query(list(token_ids), top, first[top], self.term_counts, vocabulary, feedback) \
                if len(token_ids) else {}
            scores = np.zeros(len(self.ids), dtype=np.float64)
            for term, weight in weights.items():
                scores += weight * self.retriever.get_scores_from_ids([term])
            positions = top_k_positions(scores, k, self._id_rank)
            run[qid] = {self.ids[p]: float(scores[p]) for p in positions}
        return run

    def save(self, directory: str | os.PathLike) -> Path:
        """Write the index folder atomically (``save_into`` a temporary folder, moved into place whole)."""
        directory = Path(directory)
        with atomic_directory(directory) as temporary:
            self.save_into(temporary)
        return directory

    def save_into(self, folder: Path) -> None:
        """Write the index's files into the existing ``folder``: bm25s's index and vocabulary, ``ids.txt``,
        the settings (``seedr search`` passes the temporary of an ``atomic_directory`` that it moves into
        place with its run, so that a failed run leaves no index either)."""
        self.retriever.save(str(folder), show_progress=False)
        self.tokenizer.save_vocab(str(folder))
        (folder / "ids.txt").write_text("".join(f"{i}\n" for i in self.ids), encoding="utf-8")
        (folder / SETTINGS).write_text(json.dumps(asdict(self.settings), indent=2), encoding="utf-8")
        if self.term_counts is not None:
            scipy.sparse.save_npz(folder / TERM_COUNTS, self.term_counts)

    @classmethod
    def load(cls, directory: str | os.PathLike) -> BM25Index:
        directory = Path(directory)
        if not (directory / SETTINGS).exists():
            raise DataError(directory, f"not a seedr BM25 index folder: {SETTINGS} is missing")
        recorded = read_json(directory / SETTINGS)
        try:
            settings = BM25Settings(**recorded)
        except TypeError:
            raise DataError(directory / SETTINGS, f"not the settings of a seedr BM25 index: {recorded!r:.80}") from None
        try:  # bm25s's own files: any failure to read them means a damaged folder
            retriever = bm25s.BM25.load(str(directory), show_progress=False)
            tokenizer = _tokenizer(settings)
            tokenizer.load_vocab(str(directory))
        except Exception as error:  # noqa: BLE001 (numpy, json, scipy and bm25s raise many types)
            detail = str(error).splitlines()[0] if str(error) else ""
            raise DataError(directory, f"a damaged BM25 index ({type(error).__name__}: {detail})") from None
        ids = [doc_id for _, doc_id in iter_lines(directory / "ids.txt")]
        if len(ids) != retriever.scores["num_docs"]:
            raise DataError(directory / "ids.txt", f"{len(ids)} ids for {retriever.scores['num_docs']} documents")
        term_counts = None  # an index saved before RM3 was offered has none: it still searches
        if (directory / TERM_COUNTS).exists():
            try:
                term_counts = scipy.sparse.load_npz(directory / TERM_COUNTS).tocsr()
            except (OSError, ValueError) as error:
                raise DataError(directory / TERM_COUNTS, f"unreadable term counts ({error})") from None
            if term_counts.shape[0] != len(ids):
                raise DataError(directory / TERM_COUNTS, f"{term_counts.shape[0]} rows for {len(ids)} documents")
        return cls(retriever, tokenizer, ids, settings, term_counts)


def _term_counts(documents: list[list[int]], vocabulary_size: int) -> scipy.sparse.csr_matrix:
    """Documents x terms raw counts of tokenised ``documents`` (RM3's ``P(t|d)``)."""
    rows = np.repeat(np.arange(len(documents)), [len(terms) for terms in documents])
    columns = np.fromiter((term for terms in documents for term in terms), dtype=np.int64, count=len(rows))
    counts = scipy.sparse.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, columns)),
                                     shape=(len(documents), vocabulary_size))
    counts.sum_duplicates()
    return counts
