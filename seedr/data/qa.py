"""Question-answering data for retrieval: SQuAD v1.1 (ReQA), NQ-open and DPR's retriever files.

ReQA (Ahmad et al., 2019, "ReQA: An Evaluation for End-to-End Answer Retrieval Models"), as used by
Chang et al. (ICLR 2020, sec. 4.1): each paragraph ``p`` is split into sentences ``s_1 .. s_n``; the
candidates are the pairs ``(s_i, p)`` of every paragraph, and a question's relevant candidate is the
sentence holding its answer span.
"""

from __future__ import annotations

import bisect
import csv
import os
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from seedr.data.records import Document, Qrels
from seedr.data.sentences import sentence_spans
from seedr.io import DataError, iter_jsonl, iter_lines, read_json, require, unique_id

PathLike = str | os.PathLike


def _take(node: Any, key: str, path: PathLike, where: str, kind: type | tuple[type, ...] = str,
          allow_empty: bool = False) -> Any:
    """``node[key]`` of a parsed JSON document, or a ``DataError`` whose field is the JSON path
    (``data[3].paragraphs[0].context``): whole-file JSON has no useful line numbers (SQuAD is one line)."""
    field = f"{where}.{key}" if where else key
    if not isinstance(node, dict):
        raise DataError(path, f"expected a JSON object, got {type(node).__name__}", field=where or None)
    if isinstance(node.get(key), bool) and kind is not bool:
        raise DataError(path, f"expected {getattr(kind, '__name__', kind)}, got bool", field=field)
    try:
        return require(node, key, path, line=None, kind=kind, allow_empty=allow_empty)  # type: ignore[arg-type]
    except DataError as error:
        raise DataError(path, error.reason, field=field) from None


# ------------------------------------------------------------------------------------------------ SQuAD


@dataclass(frozen=True, slots=True)
class SquadQuestion:
    """A SQuAD question; ``answer_sentences[k]`` is the index (in its paragraph's ``sentences``) of the
    sentence in which ``answers[k]`` starts (a span crossing a boundary belongs to its first sentence)."""

    id: str
    question: str
    answers: list[str]
    answer_starts: list[int]
    answer_sentences: list[int]

    @property
    def answer_sentence(self) -> int:
        """The sentence holding the first answer span: the ReQA target sentence."""
        return self.answer_sentences[0]


@dataclass(frozen=True, slots=True)
class SquadParagraph:
    """A context paragraph; ``id`` is ``"{article title}#{paragraph index}"`` (SQuAD has no paragraph
    ids). ``sentence_spans`` are character ``(start, end)`` offsets of ``sentences`` in ``context``."""

    id: str
    context: str
    sentences: list[str]
    sentence_spans: list[tuple[int, int]]
    questions: list[SquadQuestion]


@dataclass(frozen=True, slots=True)
class SquadArticle:
    title: str
    paragraphs: list[SquadParagraph]

    @property
    def question_count(self) -> int:
        return sum(len(paragraph.questions) for paragraph in self.paragraphs)


def _answer_sentence(spans: list[tuple[int, int]], context: str, start: int, answer: str) -> int | None:
    """Index of the sentence holding the first non-space character of the answer span.

    The segmenter leaves the whitespace between sentences out of every span, so an answer whose span
    opens on that whitespace is placed by its first visible character.
    """
    first_visible = start + len(answer) - len(answer.lstrip())
    index = bisect.bisect_right([end for _, end in spans], first_visible)
    if index == len(spans) or not spans[index][0] <= first_visible:
        return None
    return index


def _read_question(node: Any, context: str, spans: list[tuple[int, int]], path: PathLike,
                   where: str) -> SquadQuestion:
    qid = _take(node, "id", path, where)
    question = _take(node, "question", path, where)
    answer_nodes = _take(node, "answers", path, where, kind=list)  # SQuAD 2.0's unanswerable ones stop here
    answers, starts, sentences = [], [], []
    for k, answer_node in enumerate(answer_nodes):
        at = f"{where}.answers[{k}]"
        text = _take(answer_node, "text", path, at)
        start = _take(answer_node, "answer_start", path, at, kind=int)
        if start < 0 or context[start:start + len(text)] != text:
            raise DataError(path, f"answer_start {start} does not point at the answer {text!r} in the "
                            "context", field=f"{at}.answer_start")
        sentence = _answer_sentence(spans, context, start, text)
        if sentence is None:
            raise DataError(path, f"no sentence of the context holds the answer {text!r}",
                            field=f"{at}.answer_start")
        answers.append(text)
        starts.append(start)
        sentences.append(sentence)
    return SquadQuestion(qid, question, answers, starts, sentences)


