"""DPR's answer match (Karpukhin et al. 2020): does a passage contain an answer string?

"Contains" is DPR's ``has_answer(..., match_type="string")`` (``dpr/data/qa_validation.py``): passage
and answer are Unicode-NFD normalised, split by DrQA's ``SimpleTokenizer`` (``dpr/utils/tokenizers.py``),
lower-cased, and the answer's tokens must appear as a contiguous token sequence of the passage. So
case never matters, and precomposed "é" matches "e" + combining accent (both are NFD "e\u0301"), but
accents do: "beyonce" does not match "Beyoncé" (exactly as in DPR). Words match whole: "cat" is not
in "concatenate". Each punctuation mark is a token: "U.S." is ``u . s .``, matching "U.S." but not "US".

Both the open-QA data builder (``seedr.data.open_qa``) and answer coverage
(``seedr.evaluation.qa_coverage``) match with it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from functools import lru_cache

import regex

# DrQA's SimpleTokenizer: runs of letters, digits and combining marks are one token; any other
# character that is not a separator (\p{Z}) or control/other (\p{C}) is a token on its own.
_ALPHA_NUM = r"[\p{L}\p{N}\p{M}]+"
_NON_WS = r"[^\p{Z}\p{C}]"
_TOKEN = regex.compile(f"({_ALPHA_NUM})|({_NON_WS})",
                       flags=regex.IGNORECASE | regex.UNICODE | regex.MULTILINE)


def dpr_tokens(text: str) -> list[str]:
    """DPR's normalised, uncased tokens of ``text`` (NFD, then SimpleTokenizer, then lower-case)."""
    return [match.group().lower() for match in _TOKEN.finditer(unicodedata.normalize("NFD", text))]


@lru_cache(maxsize=65_536)
def answer_tokens(answer: str) -> tuple[str, ...]:
    """An answer's DPR tokens, cached: the same answers are matched against every passage."""
    return tuple(dpr_tokens(answer))


def has_answer(answers: Iterable[str], text: str) -> bool:
    """DPR's string match: does ``text`` contain one of ``answers`` as a contiguous token sequence?"""
    tokens = dpr_tokens(text)
    for answer in answers:
        needle = list(answer_tokens(answer))
        width = len(needle)
        if width == 0:
            continue  # DPR would match a token-less answer anywhere; such an answer is an error upstream
        for start in range(len(tokens) - width + 1):
            if tokens[start:start + width] == needle:
                return True
    return False
