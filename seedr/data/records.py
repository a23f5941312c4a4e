"""The records that flow between stages. Corpus JSONL on disk is ``{"id", "title", "text"}``."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Document:
    """A retrievable unit: a passage, an abstract, a document."""

    id: str
    text: str
    title: str = ""


@dataclass(frozen=True, slots=True)
class Query:
    id: str
    text: str


@dataclass(frozen=True, slots=True)
class Section:
    heading: str
    paragraphs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Article:
    """A structured encyclopedic article (the ``wiki/`` bundle's format; also FOLDOC/Jargon entries,
    whose single paragraph is the lead). ``links`` are titles of other articles this one links to."""

    id: str
    title: str
    lead: tuple[str, ...]
    sections: tuple[Section, ...] = ()
    links: tuple[str, ...] = field(default=())

    @property
    def paragraphs(self) -> tuple[str, ...]:
        """All paragraphs, lead first."""
        return self.lead + tuple(p for section in self.sections for p in section.paragraphs)


# qid -> docid -> graded relevance
Qrels = dict[str, dict[str, int]]
# qid -> docid -> score
Run = dict[str, dict[str, float]]