def read_squad(path: PathLike) -> list[SquadArticle]:
    """Read a SQuAD v1.1 JSON file (``.gz`` and friends transparently), splitting every context into
    sentences (``seedr.data.sentences``, BlingFire) and placing every answer in its sentence.

    Bad input raises a ``DataError`` whose field is the JSON path of the fault, e.g.
    ``data[3].paragraphs[0].qas[2].answers[0].answer_start``; duplicate question ids and duplicate
    article titles are errors.

    Example:
        >>> articles = read_squad("../shared/data/squad/squad-dev-v1.1.json.gz")  # doctest: +SKIP
        >>> len(articles), sum(a.question_count for a in articles)  # doctest: +SKIP
        (48, 10570)
    """
    document = read_json(path)
    if not isinstance(document, dict):
        raise DataError(path, f"expected a SQuAD JSON object, got {type(document).__name__}")
    article_nodes = _take(document, "data", path, "", kind=list)
    articles: list[SquadArticle] = []
    titles: set[str] = set()
    question_ids: set[str] = set()
    for i, article_node in enumerate(article_nodes):
        where = f"data[{i}]"
        title = _take(article_node, "title", path, where)
        if title in titles:
            raise DataError(path, f"duplicate article title {title!r}", field=f"{where}.title")
        titles.add(title)
        paragraphs = []
        for j, paragraph_node in enumerate(_take(article_node, "paragraphs", path, where, kind=list)):
            at = f"{where}.paragraphs[{j}]"
            context = _take(paragraph_node, "context", path, at)
            spans = sentence_spans(context)
            questions = []
            question_nodes = _take(paragraph_node, "qas", path, at, kind=list, allow_empty=True)
            for k, question_node in enumerate(question_nodes):
                question = _read_question(question_node, context, spans, path, f"{at}.qas[{k}]")
                if question.id in question_ids:
                    raise DataError(path, f"duplicate question id {question.id!r}", field=f"{at}.qas[{k}].id")
                question_ids.add(question.id)
                questions.append(question)
            paragraphs.append(SquadParagraph(f"{title}#{j}", context, [context[s:e] for s, e in spans], spans,
                                             questions))
        articles.append(SquadArticle(title, paragraphs))
    return articles


@dataclass(frozen=True, slots=True)
class ReqaCandidate(Document):
    """A ReQA candidate: the sentence (``text``) and the paragraph it comes from (``context``).

    ReQA encodes a candidate from its sentence *with* its paragraph as context (Ahmad et al., 2019,
    sec. 3; the response encoder of their evaluation takes ``response`` and ``response_context``), and
    Chang et al. (ICLR 2020, sec. 4.1) feed the document tower the pair ``(s, p)``. So the paragraph is
    a field of its own, not squeezed into ``text``; ``title`` stays empty because neither paper gives
    the model the article title. Encode ``(text, context)`` as a sentence pair.
    """

    context: str = ""


def reqa_candidates(articles: Iterable[SquadArticle]) -> tuple[list[ReqaCandidate], dict[str, str], Qrels]:
    """ReQA retrieval data from SQuAD: ``(candidates, questions, qrels)``.

    One candidate per (sentence, paragraph), id ``"{paragraph id}:{sentence index}"``; a (sentence,
    paragraph) pair seen before (a paragraph repeating a sentence) is not indexed twice, as in ReQA's
    evaluation. Relevant to a question, as ReQA scores it: every candidate whose sentence is the
    sentence of one of its answers (SQuAD dev has up to five annotators' answers, which can sit in
    different sentences), including the same sentence text indexed from another paragraph. The
    candidates cover only the articles given: pass the test articles to evaluate a split.
    """
    candidates: list[ReqaCandidate] = []
    candidates_of_sentence: dict[str, list[str]] = {}
    indexed: set[tuple[str, str]] = set()
    questions: dict[str, str] = {}
    answer_texts: dict[str, list[str]] = {}
    for article in articles:
        for paragraph in article.paragraphs:
            for index, sentence in enumerate(paragraph.sentences):
                if (sentence, paragraph.context) in indexed:
                    continue
                indexed.add((sentence, paragraph.context))
                candidate = ReqaCandidate(f"{paragraph.id}:{index}", sentence, context=paragraph.context)
                candidates.append(candidate)
                candidates_of_sentence.setdefault(sentence, []).append(candidate.id)
            for question in paragraph.questions:
                questions[question.id] = question.question
                answer_texts[question.id] = [paragraph.sentences[s] for s in question.answer_sentences]
    qrels: Qrels = {
        qid: {cid: 1 for sentence in sentences for cid in candidates_of_sentence[sentence]}
        for qid, sentences in answer_texts.items()
    }
    return candidates, questions, qrels


