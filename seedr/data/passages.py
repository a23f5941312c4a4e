"""DPR-style passages: articles cut into disjoint blocks of 100 words."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from seedr.data.records import Article, Document


def split_passages(documents_or_articles: Iterable[Document | Article], words: int = 100) -> Iterator[Document]:
    """Cut each article (or document) into consecutive, non-overlapping passages of ``words`` words.

    As DPR (Karpukhin et al., EMNLP 2020, sec. 4.1, "Wikipedia Data Pre-processing"): "we split each
    article into multiple, disjoint text blocks of 100 words as passages, serving as our basic
    retrieval units"; each passage keeps its article's title (DPR prepends it with a [SEP] when
    encoding), and the shorter last block of an article is kept, as in DPR's ``psgs_w100.tsv``.
    Words are whitespace-separated tokens; an article's paragraphs (lead first) run on across
    paragraph boundaries, and section headings are not part of the text.

    Passage ids are ``"{doc_id}-{k}"`` with ``k`` counting from 0 within the article.

    Example:
        >>> [p.id for p in split_passages([Document("7", " ".join(["word"] * 250), "Title")])]
        ['7-0', '7-1', '7-2']
    """
    if words < 1:
        raise ValueError(f"passages need at least 1 word, got words={words}")
    for item in documents_or_articles:
        text = " ".join(item.paragraphs) if isinstance(item, Article) else item.text
        tokens = text.split()
        for k, start in enumerate(range(0, len(tokens), words)):
            yield Document(id=f"{item.id}-{k}", text=" ".join(tokens[start:start + words]), title=item.title)


__all__ = ["split_passages"]
