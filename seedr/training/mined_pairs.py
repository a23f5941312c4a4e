"""Training pairs mined from a corpus alone, written as a fine-tuning data set: ``seedr adapt``'s labels.

No query and no relevance label is read: every pseudo-query and its positive come from one document
(or, for WLP, from a document and one that links to it), built by the pair tasks of
``seedr.objectives`` (``PAIR_TASKS``):

- ``ict``: a sentence of a passage against the rest of the passage (Inverse Cloze Task; Lee et al.,
  ACL 2019; Chang et al., ICLR 2020, sec. 3);
- ``title``: a document's title against its text (``seedr.objectives.pair_tasks``);
- ``bfs``: a sentence of an article's lead against a passage of its body (Body First Selection; Chang et
  al., ICLR 2020, sec. 3) — corpora with sections (the ``wiki/`` bundle);
- ``wlp``: a sentence of an article's lead against a passage of an article that links to it (Wiki Link
  Prediction; Chang et al., ICLR 2020, sec. 3) — corpora with links (FOLDOC, the Jargon File);
- ``crop``: two independent crops of a text (Contriever; Izacard et al., TMLR 2022, §3.2).

By default every task the corpus supports (``supported_sources``). The documents are split, seeded, into
a training part and a held-out part (``validation`` documents); the pairs of a held-out document are
never trained on, nor are its texts mined as negatives: they score the model during training, as
retrieval among the held-out documents' positives (``R@1``, ``R@10``, ``MRR@10``).

The folder (``pairs/`` of an adapt run):

- ``train/``: a BEIR folder — ``corpus.jsonl`` (each pair's positive, id ``<task>-<n>``),
  ``queries.jsonl`` (each pseudo-query, same id, with its ``task`` and the ``documents`` it was mined
  from) and ``qrels/train.tsv``: grade 2 for the query's own
  positive, grade 1 for the other positives mined from the same document (or documents), which
  fine-tuning with ``positive_grade: 2`` trains on never and keeps out of the query's negatives, mined
  (BM25) and in-batch — a pseudo-query's own document is never a negative;
- ``validation/``: the same for the held-out documents, one pair per document (a task drawn among those
  that gave it one), so each pseudo-query has one relevant document; ``qrels/validation.tsv``; an
  adaptation asks for at least ``validation_minimum`` of them (20, and twice the dev metrics' deepest
  cut-off), so that the validation can rank;
- ``documents.jsonl``: the training documents, whole, for a continued pre-training;
- ``pairs.json``: what was mined — the settings, the tasks and their counts, and ``inputs``: what it was
  asked for (the corpus by the sha256 of its documents as read, the pair sources, validation,
  max_documents and seed as given), which a resumed run must ask for again (``MinedPairs.check_inputs``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seedr.data.corpus import article_document, read_corpus_articles
from seedr.data.inputs import Inputs
from seedr.data.pair_units import PAIR_SOURCES, check_pair_sources, check_source_names, corpus_names
from seedr.data.records import Article
from seedr.evaluation.metrics import parse_metric
from seedr.io import DataError, atomic_directory, write_jsonl
from seedr.io.run_folders import changed_settings
from seedr.objectives.pair_tasks import PAIR_TASKS, Pair
from seedr.objectives.two_tower_options import PairConfig

#: The held-out documents when ``validation`` is not given: 10% of the corpus, at most this many.
MAX_VALIDATION_DOCUMENTS = 1000
#: The fewest pairs a validation ranks (``validation_minimum``): with fewer, one pseudo-query more or less at
#: rank 1 moves MRR@10 by more than 0.05, and the best of a run's evaluations is mostly their noise.
MIN_VALIDATION_PAIRS = 20
#: The grade of a pseudo-query's own positive in ``train/qrels/train.tsv`` (other pairs of its document: 1).
OWN_POSITIVE = 2
RECORD = "pairs.json"


@dataclass(frozen=True)
class MinedPairs:
    """A mined fine-tuning data set (see the module docstring).

    Attributes:
        folder: the ``pairs/`` folder.
        summary: ``pairs.json``: settings, documents per split, pairs per task and split.
    """

    folder: Path
    summary: dict[str, Any]

    @property
    def train(self) -> Path:
        return self.folder / "train"

    @property
    def validation(self) -> Path:
        return self.folder / "validation"

    @property
    def validation_qrels(self) -> Path:
        return self.validation / "qrels" / "validation.tsv"

    @property
    def documents(self) -> Path:
        return self.folder / "documents.jsonl"

    @classmethod
    def load(cls, folder: str | Path) -> MinedPairs:
        folder = Path(folder)
        return cls(folder, json.loads((folder / RECORD).read_text(encoding="utf-8")))

    def check_inputs(self, corpus: Inputs, sources: Sequence[str] | None, validation: float | None,
                     max_documents: int | None, seed: int) -> None:
        """Refuse, in one line, to go on with these pairs when they were mined from other inputs than
        ``mine_pairs`` would be given now (``inputs`` in ``pairs.json``; compared as a resumed training's
        settings are, ``changed_settings``): a resumed run would otherwise train on the first corpus's pairs
        and say nothing. The corpus is compared by its documents' content, so a copy of it, moved or
        recompressed, is the same corpus. Pairs mined by an older seedr record no inputs to compare."""
        recorded = self.summary.get("inputs") or {}
        current = _inputs(_read(corpus, max_documents), sources, validation, max_documents, seed)
        changed = changed_settings(recorded, current, unchecked={"corpus"})  # said with its names, below
        if recorded.get("corpus", current["corpus"]) != current["corpus"]:
            changed.insert(0, f"corpus {', '.join(self.summary['corpus'])} (sha256 {recorded['corpus'][:12]})"
                              f" → {', '.join(corpus_names(corpus))} (sha256 {current['corpus'][:12]})")
        if changed:
            raise ValueError(f"{self.folder} was mined from other inputs: {'; '.join(changed)}. Resume with "
                             "the same corpus, pairs, validation, max_documents and seed, or start a new run "
                             "in another --out")


def supported_sources(articles: list[Article], config: PairConfig | None = None) -> list[str]:
    """The pair tasks of ``PAIR_SOURCES`` that build at least one pair from ``articles``."""
    config = config or PairConfig()
    return [name for name in PAIR_SOURCES if len(PAIR_TASKS.get(name)(articles, config))]


def validation_minimum(metrics: Sequence[str]) -> int:
    """The fewest held-out pairs that can validate a run scored by ``metrics`` (the dev metrics, the first
    of which chooses the kept model): ``MIN_VALIDATION_PAIRS``, and twice the deepest cut-off. Each pair
    brings one candidate, its positive, so a validation of n pairs ranks n candidates: with 10 or fewer,
    R@10 is 1.0 for any model, and the one held-out pair of ``validation=1.5`` scored MRR@10 1.0 before
    training, so the start model was kept unchanged. With twice the cut-off, a random ranking leaves half
    the positives out of reach of the deepest metric."""
    deepest = max((parse_metric(name).params.get("cutoff", 0) for name in metrics), default=0)
    return max(MIN_VALIDATION_PAIRS, 2 * deepest)


def _default_share(documents: int) -> int:
    return min(round(0.1 * documents), MAX_VALIDATION_DOCUMENTS)


def validation_count(documents: int, validation: float | None, least: int = 1) -> int:
    """How many documents are held out: ``validation`` documents (≥ 1) or that share of them (< 1); by
    default 10%, at most ``MAX_VALIDATION_DOCUMENTS``, widened to ``least`` (``validation_minimum``) where
    the corpus keeps as many to train on. At least one is held out and one kept; a ``validation`` that
    holds out fewer than ``least``, and a corpus too small to widen the default, are refused."""
    if validation is None:
        count = _default_share(documents)
        if count < least and documents < 2 * least:
            raise ValueError(f"{documents} documents are too few to adapt on with a validation: it ranks "
                             f"the pairs of at least {least} held-out documents, and as many are kept to "
                             f"train on; give a larger corpus, or --validation N to hold out N of them")
        count = max(count, least)
    elif validation < 1:
        count = round(validation * documents)
    else:
        count = int(validation)
    if documents < 2 or count >= documents:
        raise ValueError(f"{documents} documents cannot be split into {count} held out for validation and "
                         f"some to train on: give fewer validation documents or a larger corpus")
    if count < least:
        raise ValueError(f"validation {validation:g} holds out {count} of {documents} documents, too few "
                         f"to rank: a validation needs the pairs of at least {least} (--validation {least} "
                         "or more)")
    return max(1, count)


def _read(corpus: Inputs, max_documents: int | None) -> list[Article]:
    return list(itertools.islice(read_corpus_articles(corpus), max_documents))


def corpus_fingerprint(articles: Sequence[Article]) -> str:
    """The sha256 of the documents as read (id, title, paragraphs, sections, links), not of the files: a
    copied, moved or recompressed corpus is the same; a document added, dropped or changed is not (a file's
    size and mtime would take a copy for another corpus, and an edit of the same size for the same)."""
    digest = hashlib.sha256()
    for article in articles:
        digest.update(json.dumps(asdict(article), ensure_ascii=False).encode("utf-8") + b"\n")
    return digest.hexdigest()


def _inputs(articles: Sequence[Article], sources: Sequence[str] | None, validation: float | None,
            max_documents: int | None, seed: int) -> dict[str, Any]:
    """What mining is asked for (``pairs.json``'s ``inputs``): the corpus by its fingerprint, the rest as
    given."""
    return {"corpus": corpus_fingerprint(articles), "pairs": None if sources is None else list(sources),
            "validation": validation, "max_documents": max_documents, "seed": seed}


def _sources(pair: Pair) -> set[str]:
    """The documents a pair was mined from: the query's, and for WLP the linking one."""
    return {str(pair.source[key]) for key in ("article_id", "linked_from_id") if pair.source.get(key) is not None}


def _pairs(articles: list[Article], sources: Sequence[str], seed: int, config: PairConfig) -> list[Pair]:
    """One pair per unit of every task, each drawn with a generator seeded by (seed, task, unit)."""
    pairs = []
    for number, name in enumerate(sources):
        task = PAIR_TASKS.get(name)(articles, config)
        pairs += [task.pair(unit, np.random.default_rng([seed, number, unit])) for unit in range(len(task))]
    return pairs


def _write_set(folder: Path, pairs: list[Pair], ids: list[str], split: str, qrels: list[tuple[str, str, int]]) -> None:
    """A BEIR folder: the positives as the corpus, the pseudo-queries, and the qrels of ``split``."""
    write_jsonl(folder / "corpus.jsonl", ({"_id": i, "title": p.title, "text": p.document} for i, p in zip(ids, pairs)))
    write_jsonl(folder / "queries.jsonl", ({"_id": i, "text": p.query, "task": p.task, "documents": sorted(_sources(p))}
                                           for i, p in zip(ids, pairs)))
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    lines = ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t{grade}" for q, d, grade in qrels)]
    (folder / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _training_qrels(pairs: list[Pair], ids: list[str]) -> list[tuple[str, str, int]]:
    """Each query's own positive (``OWN_POSITIVE``), then every other positive mined from its document(s)
    at grade 1: relevant, so never a negative, but not trained towards."""
    by_source: dict[str, list[str]] = {}
    for pair, pair_id in zip(pairs, ids):
        for source in _sources(pair):
            by_source.setdefault(source, []).append(pair_id)
    qrels = []
    for pair, pair_id in zip(pairs, ids):
        qrels.append((pair_id, pair_id, OWN_POSITIVE))
        siblings = dict.fromkeys(other for source in sorted(_sources(pair)) for other in by_source[source])
        qrels += [(pair_id, other, 1) for other in siblings if other != pair_id]
    return qrels


def mine_pairs(corpus: Inputs, folder: str | Path, sources: Sequence[str] | None = None,
               validation: float | None = None, max_documents: int | None = None, seed: int = 13,
               least: int = 1) -> MinedPairs:
    """Mine pairs from ``corpus`` (files, globs, folders — a BEIR folder stands for its ``corpus.jsonl``
    — or rows; ``seedr.data.corpus.read_corpus_articles``) into ``folder`` (written whole or not at all).

    Args:
        corpus: the documents; nothing else of a data-set folder is read.
        folder: where the data set goes (see the module docstring).
        sources: pair tasks of ``PAIR_SOURCES``; default every one the corpus supports.
        validation: documents held out (≥ 1) or their share (< 1); default 10%, at most 1,000.
        max_documents: read only the first documents of the corpus.
        seed: the split and every pair.
        least: the fewest validation pairs (``validation_minimum``): the default share is widened to as many
            documents, saying so in ``notes``; fewer are refused (``validation_count``).

    Raises:
        DataError: a named task that builds no pair from the corpus, a corpus that gives none, or
            held-out documents that give fewer than ``least`` pairs.
    """
    articles = _read(corpus, max_documents)
    config = PairConfig()
    where = ", ".join(corpus_names(corpus))
    inputs = _inputs(articles, sources, validation, max_documents, seed)
    if sources is None:
        sources = supported_sources(articles, config)
        if not sources:
            raise DataError(where, "no pair of any kind can be mined from these documents (too short?)")
    check_source_names(sources)
    held_out = validation_count(len(articles), validation, least)
    share = _default_share(len(articles))
    notes = [f"validation: the default 10% of {len(articles)} documents ({share}) is too few to rank; "
             f"{held_out} held out instead"] if validation is None and held_out > share else []
    order = list(range(len(articles)))
    random.Random(f"{seed}:validation").shuffle(order)
    kept = set(order[held_out:])
    train_articles = [a for index, a in enumerate(articles) if index in kept]
    validation_articles = [a for index, a in enumerate(articles) if index not in kept]

    check_pair_sources(train_articles, sources, where)  # a pair of every source named to train on
    train_pairs = _pairs(train_articles, sources, seed, config)
    counts = {name: sum(pair.task == name for pair in train_pairs) for name in sources}
    seen: dict[str, int] = {}
    train_ids = []
    for pair in train_pairs:
        seen[pair.task] = seen.get(pair.task, -1) + 1
        train_ids.append(f"{pair.task}-{seen[pair.task]}")

    # one pair per held-out document, its task drawn among those that gave it one
    candidates: dict[str, list[Pair]] = {}
    for pair in _pairs(validation_articles, sources, seed + 1, config):
        candidates.setdefault(str(pair.source["article_id"]), []).append(pair)
    rng = random.Random(f"{seed}:validation-pairs")
    validation_pairs = [rng.choice(candidates[key]) for key in sorted(candidates)]
    if len(validation_pairs) < max(least, 1):
        raise DataError(where, f"the {held_out} held-out documents give {len(validation_pairs)} pairs to "
                               f"validate on, fewer than the {least} a validation ranks: hold out more "
                               f"documents (--validation)")
    validation_ids = [f"val-{number}" for number in range(len(validation_pairs))]

    summary = {"corpus": corpus_names(corpus), "seed": seed,
               "sources": list(sources), "max_documents": max_documents, "validation": validation,
               "documents": {"train": len(train_articles), "validation": len(validation_articles)},
               "pairs": {"train": counts,
                         "validation": {name: sum(p.task == name for p in validation_pairs)
                                        for name in sources}},
               "inputs": inputs, "notes": notes}
    with atomic_directory(folder) as temporary:
        _write_set(temporary / "train", train_pairs, train_ids, "train", _training_qrels(train_pairs, train_ids))
        _write_set(temporary / "validation", validation_pairs, validation_ids, "validation",
                   [(i, i, 1) for i in validation_ids])
        write_jsonl(temporary / "documents.jsonl",
                    ({"id": d.id, "title": d.title, "text": d.text} for d in map(article_document, train_articles)))
        (temporary / RECORD).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return MinedPairs(Path(folder), summary)


__all__ = ["MAX_VALIDATION_DOCUMENTS", "MIN_VALIDATION_PAIRS", "OWN_POSITIVE", "PAIR_SOURCES", "MinedPairs",
           "corpus_fingerprint", "mine_pairs", "supported_sources", "validation_count", "validation_minimum"]