def split_squad_by_article(articles: list[SquadArticle], test_fraction: float,
                           seed: int = 0) -> tuple[list[SquadArticle], list[SquadArticle]]:
    """Split articles into ``(train, test)`` with no article on both sides.

    Chang et al. (ICLR 2020, sec. 4.1) fine-tune on 1% / 5% / 80% of the data and test on the rest
    (10% of the training side held out for validation: split the train side again), so that test
    questions are never seen in training; splitting by article also keeps their paragraphs apart. Only
    SQuAD dev is available here, so it is dev that is split. Articles are sorted by title and shuffled
    with ``seed``; the train side is the shortest prefix of that order whose question count is closest to
    ``(1 - test_fraction)`` of all questions, with at least one article on each side. Article granularity
    makes the realised fraction approximate (48 dev articles: 1% is one article); one seed gives nested
    train sides across fractions. Each side keeps the input order.
    """
    if not 0 < test_fraction < 1:
        raise ValueError(f"split_squad_by_article: test_fraction must be in (0, 1), got {test_fraction}")
    if len(articles) < 2:
        raise ValueError("split_squad_by_article: need at least two articles")
    order = sorted(range(len(articles)), key=lambda i: articles[i].title)
    random.Random(seed).shuffle(order)
    target = (1 - test_fraction) * sum(article.question_count for article in articles)
    best_size, best_gap, taken = 1, float("inf"), 0
    for size in range(1, len(order)):
        taken += articles[order[size - 1]].question_count
        if abs(taken - target) < best_gap:
            best_size, best_gap = size, abs(taken - target)
    train = set(order[:best_size])
    return ([article for i, article in enumerate(articles) if i in train],
            [article for i, article in enumerate(articles) if i not in train])


# ------------------------------------------------------------------------------------------------ NQ-open


@dataclass(frozen=True, slots=True)
class QAExample:
    """An open-domain question with its answer strings (answer coverage: DPR's top-k accuracy)."""

    id: str
    question: str
    answers: list[str]


def _answer_list(value: Any, path: PathLike, line: int | None, field: str) -> list[str]:
    if not isinstance(value, list) or not value:
        raise DataError(path, "expected a non-empty list of answer strings", line=line, field=field)
    for k, answer in enumerate(value):
        if not isinstance(answer, str) or not answer.strip():
            raise DataError(path, f"answer {k} is not a non-empty string: {answer!r}", line=line, field=field)
    return value


def read_nq_open(path: PathLike) -> list[QAExample]:
    """Read NQ-open JSONL (``{"question", "answer": [str, ...]}``; Lee et al., 2019) — also DPR's QA
    JSONL, whose list is ``answers``. Ids are an ``id`` field when present, else the line number.

    Example:
        >>> examples = read_nq_open("../shared/data/nq-open/NQ-open.dev.jsonl")  # doctest: +SKIP
        >>> len(examples), examples[0].answers  # doctest: +SKIP
        (3610, ['14 December 1972 UTC', 'December 1972'])
    """
    examples: list[QAExample] = []
    lines_of_ids: dict[str, int] = {}
    for number, record in iter_jsonl(path):
        qid = require(record, "id", path, number) if "id" in record else str(number)
        unique_id(lines_of_ids, qid, path, number)
        question = require(record, "question", path, number)
        answer_field = "answer" if "answer" in record or "answers" not in record else "answers"
        answers = _answer_list(require(record, answer_field, path, number, kind=list), path, number,
                               answer_field)
        examples.append(QAExample(qid, question, answers))
    return examples


# ---------------------------------------------------------------------------------------------------- DPR


@dataclass(frozen=True, slots=True)
class DprExample:
    """One question of a DPR retriever training file (Karpukhin et al., EMNLP 2020).

    ``negatives`` are DPR's ``negative_ctxs`` (random passages), ``hard_negatives`` its
    ``hard_negative_ctxs`` (BM25 top passages without the answer). Questions without a positive are
    kept: DPR drops them when it builds its training set (``JsonQADataset.load_data``), a choice left to
    the caller. ``id`` is the question's index in the file's list (from 0, as in error messages' JSON
    paths: question ``"2"`` is ``[2]``).
    """

    id: str
    question: str
    answers: list[str]
    positives: list[Document]
    negatives: list[Document]
    hard_negatives: list[Document]


