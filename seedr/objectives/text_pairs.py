"""Pair tasks any corpus supports, beside ICT, BFS and WLP: a title against its text, and two crops.

Both are ``PairTask``s (``seedr.objectives.two_tower``), registered in ``PAIR_TASKS``, so they build
pairs as ICT, BFS and WLP do — one per unit, a pure function of (unit, generator) — for two-tower
pre-training and for the pairs ``seedr adapt`` mines from a corpus without labels:

- ``title``: the article's title as the query, its text (without the title) as the document. Not one
  of the ICLR 2020 tasks (Chang et al. encode the title with every document instead, sec. 4.1): a pair
  any titled corpus gives for free, seedr's addition. Only documents that have a title take part.
- ``crop``: two independent random spans of the same text, each a word-level version of Contriever's
  crop (Izacard et al., TMLR 2022, §3.2 "Independent cropping": a ratio r ~ U(ratio_min, ratio_max) of
  the text, its start uniform, each word then deleted with probability 0.1), drawn by
  ``seedr.objectives.contriever.random_crop`` over the positions of the words, with the released script's
  ratios (0.05–0.5, ``ContrieverConfig``). Crops carry no title.
"""

from __future__ import annotations

import numpy as np
import torch

from seedr.data.pair_units import article_text, can_be_cropped, has_title_and_text
from seedr.data.records import Article
from seedr.objectives.contriever import ContrieverConfig, random_crop
from seedr.objectives.two_tower import PAIR_TASKS, Pair, PairConfig, PairTask

#: The fewest words a crop keeps (a short text's 5% would be a word or none).
MIN_CROP_LENGTH = 4


@PAIR_TASKS.register("title")
class TitlePairs(PairTask):
    """One pair per article with a title and a text: (title, text). ``source``: ``task``,
    ``article_id``, ``title``."""

    name = "title"

    def __init__(self, articles: list[Article], config: PairConfig) -> None:
        self.articles = articles
        self.units = np.array([index for index, article in enumerate(articles)
                               if has_title_and_text(article)], dtype=np.int64)

    def __len__(self) -> int:
        return len(self.units)

    def pair(self, unit: int, rng: np.random.Generator) -> Pair:
        article = self.articles[int(self.units[unit])]
        return Pair(query=article.title, document=article_text(article), title="",
                    source={"task": self.name, "article_id": article.id, "title": article.title})


@PAIR_TASKS.register("crop")
class CropPairs(PairTask):
    """One pair per article of at least ``seedr.data.pair_units.MIN_CROP_WORDS`` words: two independent crops
    of its text. ``source``: ``task``, ``article_id``, ``title``, ``query_words`` and ``document_words``
    (the crops' first and last word positions)."""

    name = "crop"

    def __init__(self, articles: list[Article], config: PairConfig) -> None:
        self.articles = articles
        self.crop = ContrieverConfig()
        self.units = np.array([index for index, article in enumerate(articles) if can_be_cropped(article)],
                              dtype=np.int64)

    def __len__(self) -> int:
        return len(self.units)

    def _crop(self, words: list[str], generator: torch.Generator) -> tuple[str, tuple[int, int]]:
        kept = random_crop(range(len(words)), self.crop.ratio_min, self.crop.ratio_max,
                           self.crop.deletion_probability, generator)
        if len(kept) < MIN_CROP_LENGTH:  # too short to be a query or a document: the shortest span instead
            start = int(torch.randint(len(words) - MIN_CROP_LENGTH + 1, (), generator=generator))
            kept = list(range(start, start + MIN_CROP_LENGTH))
        return " ".join(words[position] for position in kept), (kept[0], kept[-1])

    def pair(self, unit: int, rng: np.random.Generator) -> Pair:
        article = self.articles[int(self.units[unit])]
        words = article_text(article).split()
        generator = torch.Generator().manual_seed(int(rng.integers(2**62)))
        query, query_words = self._crop(words, generator)
        document, document_words = self._crop(words, generator)
        return Pair(query=query, document=document, title="",
                    source={"task": self.name, "article_id": article.id, "title": article.title,
                            "query_words": query_words, "document_words": document_words})


__all__ = ["MIN_CROP_LENGTH", "CropPairs", "TitlePairs"]
