"""PROP (Ma et al., WSDM 2021, "PROP: Pre-training with Representative Words Prediction for Ad-hoc
Retrieval", arXiv:2010.10137) as CPDAE's comparison ran it: "we pre-train it with a bi-encoder for a fair
comparison" (Ma et al., CIKM 2022, §4.1.2). Representative words prediction (ROP) samples pairs of word
sets from a document's language model, prefers the set of higher query likelihood, and trains the model
to score the preferred set higher; MLM is added.

    P(w | θ_D) = (tf(w, D) + μ · P(w | C)) / (|D| + μ)            Dirichlet-smoothed document LM
    |S| ~ Poisson(λ),  S = {w_1 … w_|S|},  w_i ~ P(· | θ_D)        a word set (both sets of a pair as long)
    QL(S) = Σ_{w ∈ S} log P(w | θ_D)                               query likelihood; S+ the higher of the two
    L_ROP = max(0, 1 − P(S+ | D) + P(S− | D))                      pairwise hinge
    L = L_ROP + L_MLM

Bi-encoder. PROP's own model is a cross-encoder (BERT over ``[CLS] S [SEP] D [SEP]``, a linear layer on
[CLS]); here S and D are encoded apart, by the same encoder, and scored by the dot product of their [CLS]
vectors, the bi-encoder that CPDAE fine-tunes (§4.1.3). The document's pass is on its BERT-masked text,
which gives both L_MLM and its [CLS], as the released code scores the masked instance it trains MLM on
(one forward pass, ``PROP.forward``); the word sets are encoded unmasked as ``[CLS] w_1 … w_k [SEP]``.
The hinge is per document (its own two sets), not over the batch, so nothing is gathered across
processes.

From the released code (github.com/Albert-Ma/PROP), where the paper leaves details to it:

- P(S | D) is the softmax over the pair's two scores, then ``MarginRankingLoss(margin=1.0)`` averaged
  over pairs (``pytorch_pretrain_bert/modeling.py``, ``PROP.forward``), added unweighted to MLM's mean;
- μ is the corpus's average document length (``mu = average_doc_word_num``), set lengths are drawn from
  Poisson(λ) again until positive, λ = 3 (``--possion_lambda 3``, "the average of query length"), words
  are drawn with replacement, and a set's score is the sum of its words' log P(w | θ_D)
  (``prop/multiprocessing_generate_word_sets.py``);
- frequent words are subsampled as word2vec does: a drawn word is kept with probability
  ``sqrt(t / f) + t / f``, f its corpus frequency, t = 1e-4 (``words_kept_prob``). Drawing and rejecting
  is drawing from P(w | θ_D) · min(1, keep(w)) renormalised, which seedr does in one draw.

Where seedr differs, and why: the released code works on NLTK words without stopwords and draws the
words absent from the document from a sample of 500 corpus words "for computational efficiency"; seedr's
examples are WordPiece ids (its token shards), so its words are the tokenizer's non-special tokens, its
collection model P(w | C) their frequency over the corpus's examples (``complete_options``, the
collection statistics of the paper's smoothing; the code uses normalised document frequencies), and it
draws from the whole vocabulary exactly; subsampling takes the place of the stopword list. A document is
a training example (a ``doc_sentences`` block of one article), and each yields ``pairs_per_text`` pairs
(the released data makes one training instance per pair, 4 per document).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from seedr.engine.run_state import process_state
from seedr.modeling.bow_decoder import at_least_float32
from seedr.modeling.encoder import pool
from seedr.modeling.folders import EncoderShape
from seedr.objectives.base import ObjectiveOutput, PretrainingCorpus, expected_longest
from seedr.objectives.masking import pad_token_ids
from seedr.objectives.mlm.objective import MaskedLanguageModel
from seedr.objectives.prop.options import AUTO_STATISTICS, PropConfig
from seedr.objectives.vocabulary_tables import load_vocabulary_table, save_vocabulary_table

# ----- collection statistics ----------------------------------------------------------------------


def count_tokens(token_id_lists: Sequence[np.ndarray] | Sequence[Sequence[int]], vocab_size: int,
                 chunk: int = 1 << 22) -> tuple[np.ndarray, int]:
    """Every id's count over the texts' content (without their first and last token, [CLS] and [SEP]),
    and the number of texts; counted a chunk of tokens at a time."""
    counts = np.zeros(vocab_size, dtype=np.int64)
    pending: list[np.ndarray] = []
    size = texts = 0
    for token_ids in token_id_lists:
        pending.append(np.asarray(token_ids[1:-1], dtype=np.int64))
        size += len(pending[-1])
        texts += 1
        if size >= chunk:
            counts += np.bincount(np.concatenate(pending), minlength=vocab_size)
            pending, size = [], 0
    if pending:
        counts += np.bincount(np.concatenate(pending), minlength=vocab_size)
    if texts == 0:
        raise ValueError("count_tokens needs at least one text")
    return counts, texts


def save_counts(path: str | os.PathLike, counts: np.ndarray) -> None:
    """Write a count table as ``.npy`` (atomically)."""
    save_vocabulary_table(path, counts, np.int64)


def load_counts(path: str | os.PathLike, vocab_size: int) -> torch.Tensor:
    """Read a count table saved by ``save_counts``: ``vocab_size`` finite values ≥ 0, not all 0."""
    return load_vocabulary_table(path, vocab_size, field="collection_statistics", what="counts", dtype=np.float64,
                                 nonzero=True)


# ----- the objective -------------------------------------------------------------------------------


def longest_set(poisson_lambda: float, draws: int) -> float:
    """E[max] of ``draws`` independent zero-truncated Poisson(λ) set lengths (``expected_longest``), the
    distribution cut where its tail is below 1e-12."""
    probabilities, probability, k = [0.0], math.exp(-poisson_lambda), 0
    while k < poisson_lambda or probability > 1e-12:
        k += 1
        probability *= poisson_lambda / k  # P(Poisson = k)
        probabilities.append(probability / -math.expm1(-poisson_lambda))
    return expected_longest(probabilities, draws)


class Prop(MaskedLanguageModel):
    """MLM on the masked text + ROP: a pairwise hinge between bi-encoder scores of two word sets drawn
    from the text's language model.

    Parts: ``mlm`` and ``rop`` (times ``rop_weight``); metric ``rop_accuracy`` (the preferred set scored
    higher).

    Example:
        >>> objective = OBJECTIVES.get("prop")(encoder, tokenizer, PropConfig(collection_statistics=path,
        ...                                    dirichlet_mu=120.0))
        >>> word_sets = objective.draw_word_sets(token_id_lists, torch.Generator().manual_seed(0))
        >>> objective(**objective.collate_word_sets(token_id_lists, word_sets)).parts["rop"]
    """

    name = "prop"
    config_class = PropConfig

    @classmethod
    def multiply_adds_per_example(cls, options: PropConfig, max_seq_length: int, shape: EncoderShape,
                                  *, batch_size: int) -> float:
        """MLM's for the text, and each pair's two word sets through the encoder, padded to the longest of
        the batch's ``2·pairs_per_text·batch_size`` sets: the expected largest of that many zero-truncated
        Poisson lengths (``longest_set``), with [CLS] and [SEP]."""
        sets = 2 * options.pairs_per_text * shape.sequence_multiply_adds(
            longest_set(options.poisson_lambda, 2 * options.pairs_per_text * batch_size) + 2)
        return super().multiply_adds_per_example(options, max_seq_length, shape, batch_size=batch_size) + sets

    @classmethod
    def complete_options(cls, options: PropConfig, corpus: PretrainingCorpus) -> None:
        """``collection_statistics: auto`` becomes the token counts of the pre-training corpus,
        ``token_counts.npy`` beside its token shards (made once, shared by every run on them), and a
        ``dirichlet_mu`` left unset the average content length of its texts (the released code's μ)."""
        if options.collection_statistics != AUTO_STATISTICS:
            return
        shards = corpus.token_shards()
        path = Path(shards.directory) / "token_counts.npy"
        with process_state().main_process_first():
            if not path.exists():
                save_counts(path, count_tokens(shards.shards, corpus.vocab_size)[0])
        options.collection_statistics = str(path)
        if options.dirichlet_mu is None:
            options.dirichlet_mu = float(np.load(path).sum()) / len(shards.shards)

    def __init__(self, encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                 config: PropConfig | None = None) -> None:
        super().__init__(encoder, tokenizer, config)
        if self.config.collection_statistics in (None, AUTO_STATISTICS) or self.config.dirichlet_mu is None:
            raise ValueError("PROP needs its corpus's statistics: collection_statistics (a .npy of counts, "
                             "seedr.objectives.prop.objective.save_counts) and dirichlet_mu, or collection_statistics: "
                             "auto under seedr pretrain, which fills in both")
        counts = load_counts(self.config.collection_statistics, encoder.config.vocab_size)
        counts[self.tokenizer.all_special_ids] = 0  # never a word of a set
        collection = counts / counts.sum()  # (V,): P(w | C)
        if self.config.subsample_threshold > 0:
            ratio = self.config.subsample_threshold / collection.clamp_min(torch.finfo(torch.float64).tiny)
            keep = (ratio.sqrt() + ratio).clamp(max=1.0)  # (V,): word2vec's probability of keeping a drawn word
        else:
            keep = torch.ones_like(collection)
        # Plain CPU tensors, not buffers: only collate (on the CPU) reads them, and they come from
        # collection_statistics (recorded in the run's config) on every start.
        self.collection, self.keep = collection, keep  # (V,), (V,)
        self.special_ids = torch.tensor(sorted(set(self.tokenizer.all_special_ids)))

    # ----- word sets -----------------------------------------------------------------------------

    def document_log_probabilities(self, token_ids: Sequence[int]) -> torch.Tensor:
        """log P(w | θ_D) (V,) of the Dirichlet-smoothed language model of the text ``[CLS] … [SEP]``
        (its content: specials are never words)."""
        content = torch.as_tensor(list(token_ids), dtype=torch.long)
        content = content[~torch.isin(content, self.special_ids)]
        term_frequency = torch.bincount(content, minlength=len(self.collection)).to(torch.float64)  # (V,)
        mu = self.config.dirichlet_mu
        return ((term_frequency + mu * self.collection) / (len(content) + mu)).log()  # (V,)

    def draw_word_sets(self, examples: Sequence[Sequence[int]], generator: torch.Generator | None = None,
                       ) -> list[list[tuple[list[int], list[int]]]]:
        """``pairs_per_text`` pairs ``(preferred, other)`` of word sets per text, the preferred one of
        higher query likelihood (the first drawn on a tie); all randomness is here (torch's RNG, or
        ``generator``)."""
        drawn = []
        for example in examples:
            log_p = self.document_log_probabilities(example)  # (V,)
            weights = log_p.exp() * self.keep  # (V,): drawing then subsampling, in one draw
            pairs = []
            for _ in range(self.config.pairs_per_text):
                length = 0
                while length == 0:
                    length = int(torch.poisson(torch.tensor([self.config.poisson_lambda]), generator=generator))
                sets = [torch.multinomial(weights, length, replacement=True, generator=generator)
                        for _ in range(2)]
                first, second = (log_p[words].sum() for words in sets)
                preferred, other = sets if first >= second else sets[::-1]
                pairs.append((preferred.tolist(), other.tolist()))
            drawn.append(pairs)
        return drawn

    # ----- batches -------------------------------------------------------------------------------

    def collate_word_sets(self, examples: Sequence[Sequence[int]],
                          word_sets: Sequence[Sequence[tuple[Sequence[int], Sequence[int]]]]
                          ) -> dict[str, torch.Tensor]:
        """The masked texts (B, T) and their word sets as ``[CLS] w … [SEP]`` (2·B·P, S), ordered text by
        text, pair by pair, preferred then other."""
        input_ids, attention_mask = self.pad(examples)
        masked_input_ids, labels = self.mask(input_ids)
        cls, sep = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        sets = [[cls, *words, sep] for pairs in word_sets for pair in pairs for words in pair]
        set_input_ids, set_attention_mask = pad_token_ids(sets, self.tokenizer.pad_token_id)
        return {"input_ids": masked_input_ids, "attention_mask": attention_mask, "labels": labels,
                "set_input_ids": set_input_ids, "set_attention_mask": set_attention_mask}

    def collate(self, examples: Sequence[Sequence[int]]) -> dict[str, torch.Tensor]:
        return self.collate_word_sets(examples, self.draw_word_sets(examples))

    # ----- losses --------------------------------------------------------------------------------

    def rop_loss(self, document_vectors: torch.Tensor, set_vectors: torch.Tensor,
                 ) -> tuple[torch.Tensor, torch.Tensor]:
        """L_ROP averaged over the pairs, and the share of pairs whose preferred set scores higher, from the
        texts' vectors (B, H) and their sets' (2·B·P, H) in ``collate_word_sets``' order."""
        pairs = set_vectors.shape[0] // 2
        documents = document_vectors.repeat_interleave(2 * self.config.pairs_per_text, dim=0)  # (2·B·P, H)
        scores = (set_vectors * documents).sum(-1).view(pairs, 2)  # (B·P, 2): preferred, other
        probabilities = scores.softmax(-1)  # P(S | D) over the pair
        loss = F.relu(self.config.margin - probabilities[:, 0] + probabilities[:, 1]).mean()
        return loss, (scores[:, 0] > scores[:, 1]).float().mean()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor,
                set_input_ids: torch.Tensor, set_attention_mask: torch.Tensor) -> ObjectiveOutput:
        """``input_ids``: the masked texts (B, T); ``set_input_ids``: their word sets (2·B·P, S)."""
        sequence_output = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mlm = self.mlm_loss(sequence_output, labels)
        set_output = self.encoder(input_ids=set_input_ids, attention_mask=set_attention_mask).last_hidden_state
        rop, accuracy = self.rop_loss(at_least_float32(pool(sequence_output, attention_mask, "cls")),
                                      at_least_float32(pool(set_output, set_attention_mask, "cls")))
        rop = self.config.rop_weight * rop
        return ObjectiveOutput(loss=mlm + rop, parts={"mlm": mlm, "rop": rop}, metrics={"rop_accuracy": accuracy})
