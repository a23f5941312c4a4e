"""The set-up steps, which prepare data once for an experiment's tasks and training: ``prepare`` and
``retrieval_task`` → ``seedr.data.prepare.prepare_corpus`` (``seedr prepare``, the latter plus a seeded
held-out split), ``open_qa`` → ``seedr.data.open_qa.build_open_qa`` (``seedr prepare --open-qa``) over a
BM25 run it makes, ``reqa_split`` → ``seedr.data.reqa_split`` (``seedr prepare --reqa-split``), and
``glossary_task`` → ``seedr.data.glossary.read_glossary``: a term → definition task from a glossary's structure."""

from __future__ import annotations

import dataclasses
import json
import random
import re
import shutil
from pathlib import Path
from typing import Any

from seedr.config.loading import from_dict, merge_settings
from seedr.data.corpus import load_corpus, read_corpus, write_corpus
from seedr.data.glossary import read_glossary
from seedr.data.inputs import input_files
from seedr.data.open_qa import build_open_qa, read_split
from seedr.data.prepare import PrepareOptions, prepare_corpus
from seedr.data.qa import read_nq_open, read_squad
from seedr.data.queries import read_qrels, read_queries, sample_queries, write_qrels
from seedr.data.reqa_split import write_reqa_split
from seedr.experiments.steps.base import STEPS, ExperimentStep
from seedr.io import atomic_directory, atomic_write
from seedr.pipeline import search as searching
from seedr.pipeline.search import SearchConfig


class SetupStep(ExperimentStep):
    """A set-up step: it prepares data once for the experiment in its folder, which is its product (tasks
    and later steps name it ``{setup.NAME}``); it trains nothing, so the report shows no run of it."""

    reports_run = False

    def product(self, out_dir: Path) -> str | None:
        return str(out_dir)


@STEPS.register("prepare")
class PrepareStep(SetupStep):
    """``seedr prepare`` (a setup step): settings are ``PrepareOptions`` keys, e.g. ``corpus`` and
    ``passages: 100`` for DPR's 100-word passages; the product is the prepared folder."""

    kind = "prepare"

    def config(self) -> Any:
        return from_dict(PrepareOptions, merge_settings(self.settings), f"{self.where} prepare")

    def run(self, out_dir: Path) -> dict[str, Any]:
        summary = prepare_corpus(out_dir, self.config())
        return {"articles": summary.articles, "documents": summary.documents}


@dataclasses.dataclass
class OpenQAConfig:
    """Open-domain QA at a budget (``seedr.data.open_qa``): ``questions`` (NQ-open format) over the
    ``passages`` (a corpus, e.g. a ``prepare`` step's 100-word passages of the shared Wikipedia), split by
    the committed ``split`` — a file, or the name of one shipped with seedr (``nq-open-dev``:
    ``seedr/experiments/splits/nq-open-dev.json``); BM25 ranks every question ``depth`` deep for the
    training positives, hard negatives and pool distractors. The other fields are ``build_open_qa``'s."""

    questions: str = ""
    passages: list[str] = dataclasses.field(default_factory=list)
    split: str = ""
    depth: int = 100
    positives: int = 3
    hard_negatives: int = 30
    answer_passages: int = 5
    run_depth: int = 20
    random_passages: int = 20_000
    seed: int = 0


def shipped_split(split: str) -> str:
    """``split`` as a path: a name without a folder or suffix (``nq-open-dev``) is the split of that name
    shipped inside seedr (``seedr/experiments/splits/``), so an installed seedr runs the experiments
    that use it; anything else is a path."""
    if "/" in split or "\\" in split or Path(split).suffix:
        return split
    return str(Path(__file__).resolve().parents[1] / "splits" / f"{split}.json")  # seedr/experiments/splits


@STEPS.register("open_qa")
class OpenQAStep(SetupStep):
    """Set-up step writing DPR-style training data (``train.json``), the scored test questions
    (``test.jsonl``) and their passage pool (``pool/corpus.jsonl``): ``seedr prepare --open-qa`` with
    the BM25 run made here. Tasks read ``{setup.NAME}/test.jsonl`` over ``{setup.NAME}/pool``, and
    fine-tuning trains on ``{setup.NAME}/train.json``."""

    kind = "open_qa"

    def config(self) -> OpenQAConfig:
        return from_dict(OpenQAConfig, merge_settings(self.settings), f"{self.where} open_qa")

    def validate(self) -> None:
        config = self.config()
        for name in ("questions", "split"):
            if not getattr(config, name):
                raise ValueError(f"{self.where} open_qa: {name} is required")
        if not config.passages:
            raise ValueError(f"{self.where} open_qa: passages is required")

    def run(self, out_dir: Path) -> dict[str, Any]:
        config = self.config()
        examples = read_nq_open(config.questions)
        split = read_split(shipped_split(config.split), config.questions, examples)
        passages = [passage for path in input_files(config.passages, "corpus") for passage in read_corpus(path)]
        wanted = set(split["train"]) | set(split["test"])
        questions = {example.id: example.question for example in examples if example.id in wanted}
        search = SearchConfig(queries=questions, bm25=True, k=config.depth)  # seedr search --bm25, kept in memory
        _, bm25_run = searching.bm25_search(passages, search.queries, search)
        summary = build_open_qa(out_dir, examples, split, passages, bm25_run, depth=config.depth,
                                positives=config.positives, hard_negatives=config.hard_negatives,
                                answer_passages=config.answer_passages, run_depth=config.run_depth,
                                random_passages=config.random_passages, seed=config.seed, show_progress=True)
        return dataclasses.asdict(summary)


