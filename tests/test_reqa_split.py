"""ReQA SQuAD fine-tuning splits (Chang et al., ICLR 2020, sec. 4.1) on the real SQuAD dev set: the
folder `seedr prepare --reqa-split` writes is read by fine-tuning, search and evaluation as they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seedr.cli import app
from seedr.config.loading import load_config
from seedr.config.settings import FinetuneConfig
from seedr.data.qa import read_squad, reqa_candidates
from seedr.data.training_sets import load_training_set
from seedr.recipes import recipe_path
from seedr.retrieval.encode import tokenize_pairs

RECIPE = recipe_path("reqa_squad", "finetune")


@pytest.fixture(scope="module")
def squad_path(shared_data: Path) -> Path:
    return shared_data / "squad" / "squad-dev-v1.1.json.gz"


@pytest.fixture(scope="module")
def articles(squad_path):
    return read_squad(squad_path)


@pytest.fixture(scope="module")
def split(squad_path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reqa") / "reqa-5"
    result = CliRunner().invoke(app, ["prepare", "--reqa-split", str(squad_path), "--test-fraction", "0.95",
                                      "--seed", "3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_split_keeps_test_questions_and_paragraphs_out_of_training(split, articles):
    training = load_training_set(split, "train")
    validation = load_training_set(split, "dev")
    test_articles = read_squad(split / "test.json")
    test_questions = {q.id for a in test_articles for p in a.paragraphs for q in p.questions}
    all_questions = sum(article.question_count for article in articles)
    # 5% of the questions train (+ validation), by article; 10% of the training side held out
    assert 0.02 < (len(training.queries) + len(validation.queries)) / all_questions < 0.1
    assert len(validation.queries) == round(0.1 * (len(training.queries) + len(validation.queries)))
    assert not set(training.queries) & set(validation.queries)
    assert not (set(training.queries) | set(validation.queries)) & test_questions
    test_contexts = {p.context for a in test_articles for p in a.paragraphs}
    assert not {document.text for document in training.corpus.values()} & test_contexts
    assert len(test_questions) + len(training.queries) + len(validation.queries) == all_questions


def test_candidates_are_encoded_as_sentence_sep_paragraph(split, articles, tokenizer):
    training = load_training_set(split, "train")
    qid = next(iter(training.queries))
    gold = training.corpus[next(iter(training.qrels[qid]))]
    source = next(a for a in articles if any(q.id == qid for p in a.paragraphs for q in p.questions))
    candidates, questions, qrels = reqa_candidates([source])
    by_id = {candidate.id: candidate for candidate in candidates}
    assert questions[qid] == training.queries[qid] and set(qrels[qid]) == set(training.qrels[qid])
    # fine-tuning's "title [SEP] text" is ReQA's (sentence, paragraph) pair, as `seedr search --reqa` encodes it
    assert (gold.title, gold.text) == (by_id[gold.id].text, by_id[gold.id].context)
    assert tokenize_pairs(tokenizer, [gold.title], [gold.text]) == tokenize_pairs(
        tokenizer, [by_id[gold.id].text], [by_id[gold.id].context])


def test_test_side_round_trips_as_squad(split, articles):
    test_articles = read_squad(split / "test.json")
    originals = {article.title: article for article in articles}
    assert test_articles == [originals[article.title] for article in test_articles]
    assert json.loads((split / "test.json").read_text())["version"] == "1.1"


def test_recipe_is_the_papers_fine_tuning():
    config = load_config(FinetuneConfig, RECIPE)
    assert (config.train.learning_rate, config.train.max_steps, config.train.batch_size) == (5e-5, 2000, 512)
    assert (config.loss, config.loss_options, config.negatives, config.negatives_per_query) == (
        "nll", {"in_batch": True}, "in_batch", 0)
    assert (config.query_max_length, config.document_max_length) == (64, 288)
