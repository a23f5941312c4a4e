"""Training a BERT WordPiece vocabulary on a corpus, for encoders pre-trained from scratch.

SEED-Encoder (Lu et al., EMNLP 2021, sec. 4.1) is pre-trained from scratch "following the setup of
BERT-base" with "32,768 sub-word tokens" (after Ke et al., 2020): ``vocab_size=32768`` gives that size;
the default is BERT's 30,522, the vocabulary CPDAE (CIKM 2022, sec. 4.1.3) inherits by starting from BERT.
The result is an ordinary BERT fast tokenizer folder: ``transformers.AutoTokenizer.from_pretrained``
and ``seedr.modeling.encoder.load_tokenizer`` both load it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from tokenizers.implementations import BertWordPieceTokenizer
from transformers import AutoTokenizer, BertTokenizer, PreTrainedTokenizerFast

from seedr.io import atomic_directory

#: BERT's special tokens, in BERT's id order: [PAD] is 0, the encoder's ``pad_token_id``.
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def train_wordpiece(texts: Iterable[str], out_dir: str | os.PathLike, vocab_size: int = 30522,
                    lowercase: bool = True, min_frequency: int = 2, model_max_length: int = 512,
                    limit_alphabet: int = 1000, show_progress: bool = False) -> PreTrainedTokenizerFast:
    """Train a WordPiece vocabulary with BERT's normalisation and save it as a BERT tokenizer folder.

    BERT's pipeline (Devlin et al., 2019; the ``tokenizers`` BertWordPiece implementation): Unicode
    clean-up, Chinese characters split, accents stripped and text lower-cased when ``lowercase``,
    split on whitespace and punctuation, WordPiece with ``##`` continuations, and sequences framed
    as ``[CLS] … [SEP]`` (``[CLS] A [SEP] B [SEP]`` for pairs). Ids 0–4 are [PAD] [UNK] [CLS] [SEP]
    [MASK].

    Not reproducible bit for bit: the ``tokenizers`` trainer breaks ties between equally frequent
    characters and merges in hash-map order, which changes from process to process
    (huggingface/tokenizers#1794). Two trainings of ``seedr/experiments/from_scratch.yaml``'s 8,000-token
    vocabulary on the same shard differed in 35 tokens; keep the folder to re-use one vocabulary.

    Args:
        texts: training text, streamed (an iterator over a corpus is fine).
        out_dir: the folder to write (replaced atomically if it exists).
        vocab_size: size of the vocabulary, special tokens included (BERT: 30,522).
        min_frequency: a merge must occur at least this often to enter the vocabulary.
        model_max_length: longest sequence the tokenizer will produce when truncating (BERT: 512).
        limit_alphabet: most distinct characters kept as initial tokens (BERT: 1000).

    Returns:
        The tokenizer as ``AutoTokenizer`` loads it from ``out_dir``.
    """
    trainer = BertWordPieceTokenizer(lowercase=lowercase, strip_accents=None if lowercase else False)
    trainer.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=min_frequency,
                                limit_alphabet=limit_alphabet, special_tokens=SPECIAL_TOKENS,
                                show_progress=show_progress)
    vocab = trainer.get_vocab()  # token -> id
    tokenizer = BertTokenizer(vocab=vocab, do_lower_case=lowercase, strip_accents=None if lowercase else False,
                              model_max_length=model_max_length)
    with atomic_directory(out_dir) as folder:
        tokenizer.save_pretrained(str(folder))
    return AutoTokenizer.from_pretrained(str(Path(out_dir)), trust_remote_code=False)


__all__ = ["SPECIAL_TOKENS", "train_wordpiece"]
