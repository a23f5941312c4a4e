"""Wiki Link Prediction (WLP): a sentence of article A's lead vs a passage of an article B that links to A.

Chang et al. (ICLR 2020, sec. 3): "The query q3 is a random sentence in the first section of a
Wikipedia page, and the document d is a passage from another page where there is a hyperlink link
to the page of q3", to "capture inter-page semantic relation". The passage is one of B's that
mentions A (where the hyperlink would be, as in Fig. 2), or any passage of B when none names A
outright; it is encoded as ``B's title [SEP] passage``.

Links come from ``Article.links``: FOLDOC's real ``{cross-references}`` (``seedr.data.glossary``), or,
for the wiki bundle whose hyperlinks were stripped, title mentions (``seedr.data.links``).
"""

from __future__ import annotations

import re

import numpy as np

from seedr.data.pair_units import lead_sentences, linked_targets
from seedr.data.records import Article
from seedr.objectives.base import OBJECTIVES
from seedr.objectives.two_tower import PAIR_TASKS, Pair, PairConfig, PairTask, TwoTowerObjective

_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)$")  # "Mercury (planet)" is mentioned as "Mercury"


def mentioning_paragraphs(article: Article, title: str) -> tuple[list[int], bool]:
    """Indices of ``article``'s non-empty paragraphs that mention ``title`` and ``True``; if none
    does, all its non-empty paragraphs and ``False``.

    A mention is a case-insensitive occurrence of the title without its "(disambiguation)", so
    FOLDOC's plural links ("{operating systems}" to "operating system") count too.
    """
    paragraphs = [(index, text) for index, text in enumerate(article.paragraphs) if text.strip()]
    name = _DISAMBIGUATION.sub("", title).casefold()
    mentioning = [index for index, text in paragraphs if name and name in text.casefold()]
    return (mentioning, True) if mentioning else ([index for index, _ in paragraphs], False)


@PAIR_TASKS.register("wlp")
class WLPPairs(PairTask):
    """One WLP pair per linked-to article A with a lead, a fresh sentence and linking article each epoch.

    Drawing per target rather than per link keeps much-linked articles ("United States") from filling
    the batches with the same queries. ``source``: ``task``, ``article_id``/``title`` of A,
    ``query_paragraph`` (A's lead index), ``linked_from_id``/``linked_from_title`` (B),
    ``document_paragraph`` (index in B's ``paragraphs``) and ``mention`` (whether that passage names A).
    """

    name = "wlp"

    def __init__(self, articles: list[Article], config: PairConfig) -> None:
        self.articles = articles
        units = linked_targets(articles)
        self.targets: list[int] = [target for target, _ in units]
        self.sources: list[np.ndarray] = [np.array(sources, dtype=np.int64) for _, sources in units]

    def __len__(self) -> int:
        return len(self.targets)

    def pair(self, unit: int, rng: np.random.Generator) -> Pair:
        target = self.articles[self.targets[unit]]
        sentences = lead_sentences(target)
        query_paragraph, query = sentences[rng.integers(len(sentences))]
        sources = self.sources[unit]
        linking = self.articles[int(sources[rng.integers(len(sources))])]
        candidates, mention = mentioning_paragraphs(linking, target.title)
        document_paragraph = candidates[rng.integers(len(candidates))]
        return Pair(query=query, document=linking.paragraphs[document_paragraph], title=linking.title,
                    source={"task": self.name, "article_id": target.id, "title": target.title,
                            "query_paragraph": query_paragraph, "linked_from_id": linking.id,
                            "linked_from_title": linking.title, "document_paragraph": document_paragraph,
                            "mention": mention})


@OBJECTIVES.register("wlp")
class WLPObjective(TwoTowerObjective):
    """Two-tower pre-training on WLP pairs (ICLR 2020, sec. 3; Table 5 row 3)."""

    name = "wlp"
    tasks = ("wlp",)