# DPR's NQ files name the passage id ``passage_id``, its TriviaQA/SQuAD files ``psg_id`` (DPR's own code
# reads ``ctx["passage_id"] if "passage_id" in ctx else ctx["psg_id"]``).
_PASSAGE_ID_KEYS = ("passage_id", "psg_id")


def _read_contexts(item: dict[str, Any], key: str, path: PathLike, where: str,
                   required: bool) -> list[Document]:
    if key not in item and not required:
        return []
    passages = []
    for j, node in enumerate(_take(item, key, path, where, kind=list, allow_empty=True)):
        at = f"{where}.{key}[{j}]"
        id_key = next((k for k in _PASSAGE_ID_KEYS if isinstance(node, dict) and k in node), None)
        if id_key is None:
            raise DataError(path, "missing (DPR files name it 'passage_id' or 'psg_id')",
                            field=f"{at}.passage_id")
        passage_id = _take(node, id_key, path, at, kind=(str, int))
        passages.append(Document(str(passage_id), _take(node, "text", path, at),
                                 _take(node, "title", path, at, allow_empty=True)))
    return passages


def read_dpr(path: PathLike) -> list[DprExample]:
    """Read a DPR retriever JSON file (``biencoder-nq-train.json``: a list of ``{"question", "answers",
    "positive_ctxs", "negative_ctxs", "hard_negative_ctxs"}``; ``.gz`` transparently).

    Each context is ``{"title", "text", "passage_id" or "psg_id", "score", "title_score"}``; the scores
    (BM25's) are not kept. Missing negative lists are empty. Bad input raises a ``DataError`` whose field
    is the JSON path, ``[item index, from 0].key[...]``, e.g. ``[2].positive_ctxs[0].passage_id``.
    """
    items = read_json(path)
    if not isinstance(items, list):
        raise DataError(path, f"expected a JSON list of questions, got {type(items).__name__}")
    examples = []
    for i, item in enumerate(items):
        where = f"[{i}]"
        question = _take(item, "question", path, where)
        answers = _answer_list(_take(item, "answers", path, where, kind=list, allow_empty=True), path, None,
                               f"{where}.answers")
        examples.append(DprExample(str(i), question, answers,
                                   _read_contexts(item, "positive_ctxs", path, where, required=True),
                                   _read_contexts(item, "negative_ctxs", path, where, required=False),
                                   _read_contexts(item, "hard_negative_ctxs", path, where, required=False)))
    return examples


def read_dpr_passages(path: PathLike) -> Iterator[Document]:
    """Stream DPR's Wikipedia passages (``psgs_w100.tsv``: ``id<TAB>text<TAB>title`` after a header line).

    Fields are CSV-quoted as DPR writes and reads them (``csv.reader(delimiter="\\t")``): the text of a
    passage is usually wrapped in double quotes, with inner quotes doubled. The header names the column
    order; a file without one is read as ``id, text, title``.
    """
    columns = {"id": 0, "text": 1, "title": 2}
    first_row = True
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        if '"' in line:
            try:
                row = next(csv.reader([line], delimiter="\t", strict=True))
            except csv.Error as error:
                raise DataError(path, f"malformed TSV ({error})", line=number) from None
        else:  # no quoting to undo: a plain split is the same parse, and much faster over 21M passages
            row = line.split("\t")
        if len(row) != 3:
            raise DataError(path, f"expected 3 tab-separated columns (id, text, title), found {len(row)}",
                            line=number)
        if first_row and row[0] == "id":
            if sorted(row) != ["id", "text", "title"]:
                raise DataError(path, f"expected the header id, text, title, found {row}", line=number)
            columns = {name: row.index(name) for name in columns}
            first_row = False
            continue
        first_row = False
        passage_id, text, title = (row[columns[name]].strip() for name in ("id", "text", "title"))
        if not passage_id:
            raise DataError(path, "empty", line=number, field="id")
        if not text:
            raise DataError(path, "empty", line=number, field="text")
        yield Document(passage_id, text, title)


__all__ = [
    "DprExample",
    "QAExample",
    "ReqaCandidate",
    "SquadArticle",
    "SquadParagraph",
    "SquadQuestion",
    "read_dpr",
    "read_dpr_passages",
    "read_nq_open",
    "read_squad",
    "reqa_candidates",
    "split_squad_by_article",
]
