"""Search a dense index with query texts: encode the queries as the documents were, then rank.

The one place where the encoder (``seedr.retrieval.encode``), the index (``faiss_index``) and long
documents (``long_documents``) meet, so each of those modules depends on the others one way only.
"""

from __future__ import annotations

import numpy as np

from seedr.config.settings import ENCODE_BATCH_SIZE
from seedr.data.records import Run
from seedr.data.runs import run_from_topk
from seedr.retrieval.encode import TextEncoder
from seedr.retrieval.faiss_index import DenseIndex
from seedr.retrieval.long_documents import PASSAGE_SEPARATOR, Passages, search_max_passage


def search_text(index: DenseIndex, encoder: TextEncoder, queries: dict[str, str], k: int = 100,
                batch_size: int = ENCODE_BATCH_SIZE, show_progress: bool = False) -> Run:
    """Encode ``queries`` (``{qid: text}``, with the encoder's query prefix) and search ``index``.

    An index of long documents' passages (``seedr encode --long-documents firstp|maxp``) ranks the
    documents, each scored by its best passage (``seedr.retrieval.long_documents``).
    """
    qids = list(queries)
    vectors = encoder.encode_queries([queries[qid] for qid in qids], batch_size, show_progress)
    if not np.isfinite(vectors).all():
        raise ValueError(f"the model in {encoder.model_path} gives non-finite query vectors (NaN or inf): its "
                         f"weights are broken (a diverged training run?)")
    if (index.config.get("encoder") or {}).get("long_documents"):
        parent = {passage: passage.rsplit(PASSAGE_SEPARATOR, 1)[0] for passage in index.ids}
        return search_max_passage(index, vectors, qids, Passages([], parent), k)
    scores, ids = index.search(vectors, k, show_progress=show_progress)
    return run_from_topk(qids, scores, ids)
