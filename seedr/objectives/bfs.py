"""Body First Selection (BFS): a sentence of an article's lead vs a passage from the rest of the article.

Chang et al. (ICLR 2020, sec. 3): "the query q2 is a random sentence in the first section of a
Wikipedia page, and the document d is a random passage from the same page", proposed "to capture
semantic relationship outside of the local paragraph". Fig. 2 draws d from a later section, and a
passage of the lead would make BFS a near-copy of ICT, so the document is a paragraph of the
article's sections (its body), never of its lead; it is encoded as ``title [SEP] passage``.
"""

from __future__ import annotations

import numpy as np

from seedr.data.pair_units import body_paragraphs, has_lead_and_body, lead_sentences
from seedr.data.records import Article
from seedr.objectives.base import OBJECTIVES
from seedr.objectives.two_tower import PAIR_TASKS, Pair, PairConfig, PairTask, TwoTowerObjective


@PAIR_TASKS.register("bfs")
class BFSPairs(PairTask):
    """One BFS pair per article with a lead and a body, a fresh sentence and passage each epoch.

    ``source``: ``task``, ``article_id``, ``title``, ``query_paragraph`` (lead index),
    ``document_paragraph`` (index in ``Article.paragraphs``) and ``section`` (its heading).
    """

    name = "bfs"

    def __init__(self, articles: list[Article], config: PairConfig) -> None:
        self.articles = articles
        self.units = np.array([index for index, article in enumerate(articles) if has_lead_and_body(article)],
                              dtype=np.int64)

    def __len__(self) -> int:
        return len(self.units)

    def pair(self, unit: int, rng: np.random.Generator) -> Pair:
        article = self.articles[int(self.units[unit])]
        sentences = lead_sentences(article)
        query_paragraph, query = sentences[rng.integers(len(sentences))]
        body = body_paragraphs(article)
        document_paragraph, heading = body[rng.integers(len(body))]
        return Pair(query=query, document=article.paragraphs[document_paragraph], title=article.title,
                    source={"task": self.name, "article_id": article.id, "title": article.title,
                            "query_paragraph": query_paragraph, "document_paragraph": document_paragraph,
                            "section": heading})


@OBJECTIVES.register("bfs")
class BFSObjective(TwoTowerObjective):
    """Two-tower pre-training on BFS pairs (ICLR 2020, sec. 3; Table 5 row 2)."""

    name = "bfs"
    tasks = ("bfs",)
