"""SQuAD / ReQA and NQ-open from ../shared/data; DPR's retriever JSON and psgs_w100.tsv written here in their
real layout (DPR's files are not available on this machine)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from helpers import write

from seedr.data.qa import (
    ReqaCandidate,
    SquadArticle,
    SquadParagraph,
    read_dpr,
    read_dpr_passages,
    read_nq_open,
    read_squad,
    reqa_candidates,
    split_squad_by_article,
)
from seedr.data.records import Document
from seedr.io import DataError


@pytest.fixture(scope="module")
def squad_path(shared_data: Path) -> Path:
    return shared_data / "squad" / "squad-dev-v1.1.json.gz"


@pytest.fixture(scope="module")
def squad(squad_path: Path) -> list[SquadArticle]:
    return read_squad(squad_path)


# ---------------------------------------------------------------------------------------------- SQuAD


def test_squad_dev_counts(squad: list[SquadArticle]) -> None:
    assert len(squad) == 48
    assert sum(len(article.paragraphs) for article in squad) == 2067
    assert sum(article.question_count for article in squad) == 10570
    first = squad[0].paragraphs[0]
    assert (squad[0].title, first.id) == ("1973_oil_crisis", "1973_oil_crisis#0")
    assert first.questions[0].question == "When did the 1973 oil crisis begin?"
    assert first.questions[0].answers[0] == "October 1973"


def test_every_answer_lies_in_its_sentence(squad: list[SquadArticle]) -> None:
    checked = 0
    for article in squad:
        for paragraph in article.paragraphs:
            assert paragraph.sentences and len(paragraph.sentences) == len(paragraph.sentence_spans)
            for sentence, (start, end) in zip(paragraph.sentences, paragraph.sentence_spans, strict=True):
                assert paragraph.context[start:end] == sentence
            for question in paragraph.questions:
                assert question.answer_sentence == question.answer_sentences[0]
                for answer, answer_start, index in zip(question.answers, question.answer_starts,
                                                       question.answer_sentences, strict=True):
                    assert paragraph.context[answer_start:answer_start + len(answer)] == answer
                    start, end = paragraph.sentence_spans[index]
                    first_visible = answer_start + len(answer) - len(answer.lstrip())
                    assert start <= first_visible < end
                    checked += 1
    assert checked >= 10570


def test_paragraph_ids_are_unique(squad: list[SquadArticle]) -> None:
    ids = [paragraph.id for article in squad for paragraph in article.paragraphs]
    assert len(ids) == len(set(ids)) == 2067


def test_reqa_candidates(squad: list[SquadArticle]) -> None:
    candidates, questions, qrels = reqa_candidates(squad)
    sentence_count = sum(len(p.sentences) for article in squad for p in article.paragraphs)
    assert len(candidates) == sentence_count  # dev repeats no (sentence, paragraph) pair
    assert len({c.id for c in candidates}) == len(candidates)
    assert len(questions) == len(qrels) == 10570
    by_id = {candidate.id: candidate for candidate in candidates}
    assert all(isinstance(candidate, Document) and candidate.title == "" for candidate in candidates)
    paragraphs = {p.id: p for article in squad for p in article.paragraphs}
    for article in squad:
        for paragraph in article.paragraphs:
            for question in paragraph.questions:
                relevant = qrels[question.id]
                assert f"{paragraph.id}:{question.answer_sentence}" in relevant
                answer_sentences = {paragraph.sentences[s] for s in question.answer_sentences}
                assert {by_id[cid].text for cid in relevant} == answer_sentences
    for candidate in candidates[:200]:
        paragraph_id, index = candidate.id.rsplit(":", 1)
        assert candidate.context == paragraphs[paragraph_id].context
        assert candidate.text == paragraphs[paragraph_id].sentences[int(index)]
    # Annotators' answers sit in different sentences for some questions; all of them count, as in ReQA.
    assert 500 < sum(len(relevant) > 1 for relevant in qrels.values()) < 1500


def test_reqa_counts_every_copy_of_an_answer_sentence(squad: list[SquadArticle]) -> None:
    # ReQA scores a candidate right when its sentence is the answer sentence, whatever its paragraph.
    article = squad[0]
    question = article.paragraphs[0].questions[0]
    sentence = article.paragraphs[0].sentences[question.answer_sentence]
    quote = SquadParagraph("quote#0", sentence, [sentence], [(0, len(sentence))], [])
    quoted = SquadArticle("quote", [quote])
    candidates, _, qrels = reqa_candidates([article, quoted])
    assert set(qrels[question.id]) == {f"1973_oil_crisis#0:{question.answer_sentence}", "quote#0:0"}
    assert isinstance(candidates[-1], ReqaCandidate) and candidates[-1].context == sentence


def test_reqa_indexes_a_sentence_paragraph_pair_once(squad: list[SquadArticle]) -> None:
    once, _, _ = reqa_candidates(squad[:2])
    twice, _, qrels = reqa_candidates(squad[:2] + squad[:2])
    assert twice == once
    assert all(len(relevant) == len(set(relevant)) for relevant in qrels.values())


def test_article_disjoint_split(squad: list[SquadArticle]) -> None:
    train, test = split_squad_by_article(squad, test_fraction=0.2, seed=0)
    assert {a.title for a in train}.isdisjoint(a.title for a in test)
    assert len(train) + len(test) == 48
    share = sum(a.question_count for a in train) / 10570
    assert abs(share - 0.8) < 0.03
    assert [a.title for a in train] == [a.title for a in squad if a in train]  # input order kept
    assert split_squad_by_article(list(reversed(squad)), 0.2, seed=0)[0] == list(reversed(train))


def test_split_fractions_are_nested_for_a_seed(squad: list[SquadArticle]) -> None:
    for seed in (0, 1):
        sides = [split_squad_by_article(squad, test_fraction, seed)[0] for test_fraction in (0.99, 0.95, 0.2)]
        titles = [{a.title for a in side} for side in sides]
        assert titles[0] <= titles[1] <= titles[2]
        assert len(titles[0]) >= 1
    assert split_squad_by_article(squad, 0.2, 0)[0] != split_squad_by_article(squad, 0.2, 1)[0]


def test_split_arguments(squad: list[SquadArticle]) -> None:
    with pytest.raises(ValueError, match="test_fraction"):
        split_squad_by_article(squad, 1.0, 0)
    with pytest.raises(ValueError, match="two articles"):
        split_squad_by_article(squad[:1], 0.5, 0)


def squad_json(paragraph: dict) -> dict:
    return {"version": "1.1", "data": [{"title": "Normans", "paragraphs": [paragraph]}]}


NORMANS = ("The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, a "
           "region in France. They were descended from Norse raiders and pirates from Denmark, Iceland and "
           "Norway.")


def norman_question(**answer: object) -> dict:
    return {"id": "56ddde6b9a695914005b9628", "question": "In what country is Normandy located?",
            "answers": [{"text": "France", "answer_start": 104} | answer]}


def test_small_squad_file_and_gzip(tmp_path: Path) -> None:
    document = squad_json({"context": NORMANS, "qas": [norman_question()]})
    plain = write(tmp_path / "squad.json", json.dumps(document))
    packed = tmp_path / "squad.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    for path in (plain, packed):
        (article,) = read_squad(path)
        (question,) = article.paragraphs[0].questions
        assert (question.answer_sentence, len(article.paragraphs[0].sentences)) == (0, 2)


@pytest.mark.parametrize(("paragraph", "field", "reason"), [
    ({"context": NORMANS, "qas": [norman_question(answer_start=10)]},
     "data[0].paragraphs[0].qas[0].answers[0].answer_start", "does not point at the answer 'France'"),
    ({"context": NORMANS, "qas": [norman_question(answer_start="103")]},
     "data[0].paragraphs[0].qas[0].answers[0].answer_start", "expected int"),
    ({"qas": []}, "data[0].paragraphs[0].context", "missing"),
    ({"context": NORMANS, "qas": [norman_question() | {"answers": []}]},
     "data[0].paragraphs[0].qas[0].answers", "empty"),
    ({"context": NORMANS, "qas": [norman_question(), norman_question()]},
     "data[0].paragraphs[0].qas[1].id", "duplicate question id"),
])
def test_bad_squad(tmp_path: Path, paragraph: dict, field: str, reason: str) -> None:
    path = write(tmp_path / "squad.json", json.dumps(squad_json(paragraph)))
    with pytest.raises(DataError) as info:
        read_squad(path)
    assert (info.value.path, info.value.field) == (str(path), field)
    message = str(info.value)
    assert message.startswith(str(path)) and repr(field) in message and reason in message


def test_malformed_squad_json_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "squad.json", '{"version": "1.1",\n "data": [\n {"title": }]}')
    with pytest.raises(DataError, match="malformed JSON") as info:
        read_squad(path)
    assert info.value.line == 3


# -------------------------------------------------------------------------------------------- NQ-open


def test_nq_open_dev(shared_data: Path) -> None:
    examples = read_nq_open(shared_data / "nq-open" / "NQ-open.dev.jsonl")
    assert len(examples) == 3610
    assert examples[0].id == "1"
    assert examples[0].question == "when was the last time anyone was on the moon"
    assert examples[1].answers == ["Bobby Scott", "Bob Russell"]
    assert len({example.id for example in examples}) == 3610


def test_nq_open_with_ids_and_dpr_answers_key(tmp_path: Path) -> None:
    path = write(tmp_path / "nq.jsonl", '{"id": "q7", "question": "who sings does he love me with reba", '
                                        '"answers": ["Linda Davis"]}\n')
    assert read_nq_open(path)[0].id == "q7"
    assert read_nq_open(path)[0].answers == ["Linda Davis"]


@pytest.mark.parametrize(("text", "field", "reason"), [
    ('{"question": "who sings does he love me with reba", "answer": []}\n', "answer", "empty"),
    ('{"question": "who sings does he love me with reba", "answer": ["Linda Davis", 3]}\n', "answer",
     "answer 1"),
    ('{"answer": ["Linda Davis"]}\n', "question", "missing"),
    ('{"id": "q7", "question": "a", "answer": ["b"]}\n{"id": "q7", "question": "c", "answer": ["d"]}\n', "id",
     "duplicate id 'q7' (first on line 2)"),
])
def test_bad_nq_open(tmp_path: Path, text: str, field: str, reason: str) -> None:
    path = write(tmp_path / "nq.jsonl", '{"question": "who is the owner of reading football club", '
                                        '"answer": ["Xiu Li Dai", "Yongge Dai"]}\n' + text)
    with pytest.raises(DataError) as info:
        read_nq_open(path)
    assert (info.value.path, info.value.field) == (str(path), field)
    message = str(info.value)
    assert info.value.line in (2, 3) and f"line {info.value.line}" in message and reason in message


# ------------------------------------------------------------------------------------------------ DPR

HEAVY = ('"He Ain\'t Heavy, He\'s My Brother" is a popular music ballad written by Bobby Scott and Bob '
         'Russell. Originally recorded by Kelly Gordon in 1969, the song became a worldwide hit for the '
         'Hollies later that year.')


def dpr_item(**changes: object) -> dict:
    item = {
        "dataset": "nq_train_psgs_w100",
        "question": "who wrote he ain't heavy he's my brother lyrics",
        "answers": ["Bobby Scott", "Bob Russell"],
        "positive_ctxs": [{"title": "He Ain't Heavy, He's My Brother", "text": HEAVY, "score": 1000,
                           "title_score": 1, "passage_id": "11828866"}],
        "negative_ctxs": [{"title": "The Hollies",
                           "text": "The Hollies are an English rock group formed in 1962.",
                           "score": 0, "title_score": 0, "passage_id": "7221201"}],
        "hard_negative_ctxs": [{"title": "Bob Russell (songwriter)",
                                "text": "Sidney Keith Russell, known as Bob Russell, was an American "
                                        "songwriter.",
                                "score": 19.1, "title_score": 0, "passage_id": "6219017"}],
    }
    return item | changes


def test_dpr_file_with_both_passage_id_spellings(tmp_path: Path) -> None:
    trivia = dpr_item(question="Which Lloyd Webber musical premiered in the US on 10th December 1993?",
                      answers=["Sunset Boulevard"],
                      positive_ctxs=[{"title": "Sunset Boulevard (musical)",
                                      "text": "Sunset Boulevard is a musical with music by Andrew Lloyd "
                                              "Webber.",
                                      "score": 12.5, "title_score": 0, "psg_id": 9127304}])
    del trivia["negative_ctxs"], trivia["hard_negative_ctxs"]
    path = tmp_path / "biencoder-train.json.gz"
    path.write_bytes(gzip.compress(json.dumps([dpr_item(), trivia]).encode()))
    first, second = read_dpr(path)
    assert (first.id, second.id) == ("0", "1")
    assert first.answers == ["Bobby Scott", "Bob Russell"]
    assert first.positives == [Document("11828866", HEAVY, "He Ain't Heavy, He's My Brother")]
    assert [p.id for p in first.negatives] == ["7221201"]
    assert [p.id for p in first.hard_negatives] == ["6219017"]
    assert second.positives[0].id == "9127304"  # psg_id, an int in the file
    assert second.negatives == second.hard_negatives == []


@pytest.mark.parametrize(("item", "field", "reason"), [
    (dpr_item(positive_ctxs=[{"title": "x", "text": HEAVY}]), "[1].positive_ctxs[0].passage_id", "missing"),
    (dpr_item(hard_negative_ctxs=[{"title": "x", "text": "", "passage_id": "1"}]),
     "[1].hard_negative_ctxs[0].text", "empty"),
    (dpr_item(answers="Bobby Scott"), "[1].answers", "expected list"),
    (dpr_item(question=None), "[1].question", "missing"),
    (["not", "an", "object"], "[1]", "expected a JSON object"),
])
def test_bad_dpr(tmp_path: Path, item: object, field: str, reason: str) -> None:
    path = write(tmp_path / "train.json", json.dumps([dpr_item(), item]))
    with pytest.raises(DataError) as info:
        read_dpr(path)
    assert (info.value.path, info.value.field) == (str(path), field)
    assert repr(field) in str(info.value) and reason in str(info.value)


def test_dpr_file_must_be_a_list(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="expected a JSON list"):
        read_dpr(write(tmp_path / "train.json", json.dumps(dpr_item())))


PSGS_HEADER = "id\ttext\ttitle\n"
AARON = ('1\t"Aaron Aaron ( or ; ""Ahärôn"") is a prophet, high priest, and the brother of Moses in the '
         'Abrahamic religions."\tAaron\n')
AARON_2 = ('2\t"God at Sinai granted Aaron the priesthood for himself and his male descendants, and he '
           'became the first High Priest of the Israelites."\tAaron\n')


def test_dpr_passages(tmp_path: Path) -> None:
    passages = list(read_dpr_passages(write(tmp_path / "psgs_w100.tsv", PSGS_HEADER + AARON + AARON_2)))
    assert [p.id for p in passages] == ["1", "2"]
    assert passages[0].text.startswith('Aaron Aaron ( or ; "Ahärôn") is a prophet')  # CSV quotes undone
    assert passages[0].title == "Aaron"


def test_dpr_passages_header_order_and_headerless(tmp_path: Path) -> None:
    reordered = "id\ttitle\ttext\n" + "1\tAaron\tAaron is a prophet.\n"
    passages = list(read_dpr_passages(write(tmp_path / "a.tsv", reordered)))
    assert passages == [Document("1", "Aaron is a prophet.", "Aaron")]
    assert [p.id for p in read_dpr_passages(write(tmp_path / "b.tsv", AARON + AARON_2))] == ["1", "2"]


@pytest.mark.parametrize(("text", "line", "field", "reason"), [
    (PSGS_HEADER + AARON + "2\tonly two columns\n", 3, None, "expected 3 tab-separated columns"),
    (PSGS_HEADER + AARON + "2\t\tAaron\n", 3, "text", "empty"),
    (PSGS_HEADER + AARON + "\tsome text\tAaron\n", 3, "id", "empty"),
    (PSGS_HEADER.encode() + b"2\tAaron \xc3(\tAaron\n", 2, None, "not UTF-8"),
    ("id\ttext\tname\n" + AARON, 1, None, "expected the header id, text, title"),
])
def test_bad_dpr_passages(tmp_path: Path, text: str | bytes, line: int, field: str | None,
                          reason: str) -> None:
    path = write(tmp_path / "psgs_w100.tsv", text)
    with pytest.raises(DataError) as info:
        list(read_dpr_passages(path))
    assert (info.value.path, info.value.line, info.value.field) == (str(path), line, field)
    assert f"line {line}" in str(info.value) and reason in str(info.value)
