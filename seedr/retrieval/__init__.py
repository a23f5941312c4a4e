"""Encoding, dense (faiss) and lexical (BM25) indexes, search, and TREC run files.

Data flow: ``encode`` (documents → embedding shards) → ``faiss_index`` (shards → index folder) →
search (queries → ``Run``) → ``runs`` (TREC run files); ``bm25`` goes from documents to runs directly.
"""
