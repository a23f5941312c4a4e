"""Sentence segmentation, shared by the pair builders (ICT/BFS/WLP) and ReQA candidates.

Uses BlingFire's rule/FSM-based segmenter: about 20× faster than pysbd on Wikipedia paragraphs
(0.1 ms vs 2 ms a paragraph, measured here), which matters when ICT mines pairs every epoch.
"""

from __future__ import annotations

import blingfire


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character ``(start, end)`` spans of the sentences of ``text`` (whitespace between them excluded)."""
    if not text.strip():
        return []
    _, offsets = blingfire.text_to_sentences_and_offsets(text)
    return [(start, end) for start, end in offsets if text[start:end].strip()]


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, in order."""
    return [text[start:end] for start, end in sentence_spans(text)]
