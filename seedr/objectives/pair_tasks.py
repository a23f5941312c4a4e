"""The pair tasks: the builders of positive (query, document) pairs from a corpus's articles, which the
two-tower objectives train on (``seedr.objectives.two_tower``) and ``seedr adapt`` mines as labels
(``seedr.training.mined_pairs``), each registered in ``PAIR_TASKS`` under its name:

- ``ict``, ``bfs``, ``wlp``: the paragraph-level tasks of Chang et al. (ICLR 2020, sec. 3), whose pairs
  the objectives of the same names describe (``seedr.objectives.ict.objective`` ...);
- ``title``: the article's title as the query, its text (without the title) as the document. Not one
  of the ICLR 2020 tasks (Chang et al. encode the title with every document instead, sec. 4.1): a pair
  any titled corpus gives for free, seedr's addition. Only documents that have a title take part.
- ``crop``: two independent random spans of the same text, each a word-level version of Contriever's
  crop (Izacard et al., TMLR 2022, §3.2 "Independent cropping": a ratio r ~ U(ratio_min, ratio_max) of
  the text, its start uniform, each word then deleted with probability 0.1), drawn by
  ``seedr.objectives.contriever.objective.random_crop`` over the positions of the words, with the
  released script's ratios (0.05–0.5, ``ContrieverConfig``). Crops carry no title.

Each takes its units by the torch-free rules of ``seedr.data.pair_units`` and builds one pair per unit, a
pure function of (unit, generator).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from tqdm.auto import tqdm

from seedr.data.pair_units import (
    article_text,
    body_paragraphs,
    can_be_cropped,
    has_lead_and_body,
    has_title_and_text,
    ict_passages,
    lead_sentences,
    linked_targets,
    query_candidates,
    without_span,
)
from seedr.data.records import Article
from seedr.objectives.contriever.objective import random_crop
from seedr.objectives.contriever.options import ContrieverConfig
from seedr.objectives.two_tower_options import PairConfig
from seedr.registry import Registry


@dataclass(frozen=True, slots=True)
class Pair:
    """A positive (query, document) pair; the document is encoded as ``title [SEP] document``.

    ``source`` says where it came from: always ``task``, ``article_id`` and ``title`` of the article
    the query was drawn from, plus task-specific positions (paragraph indices, the linking article).
    """

    query: str
    document: str
    title: str
    source: dict[str, Any]
    #: log Q(d): log of the probability that a drawn pair is this one (``PairDataset`` sets it), for
    #: the sampled softmax's correction (``seedr.losses.in_batch_softmax``).
    log_q: float = 0.0

    @property
    def task(self) -> str:
        return self.source["task"]


class PairTask:
    """A pre-training task of the ICLR 2020 paper (sec. 3), as a builder of positive pairs.

    A task has ``len(task)`` *units* (a passage for ICT, an article for BFS, a linked article for WLP)
    and builds one pair from a unit with the random generator it is given, so a pair is a pure
    function of (unit, generator): ``PairData`` makes that deterministic in (seed, epoch, position),
    and draws different sentences and passages from the same unit in different epochs.

    Subclasses set ``name``, take ``(articles, config: PairConfig)`` and register in ``PAIR_TASKS``.
    """

    name: ClassVar[str] = ""

    def __len__(self) -> int:
        raise NotImplementedError

    def pair(self, unit: int, rng: np.random.Generator) -> Pair:
        raise NotImplementedError


PAIR_TASKS: Registry[type[PairTask]] = Registry("pair task")


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


__all__ = ["MIN_CROP_LENGTH", "PAIR_TASKS", "BFSPairs", "CropPairs", "ICTPairs", "Pair", "PairTask", "TitlePairs",
           "WLPPairs", "mentioning_paragraphs"]
