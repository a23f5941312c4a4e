"""WordPiece training on real articles, loaded back as a BERT fast tokenizer."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from seedr.data.articles import read_articles
from seedr.data.tokenizer import SPECIAL_TOKENS, train_wordpiece
from seedr.modeling.encoder import load_tokenizer


@pytest.fixture(scope="module")
def tokenizer_dir(wiki_shard: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out_dir = tmp_path_factory.mktemp("tokenizer") / "tokenizer"
    articles = itertools.islice(read_articles(wiki_shard), 200)
    train_wordpiece((p for a in articles for p in a.paragraphs), out_dir, vocab_size=2_000, model_max_length=256)
    return out_dir


def test_trained_tokenizer_loads_as_bert(tokenizer_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    assert type(tokenizer).__name__ == "BertTokenizer" and tokenizer.is_fast
    assert len(tokenizer) == 2_000 and tokenizer.model_max_length == 256
    assert tokenizer.convert_ids_to_tokens(list(range(5))) == SPECIAL_TOKENS
    assert (tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.mask_token_id) == (0, 2, 3, 4)
    encoded = tokenizer("Anarchism is a political philosophy.", "Autism is a neurodevelopmental disorder.")
    tokens = tokenizer.convert_ids_to_tokens(encoded["input_ids"])
    assert tokens[0] == "[CLS]" and tokens.count("[SEP]") == 2 and tokens[-1] == "[SEP]"
    assert "anarchism" in tokenizer.decode(encoded["input_ids"], skip_special_tokens=True)  # lower-cased
    assert any(token.startswith("##") for token in tokens)  # WordPiece continuations
    assert set(encoded["token_type_ids"]) == {0, 1}
    long = tokenizer(" ".join(["philosophy"] * 400), truncation=True)["input_ids"]
    assert len(long) == 256


def test_load_tokenizer_reads_the_folder_and_never_a_hub(tokenizer_dir: Path) -> None:
    tokenizer = load_tokenizer(tokenizer_dir)
    assert tokenizer("Anarchism")["input_ids"][0] == tokenizer.cls_token_id
    with pytest.raises(FileNotFoundError, match="seedr never downloads models"):
        load_tokenizer("bert-base-uncased")


def test_cased_vocabulary_keeps_case(wiki_shard: Path, tmp_path: Path) -> None:
    articles = list(itertools.islice(read_articles(wiki_shard), 30))
    tokenizer = train_wordpiece((a.lead[0] for a in articles if a.lead), tmp_path / "cased", vocab_size=600,
                                lowercase=False)
    assert "Anarchism" in tokenizer.decode(tokenizer("Anarchism")["input_ids"], skip_special_tokens=True)
