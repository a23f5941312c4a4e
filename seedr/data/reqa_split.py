"""ReQA SQuAD as fine-tuning data: Chang et al.'s train / validation / test splits (ICLR 2020, sec. 4.1).

"For each dataset, we consider different training/test split of the data (1%/99%, 5%/95% and,
80%/20%) in the fine-tuning stage and the 10% of training set is held out as the validation set for
hyper-parameter tuning. The split is created assuming a cold-start retrieval scenario where the queries
in the test (query, document) pairs are not seen in training."

``write_reqa_split`` writes one split as a folder that the rest of seedr reads unchanged::

    corpus.jsonl        the training side's ReQA candidates, each as title = sentence, text = paragraph,
                        so it is encoded "[CLS] sentence [SEP] paragraph [SEP]" — the document tower's
                        input of the paper and exactly how ``seedr search --reqa`` encodes candidates
    queries.jsonl       the training side's questions
    qrels/train.tsv     90% of them with their gold candidates (BEIR qrels): ``seedr finetune --train``
    qrels/dev.tsv       the other 10%, held out for validation: ``--dev-qrels``
    test.json           the test side as SQuAD JSON: ``seedr search --reqa`` / ``seedr evaluate --reqa``

The train / test cut is by article (``seedr.data.qa.split_squad_by_article``: no test question, nor its
paragraph, is seen in training); the validation questions are drawn from the training side with the
same seed. Only SQuAD dev is available here, so the fractions apply to its 48 articles.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path

from seedr.data.corpus import write_corpus
from seedr.data.qa import SquadArticle, reqa_candidates, split_squad_by_article
from seedr.data.queries import write_qrels, write_queries
from seedr.data.records import Document
from seedr.io import atomic_directory


@dataclass(frozen=True)
class ReqaSplitSummary:
    """What a split folder holds: article, question and candidate counts per side."""

    train_articles: int
    test_articles: int
    train_questions: int
    validation_questions: int
    test_questions: int
    candidates: int


def squad_json(articles: list[SquadArticle]) -> dict:
    """Articles back in SQuAD v1.1's JSON layout (what ``read_squad`` reads)."""
    return {"version": "1.1", "data": [
        {"title": article.title, "paragraphs": [
            {"context": paragraph.context, "qas": [
                {"id": question.id, "question": question.question,
                 "answers": [{"text": text, "answer_start": start}
                             for text, start in zip(question.answers, question.answer_starts, strict=True)]}
                for question in paragraph.questions]}
            for paragraph in article.paragraphs]}
        for article in articles]}


def write_reqa_split(articles: list[SquadArticle], out: str | os.PathLike, test_fraction: float, seed: int = 0,
                     validation_fraction: float = 0.1) -> ReqaSplitSummary:
    """Write the split folder described in the module docstring, atomically.

    Args:
        articles: SQuAD articles (``seedr.data.qa.read_squad``).
        test_fraction: share of the questions on the test side: 0.99, 0.95 or 0.2 for the paper's
            1% / 5% / 80% training splits.
        seed: the article shuffle and the validation draw.
        validation_fraction: share of the training questions held out for validation (paper: 10%).
    """
    if not 0 <= validation_fraction < 1:
        raise ValueError(f"validation_fraction must be in [0, 1), got {validation_fraction}")
    train_articles, test_articles = split_squad_by_article(articles, test_fraction, seed)
    candidates, questions, qrels = reqa_candidates(train_articles)
    held_out = set(random.Random(seed).sample(sorted(questions), round(validation_fraction * len(questions))))
    test_questions = sum(article.question_count for article in test_articles)
    with atomic_directory(out) as folder:
        write_corpus(folder / "corpus.jsonl", (Document(c.id, c.context, c.text) for c in candidates))
        write_queries(folder / "queries.jsonl", questions)
        write_qrels(folder / "qrels" / "train.tsv", {q: qrels[q] for q in questions if q not in held_out}, "beir")
        write_qrels(folder / "qrels" / "dev.tsv", {q: qrels[q] for q in questions if q in held_out}, "beir")
        (Path(folder) / "test.json").write_text(json.dumps(squad_json(test_articles)), encoding="utf-8")
    return ReqaSplitSummary(len(train_articles), len(test_articles), len(questions) - len(held_out),
                            len(held_out), test_questions, len(candidates))
