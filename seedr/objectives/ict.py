"""Inverse Cloze Task (ICT): a sentence of a passage vs the rest of the passage.

Lee et al. (ACL 2019, ORQA) proposed it; Chang et al. (ICLR 2020, sec. 3) use it as a two-tower
pre-training task: "Given a passage p consisting of n sentences, p = {s1, ..., sn}, the query q is a
sentence randomly drawn from the passage, q = si, i ~ [1, n], and the document d is the rest of
sentences, d = {s1, ..., si−1, si+1, ..., sn}", encoded as "a pair of article title and passage
separated by [SEP]" (sec. 4.1). A passage is a paragraph of the article (Fig. 2 draws q1 and d from
one paragraph; the wiki bundle keeps Wikipedia's paragraphs); the document tower keeps its first 288
tokens.
"""

from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm

from seedr.data.pair_units import ict_passages, query_candidates, without_span
from seedr.data.records import Article
from seedr.objectives.base import OBJECTIVES
from seedr.objectives.two_tower import PAIR_TASKS, Pair, PairConfig, PairTask, TwoTowerObjective


@PAIR_TASKS.register("ict")
class ICTPairs(PairTask):
    """One ICT pair per passage (paragraph) with a valid query sentence, a fresh sentence each epoch.

    ``source``: ``task``, ``article_id``, ``title``, ``paragraph`` (index in ``Article.paragraphs``),
    ``query_span`` (characters of the query in that paragraph) and ``query_kept`` (ORQA's variant).
    """

    name = "ict"

    def __init__(self, articles: list[Article], config: PairConfig) -> None:
        self.articles = articles
        self.keep_query_probability = config.keep_query_probability
        units = [(a, p) for a, article in enumerate(tqdm(articles, desc="ict: passages", unit=" articles",
                                                          disable=None, leave=False))
                 for p in ict_passages(article)]
        self.units = np.array(units, dtype=np.int64).reshape(-1, 2)  # (U, 2): article, paragraph

    def __len__(self) -> int:
        return len(self.units)

    def pair(self, unit: int, rng: np.random.Generator) -> Pair:
        article_index, paragraph_index = (int(i) for i in self.units[unit])
        article = self.articles[article_index]
        passage = article.paragraphs[paragraph_index]
        candidates = query_candidates(passage)
        start, end = candidates[rng.integers(len(candidates))]
        keep = bool(rng.random() < self.keep_query_probability)
        return Pair(query=passage[start:end], document=passage if keep else without_span(passage, start, end),
                    title=article.title,
                    source={"task": self.name, "article_id": article.id, "title": article.title,
                            "paragraph": paragraph_index, "query_span": (start, end), "query_kept": keep})


@OBJECTIVES.register("ict")
class ICTObjective(TwoTowerObjective):
    """Two-tower pre-training on ICT pairs (ICLR 2020, sec. 3; Table 5 rows 1 and 6)."""

    name = "ict"
    tasks = ("ict",)