@dataclasses.dataclass
class ReqaSplitConfig:
    """ReQA SQuAD cut by article into fine-tuning data and a test side (``seedr.data.reqa_split``):
    ``test_fraction`` 0.99, 0.95 or 0.2 for ICLR 2020's 1% / 5% / 80% training splits."""

    squad: str = ""
    test_fraction: float = 0.2
    seed: int = 0
    validation_fraction: float = 0.1


@STEPS.register("reqa_split")
class ReqaSplitStep(SetupStep):
    """Set-up step ``seedr prepare --reqa-split``: fine-tuning reads the folder (``train_data:
    "{setup.NAME}"``) and a ``reqa`` task scores its test side (``squad: "{setup.NAME}/test.json"``)."""

    kind = "reqa_split"

    def config(self) -> ReqaSplitConfig:
        return from_dict(ReqaSplitConfig, merge_settings(self.settings), f"{self.where} reqa_split")

    def validate(self) -> None:
        config = self.config()
        if not config.squad:
            raise ValueError(f"{self.where} reqa_split: squad is required")
        if not 0 < config.test_fraction < 1:
            raise ValueError(f"{self.where} reqa_split: test_fraction must be in (0, 1), got {config.test_fraction}")

    def run(self, out_dir: Path) -> dict[str, Any]:
        config = self.config()
        summary = write_reqa_split(read_squad(config.squad), out_dir, config.test_fraction, config.seed,
                                   config.validation_fraction)
        return dataclasses.asdict(summary)


@dataclasses.dataclass
class RetrievalTaskConfig:
    """A labelled retrieval task in one folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/train.tsv``
    and ``qrels/heldout.tsv``), for fine-tuning on one part of the queries and testing on the other.

    ``source`` empty: the embedded Wikipedia leads with their description queries (``seedr prepare``),
    cut to the first ``documents`` documents, their queries split (seeded) into ``test_queries`` held-out
    and ``train_queries`` training queries. ``source`` a BEIR folder: its corpus, its training queries,
    and a seeded sample of ``test_queries`` of its test queries as the held-out set; with ``heldout_from:
    train`` the held-out sample comes from its *training* queries instead and the rest of them train: a
    development split, for choosing a recipe without looking at the test set.
    """

    source: str = ""
    documents: int | None = None
    test_queries: int = 1000
    train_queries: int = 2000
    tokenizer_vocab: int = 0
    seed: int = 13
    heldout_from: str = "test"


@STEPS.register("retrieval_task")
class RetrievalTaskStep(SetupStep):
    """Set-up step writing a retrieval task folder (``RetrievalTaskConfig``)."""

    kind = "retrieval_task"

    def config(self) -> RetrievalTaskConfig:
        return from_dict(RetrievalTaskConfig, merge_settings(self.settings), f"{self.where} retrieval_task")

    def validate(self) -> None:
        config = self.config()
        if config.heldout_from not in ("test", "train"):
            raise ValueError(f"{self.where} retrieval_task: heldout_from must be test or train, "
                             f"not {config.heldout_from!r}")
        if config.heldout_from == "train" and not config.source:
            raise ValueError(f"{self.where} retrieval_task: heldout_from: train needs a BEIR source folder")

    def run(self, out_dir: Path) -> dict[str, Any]:
        config = self.config()
        if config.source:
            source = Path(config.source)
            for needed in ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv", "qrels/test.tsv"):
                if not (source / needed).is_file():
                    raise FileNotFoundError(f"{source / needed}: the task needs a BEIR folder with corpus.jsonl, "
                                            "queries.jsonl, qrels/train.tsv and qrels/test.tsv")
            corpus = load_corpus(source / "corpus.jsonl")
            queries = read_queries(source / "queries.jsonl")
            test = read_qrels(source / "qrels" / "test.tsv", queries=queries, documents=corpus)
            train = read_qrels(source / "qrels" / "train.tsv", queries=queries, documents=corpus)
            if config.heldout_from == "train":   # a development split: the test queries stay unseen
                test_ids = sample_queries(list(train), count=min(config.test_queries, len(train) - 1),
                                          seed=config.seed)
                heldout = set(test_ids)
                train_ids = [qid for qid in train if qid not in heldout]
                labels = train
            else:
                test_ids = sample_queries(list(test), count=min(config.test_queries, len(test)), seed=config.seed)
                train_ids = list(train)
                labels = {**test, **train}
        else:
            prepared = out_dir.parent / f"{out_dir.name}-prepared"
            if not (prepared / "prepared.json").exists():
                prepare_corpus(prepared, PrepareOptions(tokenizer_vocab=config.tokenizer_vocab))
            corpus = load_corpus(prepared / "corpus.jsonl")
            if config.documents is not None:
                corpus = dict(list(corpus.items())[: config.documents])
            queries = read_queries(prepared / "queries.jsonl")
            labels = {qid: docs for qid, docs in read_qrels(prepared / "qrels" / "test.tsv").items()
                      if all(doc in corpus for doc in docs)}
            order = sample_queries(list(labels), fraction=1.0, seed=config.seed)
            test_ids = order[: config.test_queries]
            train_ids = order[config.test_queries: config.test_queries + config.train_queries]
        with atomic_directory(out_dir) as folder:
            write_corpus(folder / "corpus.jsonl", corpus.values())
            kept = {qid: queries[qid] for qid in [*test_ids, *train_ids]}
            with atomic_write(folder / "queries.jsonl") as stream:
                stream.writelines(json.dumps({"_id": qid, "text": text}) + "\n" for qid, text in kept.items())
            write_qrels(folder / "qrels" / "train.tsv", {q: labels[q] for q in train_ids}, format="beir")
            write_qrels(folder / "qrels" / "heldout.tsv", {q: labels[q] for q in test_ids}, format="beir")
            if not config.source and (out_dir.parent / f"{out_dir.name}-prepared" / "tokenizer").is_dir():
                shutil.copytree(out_dir.parent / f"{out_dir.name}-prepared" / "tokenizer", folder / "tokenizer")
        return {"documents": len(corpus), "test_queries": len(test_ids), "train_queries": len(train_ids)}


