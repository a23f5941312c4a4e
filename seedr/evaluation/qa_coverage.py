"""Top-k answer coverage for open-domain QA retrieval: DPR's retrieval accuracy (Karpukhin et al. 2020, 5.1).

A question is covered at k when one of its top-k passages contains one of its answer strings.
"Contains" is DPR's string match (``seedr.data.answers.has_answer``: NFD, DrQA's tokenizer, lower case,
a contiguous token sequence).

As in DPR's evaluation, only the passage text is searched, not its title (``include_title=True``
prepends the title, as DPR's ``use_title`` option does with ``title + " . " + text``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from tqdm.auto import tqdm

from seedr.data.answers import answer_tokens, dpr_tokens, has_answer
from seedr.data.corpus import count_documents, read_corpus
from seedr.data.inputs import Sources, input_files
from seedr.data.qa import read_nq_open
from seedr.data.records import Document, Run
from seedr.data.runs import rank_documents


def first_hit_ranks(run: Run, passages: Mapping[str, Document], answers: dict[str, Sequence[str]],
                    depth: int = 100, include_title: bool = False, show_progress: bool = False
                    ) -> dict[str, int | None]:
    """For each question of ``answers``: the rank (1-based) of its first answer-bearing passage within
    the top ``depth``, or ``None``. Questions the run does not answer get ``None``."""
    ranks: dict[str, int | None] = {}
    for qid, question_answers in tqdm(answers.items(), desc="answer coverage", unit="question",
                                      disable=not show_progress):
        ranks[qid] = None
        for rank, (doc_id, _) in enumerate(rank_documents(run.get(qid, {}))[:depth], start=1):
            passage = passages.get(doc_id)
            if passage is None:
                raise KeyError(f"passage {doc_id!r} (question {qid!r}) is not in the passage collection")
            text = f"{passage.title} . {passage.text}" if include_title else passage.text
            if has_answer(question_answers, text):
                ranks[qid] = rank
                break
    return ranks


def ranked_passages(runs: Iterable[Run], corpus: Sources, show_progress: bool = False) -> dict[str, Document]:
    """The passages of ``corpus`` (files, globs, folders) that ``runs`` rank, by id: all that answer
    coverage reads, kept in memory however large the corpus."""
    needed = {doc for run in runs for scores in run.values() for doc in scores}
    documents = tqdm(read_corpus(corpus, check_duplicates=False), desc="read passages", unit="passage",
                     total=count_documents(corpus) if show_progress else None, disable=not show_progress)
    return {document.id: document for document in documents if document.id in needed}


def read_qa_file(path: Sources) -> tuple[dict[str, str], dict[str, list[str]]]:
    """``(questions, answers)`` of NQ-open / DPR QA JSONL, keyed by ``read_nq_open``'s ids (the ``id``
    field, else the line number): the same ids for searching and for scoring.

    ``path``: a file, or several files, quoted globs or a folder (``seedr.data.inputs.input_files``);
    with several files an id is prefixed by its file's name (``NQ-open.dev.jsonl:12``), as line
    numbers repeat from file to file.
    """
    files = input_files(path, "questions")
    questions: dict[str, str] = {}
    answers: dict[str, list[str]] = {}
    for file in files:
        prefix = f"{file.name}:" if len(files) > 1 else ""
        for example in read_nq_open(file):
            questions[prefix + example.id] = example.question
            answers[prefix + example.id] = list(example.answers)
    return questions, answers


def coverage_per_question(first_hits: dict[str, int | None], ks: Sequence[int] = (1, 5, 20, 100)
                          ) -> dict[str, dict[str, float]]:
    """``{"Top-k": {qid: 1.0 or 0.0}}``: per-question hits, for significance tests."""
    return {f"Top-{k}": {qid: float(rank is not None and rank <= k) for qid, rank in first_hits.items()}
            for k in ks}


def answer_coverage(run: Run, passages: dict[str, Document], answers: dict[str, Sequence[str]],
                    ks: Sequence[int] = (1, 5, 20, 100), include_title: bool = False) -> dict[str, float]:
    """Fraction of questions with an answer in their top k passages, ``{"Top-k": value}``, over all
    questions of ``answers`` (DPR's "top-k retrieval accuracy", Table 2)."""
    first_hits = first_hit_ranks(run, passages, answers, depth=max(ks), include_title=include_title)
    return {name: float(np.mean(list(hits.values()))) if hits else 0.0
            for name, hits in coverage_per_question(first_hits, ks).items()}


def answer_passage_counts(passages: Iterable[Document], answers: dict[str, Sequence[str]],
                          include_title: bool = False) -> dict[str, int]:
    """For each question of ``answers``: how many of ``passages`` contain one of its answers (DPR's
    match, as ``has_answer``) — what a random ranking's chance of covering it depends on
    (``seedr.evaluation.chance.coverage_chance``). Each passage is tokenised once; an answer is looked
    for only in the passages that hold all its tokens."""
    tokenised: list[list[str]] = []
    postings: dict[str, set[int]] = {}
    for index, passage in enumerate(passages):
        tokens = dpr_tokens(f"{passage.title} . {passage.text}" if include_title else passage.text)
        tokenised.append(tokens)
        for token in set(tokens):
            postings.setdefault(token, set()).add(index)
    counts = {}
    for qid, question_answers in answers.items():
        found: set[int] = set()
        for answer in question_answers:
            needle = list(answer_tokens(answer))
            if not needle:
                continue  # as has_answer: a token-less answer matches nothing
            candidates = set.intersection(*(postings.get(token, set()) for token in set(needle)))
            width = len(needle)
            found |= {index for index in candidates - found
                      if any(tokenised[index][start:start + width] == needle
                             for start in range(len(tokenised[index]) - width + 1))}
        counts[qid] = len(found)
    return counts
