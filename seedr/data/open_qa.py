"""Open-domain QA over a passage pool that every condition can encode: DPR's protocol at a budget.

DPR (Karpukhin et al., EMNLP 2020) trains its retriever on questions whose positives are passages that
contain an answer, with BM25's top passages without the answer as hard negatives (§5.1, "for TriviaQA,
WebQuestions and CuratedTREC ... we use the highest-ranked passage from BM25 that contains the answer
as the positive passage"), and scores Top-k answer coverage over all of Wikipedia (21M passages). On a
CPU the conditions of an experiment cannot each encode the shared Wikipedia's 659k passages, so a test
pool stands in for it, built once and shared by every condition:

- a **fixed split** of the questions (``split_questions``: test and training questions by a seeded
  shuffle, committed as a file so that every run scores the same questions; ``read_split`` refuses a
  questions file other than the one it was made from);
- **training data in DPR's format** (``train.json``, read by ``seedr finetune --train``): for each
  training question with an answer passage in BM25's top ``depth``, its answer passages in BM25 order as
  ``positive_ctxs`` and BM25's top passages without an answer as ``hard_negative_ctxs``;
- **the test pool** (``pool/corpus.jsonl``): for each scored test question, a uniform draw of up to
  ``answer_passages`` of *all* the corpus's passages that contain an answer (found by one exhaustive
  scan, ``answer_passages_of``, so neither BM25 nor any encoder chose them), the top ``run_depth``
  passages of BM25 and of every other given run (hard distractors that are not BM25's alone), and
  ``random_passages`` passages drawn uniformly from the whole corpus;
- **the scored test questions** (``test.jsonl``, NQ-open's format with ids): the test questions whose
  answer occurs somewhere in the corpus (the others can be covered by no system; their count is
  reported).

"Contains an answer" is DPR's string match throughout (``seedr.data.answers.has_answer``: NFD,
DrQA's tokens, uncased, a contiguous token sequence); the exhaustive scan finds exactly the passages
``has_answer`` accepts, with one Aho–Corasick automaton over every answer's tokens.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import ahocorasick
from tqdm.auto import tqdm

from seedr.data.answers import dpr_tokens
from seedr.data.corpus import read_corpus, write_corpus
from seedr.data.inputs import input_files
from seedr.data.qa import QAExample, read_nq_open
from seedr.data.records import Document, Run
from seedr.data.runs import read_trec_run
from seedr.io import DataError, atomic_directory, atomic_write, read_json

#: The split file's format version, recorded in it.
SPLIT_FORMAT = 1


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes: what a split records of the questions file it splits."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def split_questions(examples: Sequence[QAExample], test_questions: int, seed: int = 0) -> dict[str, list[str]]:
    """``{"train": ids, "test": ids}``: ``test_questions`` question ids drawn by a seeded shuffle
    (Python's ``random.Random``, stable across versions), the rest for training; each list in file order."""
    if not 0 < test_questions < len(examples):
        raise ValueError(f"test_questions must be between 1 and {len(examples) - 1} (the file has "
                         f"{len(examples)} questions), got {test_questions}")
    ids = [example.id for example in examples]
    chosen = set(random.Random(seed).sample(ids, test_questions))
    return {"train": [qid for qid in ids if qid not in chosen], "test": [qid for qid in ids if qid in chosen]}


def write_split(path: str | os.PathLike, questions_path: str | os.PathLike, split: dict[str, list[str]],
                seed: int) -> Path:
    """Write a split file: the question ids of each side and the questions file's name and SHA-256."""
    record = {"format": SPLIT_FORMAT, "questions": Path(questions_path).name,
              "sha256": file_sha256(questions_path), "seed": seed, **split}
    with atomic_write(path) as stream:
        stream.write(json.dumps(record) + "\n")
    return Path(path)


def read_split(path: str | os.PathLike, questions_path: str | os.PathLike,
               examples: Sequence[QAExample]) -> dict[str, list[str]]:
    """The ``train`` and ``test`` ids of a split file, checked against the questions file they split."""
    record = read_json(path)
    for key in ("sha256", "train", "test"):
        if key not in record:
            raise DataError(path, "missing: not a seedr question split", field=key)
    if record["sha256"] != file_sha256(questions_path):
        raise DataError(path, f"was made from another questions file than {questions_path} "
                              f"(SHA-256 {record['sha256'][:12]}…): make a new split", field="sha256")
    known = {example.id for example in examples}
    for side in ("train", "test"):
        unknown = [qid for qid in record[side] if qid not in known]
        if unknown:
            raise DataError(path, f"question id {unknown[0]!r} is not in {questions_path}", field=side)
    if set(record["train"]) & set(record["test"]):
        raise DataError(path, "a question is on both sides", field="test")
    return {"train": list(record["train"]), "test": list(record["test"])}


def _needle(tokens: Sequence[str]) -> str:
    """Tokens as a space-framed string: DrQA's tokens hold no separator, so a substring match of one
    needle in a passage's haystack is exactly a contiguous token-sequence match."""
    return f" {' '.join(tokens)} "


def answer_passages_of(examples: Sequence[QAExample], passages: Iterable[Document],
                       show_progress: bool = False) -> dict[str, list[str]]:
    """For each question, the ids of every passage whose text contains one of its answers (DPR's
    ``has_answer``), in corpus order; one pass over the passages with an Aho–Corasick automaton."""
    questions_of: dict[str, set[str]] = defaultdict(set)
    for example in examples:
        for answer in example.answers:
            tokens = dpr_tokens(answer)
            if tokens:
                questions_of[_needle(tokens)].add(example.id)
    automaton = ahocorasick.Automaton()
    for needle in questions_of:
        automaton.add_word(needle, needle)
    found: dict[str, list[str]] = {example.id: [] for example in examples}
    if not questions_of:
        return found
    automaton.make_automaton()
    for passage in tqdm(passages, desc="answer scan", unit="passage", disable=not show_progress):
        matched: set[str] = set()
        for _, needle in automaton.iter(_needle(dpr_tokens(passage.text))):
            matched |= questions_of[needle]
        for qid in matched:
            found[qid].append(passage.id)
    return found


@dataclass(frozen=True)
class OpenQASummary:
    """What ``build_open_qa`` wrote, with the choices that made it (``open_qa.json``)."""

    passages: int
    train_questions: int
    train_with_positive: int
    test_questions: int
    test_scored: int
    pool_passages: int
    depth: int
    answer_passages: int
    run_depth: int
    random_passages: int
    seed: int
    runs: list[str]


def build_open_qa(out: str | os.PathLike, examples: Sequence[QAExample], split: dict[str, list[str]],
                  passages: Sequence[Document], bm25_run: Run, other_runs: dict[str, Run] | None = None, *,
                  depth: int = 100, positives: int = 3, hard_negatives: int = 30, answer_passages: int = 5,
                  run_depth: int = 20, random_passages: int = 20_000, seed: int = 0,
                  show_progress: bool = False) -> OpenQASummary:
    """Write the folder described in the module docstring (``train.json``, ``test.jsonl``,
    ``pool/corpus.jsonl``, ``open_qa.json``), atomically.

    Args:
        examples: every question of the questions file; ``split`` says which are for training or test.
        passages: the whole corpus of passages (e.g. the shared Wikipedia as DPR's 100-word passages).
        bm25_run: BM25's ranking of the passages for every question (training and test), at least
            ``depth`` deep: training positives and hard negatives, and the test pool's BM25 distractors.
        other_runs: more rankings of the same passages for the test questions (e.g. a zero-shot dense
            encoder), whose top ``run_depth`` also enter the pool, by name.
        positives: most answer passages (BM25 order) a training question lists as ``positive_ctxs``.
        hard_negatives: most BM25 passages without an answer listed as ``hard_negative_ctxs``.
        answer_passages: most answer passages drawn (uniformly, from all of them) per scored test question.
    """
    for name, value in (("depth", depth), ("positives", positives), ("answer_passages", answer_passages)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    for name, value in (("hard_negatives", hard_negatives), ("run_depth", run_depth),
                        ("random_passages", random_passages)):
        if value < 0:
            raise ValueError(f"{name} cannot be negative, got {value}")
    by_id = {passage.id: passage for passage in passages}
    questions = {example.id: example for example in examples}
    rng = random.Random(seed)
    # one scan of the corpus finds every question's answer passages: training positives are those of them
    # BM25 ranks, the test pool draws from all of them
    found = answer_passages_of([questions[qid] for qid in (*split["train"], *split["test"])], passages,
                               show_progress)

    training = []
    for qid in split["train"]:
        example, answer_ids = questions[qid], set(found[qid])
        ranked = sorted(bm25_run.get(qid, {}).items(), key=lambda item: -item[1])[:depth]
        with_answer = [pid for pid, _ in ranked if pid in answer_ids]
        if not with_answer:
            continue  # DPR leaves questions without a positive out of its training set
        chosen = set(with_answer)
        without = [pid for pid, _ in ranked if pid not in chosen][:hard_negatives]
        training.append({"question": example.question, "answers": example.answers,
                         "positive_ctxs": [_context(by_id[pid]) for pid in with_answer[:positives]],
                         "negative_ctxs": [],
                         "hard_negative_ctxs": [_context(by_id[pid]) for pid in without]})

    scored = [questions[qid] for qid in split["test"] if found[qid]]
    pool: set[str] = set()
    for example in scored:
        answers = found[example.id]
        pool.update(rng.sample(answers, min(answer_passages, len(answers))))
        for run in (bm25_run, *(other_runs or {}).values()):
            ranked = sorted(run.get(example.id, {}).items(), key=lambda item: -item[1])[:run_depth]
            pool.update(pid for pid, _ in ranked)
    unknown = sorted(pool - by_id.keys())
    if unknown:
        raise ValueError(f"a run ranks passage {unknown[0]!r}, which is not in the corpus given")
    pool.update(passage.id for passage in rng.sample(list(passages), min(random_passages, len(passages))))

    summary = OpenQASummary(len(passages), len(split["train"]), len(training), len(split["test"]), len(scored),
                            len(pool), depth, answer_passages, run_depth, random_passages, seed,
                            ["bm25", *(other_runs or {})])
    with atomic_directory(out) as folder:
        folder = Path(folder)
        (folder / "train.json").write_text(json.dumps(training), encoding="utf-8")
        with open(folder / "test.jsonl", "w", encoding="utf-8") as stream:
            for example in scored:
                stream.write(json.dumps({"id": example.id, "question": example.question,
                                         "answer": example.answers}) + "\n")
        write_corpus(folder / "pool" / "corpus.jsonl", (passage for passage in passages if passage.id in pool))
        (folder / "open_qa.json").write_text(json.dumps(asdict(summary), indent=2), encoding="utf-8")
    return summary


def build_open_qa_from_files(out: str | os.PathLike, questions_path: str | os.PathLike,
                             corpus: Sequence[str | os.PathLike], split_path: str | os.PathLike,
                             bm25_run_path: str | os.PathLike, other_run_paths: Sequence[str | os.PathLike] = (),
                             test_questions: int = 1000, seed: int = 0, show_progress: bool = False,
                             **options: Any) -> OpenQASummary:
    """``build_open_qa`` from files, as ``seedr prepare --open-qa`` calls it: NQ-open-format questions, the
    passages (any corpus format, files, globs or folders), a split file (made from ``test_questions`` and
    ``seed`` and written to ``split_path`` when it does not exist yet; read and checked otherwise) and TREC
    runs (named by their file names). ``options`` go to ``build_open_qa``."""
    examples = read_nq_open(questions_path)
    if Path(split_path).exists():
        split = read_split(split_path, questions_path, examples)
    else:
        split = split_questions(examples, test_questions, seed)
        write_split(split_path, questions_path, split, seed)
    passages = [passage for path in input_files(list(corpus), "corpus")
                for passage in tqdm(read_corpus(path), desc="passages", unit="passage", disable=not show_progress)]
    others = {Path(path).name: read_trec_run(path) for path in other_run_paths}
    return build_open_qa(out, examples, split, passages, read_trec_run(bm25_run_path), others, seed=seed,
                         show_progress=show_progress, **options)


def _context(passage: Document) -> dict[str, Any]:
    """A passage as a DPR context (``passage_id``, ``title``, ``text``)."""
    return {"passage_id": passage.id, "title": passage.title, "text": passage.text}


__all__ = ["OpenQASummary", "answer_passages_of", "build_open_qa", "build_open_qa_from_files", "file_sha256", "read_split", "split_questions",
           "write_split"]