@dataclasses.dataclass
class GlossaryTaskConfig:
    """A retrieval task made from a glossary's structure alone (FOLDOC, the Jargon File:
    ``seedr.data.glossary``): the query is an entry's term (its display headword), the one relevant
    document is that entry's definition with the term removed wherever it occurs (case ignored), and the
    corpus is the definitions of ``entries`` entries drawn (seeded) among those whose definition has at
    least ``min_words`` words, without their terms (no title): finding a term's definition without the
    term written in it, as a reader looks a word up in a dictionary that does not repeat it. ``queries``
    of the drawn entries (seeded) are scored; every drawn definition is in the corpus."""

    glossary: str = ""
    entries: int = 2000
    queries: int = 500
    min_words: int = 8
    seed: int = 13


def glossary_definition(article: Any) -> str:
    """An entry's definition with its term removed (word-bounded, case ignored), spacing collapsed."""
    text = " ".join(article.paragraphs)
    term = re.escape(article.title.strip())
    pattern = re.compile(rf"(?<!\w){term}(?!\w)", re.IGNORECASE) if term else None
    return " ".join((pattern.sub(" ", text) if pattern else text).split())


@STEPS.register("glossary_task")
class GlossaryTaskStep(SetupStep):
    """Set-up step writing a term → definition task from a glossary (``GlossaryTaskConfig``): a folder with
    ``corpus.jsonl`` (definitions, no titles), ``queries.jsonl`` (terms) and ``qrels/test.tsv``."""

    kind = "glossary_task"

    def config(self) -> GlossaryTaskConfig:
        return from_dict(GlossaryTaskConfig, merge_settings(self.settings), f"{self.where} glossary_task")

    def validate(self) -> None:
        config = self.config()
        if not config.glossary:
            raise ValueError(f"{self.where} glossary_task: glossary is required (FOLDOC's foldoc.jsonl.gz)")
        if not 1 <= config.queries <= config.entries:
            raise ValueError(f"{self.where} glossary_task: queries must be between 1 and entries ({config.entries}), "
                             f"got {config.queries}")

    def run(self, out_dir: Path) -> dict[str, Any]:
        config = self.config()
        eligible = [article for article in read_glossary(config.glossary)
                    if article.title.strip() and len(glossary_definition(article).split()) >= config.min_words]
        if len(eligible) < config.entries:
            raise ValueError(f"{config.glossary}: {len(eligible)} entries have a definition of {config.min_words} "
                             f"words or more; asked for {config.entries}")
        rng = random.Random(config.seed)
        drawn = rng.sample(eligible, config.entries)
        scored = rng.sample(drawn, config.queries)
        with atomic_directory(out_dir) as folder:
            with atomic_write(folder / "corpus.jsonl") as stream:
                stream.writelines(json.dumps({"_id": a.id, "title": "", "text": glossary_definition(a)}) + "\n"
                                  for a in drawn)
            with atomic_write(folder / "queries.jsonl") as stream:
                stream.writelines(json.dumps({"_id": f"q-{a.id}", "text": a.title.strip()}) + "\n" for a in scored)
            write_qrels(folder / "qrels" / "test.tsv", {f"q-{a.id}": {a.id: 1} for a in scored}, format="beir")
        return {"entries": len(drawn), "queries": len(scored), "eligible": len(eligible)}
