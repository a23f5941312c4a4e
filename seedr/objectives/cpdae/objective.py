"""CPDAE (Ma et al., CIKM 2022, "A Contrastive Pre-training Approach to Learn Discriminative
Autoencoder for Dense Retrieval", arXiv:2208.09846): MLM, a bag-of-words reconstruction of the text
from [CLS] by an MLP decoder, and a contrastive loss between the decoded word distributions of two
masked views of each text.

    h = Encoder(x_i) for both BERT-masked views x_i', x_i''                                  (eq. 1)
    z = Decoder(h) ∈ R^|V|,  ẑ_j = sigmoid(z_j)                                              (eq. 2, 3)
    L_REC = −Σ_j [y_j log ẑ_j + (1 − y_j) log(1 − ẑ_j)],  y_j = 1 iff word j occurs in x_i   (eq. 4)
    L_CL = −Σ_i log exp(−JS(z̃_i', z̃_i'')) / Σ_{k≠i} exp(−JS(z̃_i, z̃_k)),  z̃ = ẑ / Σ_j ẑ_j    (eq. 5)
    L = L_REC + L_MLM + λ L_CL,  λ = 0.1                                                     (eq. 6)

Reading of the paper where it leaves details open:

- Both masked views go through the encoder (eq. 1 defines ``x_i = {x_i', x_i''}``), so L_MLM and
  L_REC are computed on all 2m views: L_MLM is BERT's mean over masked tokens, L_REC eq. 4 averaged
  over the 2m views. Targets ``y`` are the token ids of the original (unmasked) text minus special
  tokens.
- Eq. 5 has no temperature: similarities are ``−JS`` (natural log, so ``0 ≤ JS ≤ log 2``). Every
  one of the 2m views serves as an anchor whose positive is its twin and whose negatives are the
  other 2m − 2 views (eq. 5 applied to z_i' and to z_i''); the 2m views are those of the global
  batch, gathered from every process (``global_in_batch``, ``seedr.losses.gather``).
- The two reductions, chosen from measured gradient shares (``docs/results/cpdae_gradient_shares/``:
  ‖∂part/∂θ_encoder‖ of each part, MiniLM, 8 texts × 64 tokens of Wikipedia). Eq. 4 as printed sums
  over the vocabulary, so L_REC starts near |V|·log 2 ≈ 21,000 and takes 98% of the encoder's
  gradient, λ·L_CL about 1e-6 of it: the run would be "w/o CL" in practice. Averaging eq. 5 over the
  2m anchors (NT-Xent) instead of summing over the m texts as printed shrinks CL m-fold more:

  ======================  ==========  ==========  =========
  eq. 4 / eq. 5 (step 1)  share MLM   share REC   share CL
  ======================  ==========  ==========  =========
  sum / mean (old)        0.016       0.984       1.3e-06
  sum / sum               0.016       0.984       1.0e-05
  mean / mean             0.998       2.1e-03     8.2e-05
  mean / sum (default)    0.997       2.1e-03     6.5e-04
  ======================  ==========  ==========  =========

  Defaults: ``reconstruction_reduction="mean"`` (what ``torch.nn.BCEWithLogitsLoss()`` does; the
  authors' code is not public) and ``contrastive_reduction="sum"`` (eq. 5 as printed): REC, MLM and
  CL all pull on the encoder, CL ≈ 500× more than under (sum, mean) at the first step and ≈ 3,000×
  after 7 steps. No reduction makes CL pull hard at initialisation: the new decoder's word
  distributions are all nearly uniform, every −JS ≈ 0 and λ·L_CL = λ·log(2m − 1); its share grows as
  REC trains the decoder (×2.2 over the measured 8 steps). The trainer logs every part's gradient
  norm (``grad_norm/<part>``) to watch it.
- CPDAE′ ("directly contrasts the dense representations h") gives no similarity either: it uses the
  cosine of the [CLS] vectors over a temperature of 0.05, as SimCSE (Gao et al., 2021), the
  contrastive baseline of the paper.
- IDF-REC weights each word's term of eq. 4 by its IDF ``log((N + 1) / (df + 1))`` over the
  training corpus (``compute_idf``); in the paper's ablation (Table 2) it replaces the contrastive
  loss, i.e. ``idf_rec=true contrastive_weight=0``. "w/o CL" is ``contrastive_weight=0``, and then
  each text is masked once (a second view would only repeat MLM and REC).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from torch.nn import functional as F
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from seedr.engine.run_state import process_state
from seedr.losses.gather import gather_rows, row_offset, world_size
from seedr.modeling.bow_decoder import BagOfWordsDecoder, at_least_float32, word_distribution
from seedr.modeling.encoder import pool
from seedr.modeling.folders import EncoderShape
from seedr.objectives.base import ObjectiveOutput, PretrainingCorpus
from seedr.objectives.cpdae.options import CpdaeConfig
from seedr.objectives.mlm.objective import MaskedLanguageModel
from seedr.objectives.vocabulary_tables import load_vocabulary_table, save_vocabulary_table

# ----- Jensen–Shannon divergence ------------------------------------------------------------------


def js_divergence(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """JS(P‖Q) = ½ KL(P‖M) + ½ KL(Q‖M), M = (P + Q) / 2, over the last dimension (natural log).

    Symmetric, 0 iff P = Q, at most log 2. Zero probabilities are safe: ``0 · log 0`` counts as 0
    and gradients stay finite (logs are taken of values clamped to the smallest normal number).
    Broadcasts: ``(n, 1, V)`` against ``(1, m, V)`` gives ``(n, m)``.
    """
    tiny = torch.finfo(p.dtype).tiny
    log_m = ((p + q) / 2).clamp_min(tiny).log()  # (..., V)
    kl_p = (p * (p.clamp_min(tiny).log() - log_m)).sum(-1)
    kl_q = (q * (q.clamp_min(tiny).log() - log_m)).sum(-1)
    return ((kl_p + kl_q) / 2).clamp_min(0.0)  # rounding can dip just below 0


class _PairwiseJensenShannon(torch.autograd.Function):
    """JS(P_i‖Q_k) = ½ Σ_v P_iv log P_iv + ½ Σ_v Q_kv log Q_kv − Σ_v M_ikv log M_ikv, M = (P_i + Q_k) / 2.

    The two entropies are per row; only the mixture's needs a V-long pass per pair, done in blocks of
    ``rows`` anchors. It is taken of the sum S = P_i + Q_k, which saves a pass of halving:
    Σ M log M = ½ Σ S log S − ½ log 2 · (Σ P_i + Σ Q_k), so
    JS = ½ (Σ P log P + log 2 Σ P) + ½ (Σ Q log Q + log 2 Σ Q) − ½ Σ S log S. The gradient is analytic,
    ∂JS/∂P_iv = ½ (log P_iv − log M_ikv) (the same for Q), computed in the same blocks in one more
    pass: autograd through checkpointed blocks redoes the forward pass and differentiates each
    elementwise operation. Logs in the gradient are of values clamped to the smallest normal number,
    so zero probabilities give finite gradients.

    When Q is P (one process's views against themselves, as eq. 5 compares them), JS being symmetric,
    only the pairs k ≥ i are computed, forward and backward: half the V-long passes (32 views of
    30,522 words, BERT-mini's pre-training batch in the benchmark: 0.17 s forward and backward against
    0.35 s for every pair, on the 2-core development CPU).
    """

    @staticmethod
    def forward(ctx, p: torch.Tensor, q: torch.Tensor, rows: int, symmetric: bool) -> torch.Tensor:
        p_term = torch.special.xlogy(p, p).sum(-1) + math.log(2) * p.sum(-1)  # Σ p log p + log 2 Σ p, (n,)
        q_term = torch.special.xlogy(q, q).sum(-1) + math.log(2) * q.sum(-1)  # (m,)
        divergence = p.new_empty(p.shape[0], q.shape[0])
        for start, stop, first in _blocks(p.shape[0], rows, symmetric):
            both = p[start:stop, None, :] + q[None, first:]  # S = 2M, (r, c, V)
            block = (p_term[start:stop, None] + q_term[None, first:]
                     - torch.special.xlogy(both, both).sum(-1)) / 2  # (r, c)
            divergence[start:stop, first:] = block
            if symmetric:
                divergence[first:, start:stop] = block.T
        ctx.save_for_backward(p, q)
        ctx.rows, ctx.symmetric = rows, symmetric
        return divergence

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        p, q = ctx.saved_tensors
        tiny = torch.finfo(p.dtype).tiny
        if ctx.symmetric:  # each computed pair carries both its entries' gradients, counted once (k > i)
            grad = (grad + grad.T).triu(1)
        # ½ (log P + log 2) Σ_k grad_ik − ½ Σ_k grad_ik log S_ik, as log M = log S − log 2
        grad_p = grad.sum(1, keepdim=True) * (p.clamp_min(tiny).log() + math.log(2)) / 2  # (n, V)
        grad_q = grad.sum(0)[:, None] * (q.clamp_min(tiny).log() + math.log(2)) / 2  # (m, V)
        for start, stop, first in _blocks(p.shape[0], ctx.rows, ctx.symmetric):
            block = grad[start:stop, first:]  # (r, c)
            log_both = (p[start:stop, None, :] + q[None, first:]).clamp_min(2 * tiny).log()  # (r, c, V)
            grad_p[start:stop] -= torch.einsum("rk,rkv->rv", block, log_both) / 2
            grad_q[first:] -= torch.einsum("rk,rkv->kv", block, log_both) / 2
        if ctx.symmetric:
            return grad_p + grad_q, None, None, None
        return grad_p, grad_q, None, None


def _blocks(count: int, rows: int, symmetric: bool) -> Iterator[tuple[int, int, int]]:
    """``(start, stop, first)``: anchor rows ``start:stop`` against candidates ``first:`` (all of them, or
    for a symmetric matrix those from the block's first row on: the upper triangle and the diagonal
    block)."""
    for start in range(0, count, rows):
        yield start, min(start + rows, count), start if symmetric else 0


def pairwise_js_divergence(p: torch.Tensor, q: torch.Tensor, block_elements: int = 2**18) -> torch.Tensor:
    """``(n, V)`` and ``(m, V)`` distributions → ``(n, m)`` JS divergences (natural log, as ``js_divergence``).

    JS does not factor into matrix products, so each pair needs a V-long pass; rows are processed in
    blocks of about ``block_elements`` values (at least one anchor row), forward and backward
    (``_PairwiseJensenShannon``), so memory stays O(block) instead of O(n · m · V). The blocks are
    small on purpose: temporaries of a few MiB stay in cache and are reused by the allocator, while
    blocks of 2**24 values (64 MiB) were mapped and page-faulted afresh at every step (most of the
    process's CPU time went to the kernel); for 64 texts, 8,000 words, forward and backward took
    0.44 s with those blocks and 0.14 s with these, on the 2-core development CPU. ``q is p`` (the same
    tensor) computes each pair once.
    """
    rows = max(1, block_elements // max(1, q.shape[0] * q.shape[1]))
    return _PairwiseJensenShannon.apply(p, q, rows, q is p).clamp_min(0.0)  # rounding can dip just below 0


def twin_contrastive_loss(similarity: torch.Tensor, offset: int = 0,
                          reduction: Literal["sum", "mean"] = "mean") -> torch.Tensor:
    """Eq. 5 for 2m anchor views ordered ``[x_1' … x_m', x_1'' … x_m'']``: each view's positive is its
    twin, every other view is a negative, a view is never compared with itself.

    Args:
        similarity: (2m, C) similarities of the anchors to the C candidate views: the anchors
            themselves (C = 2m), or the views of every process gathered (C = W·2m, this process's
            block starting at column ``offset``).
        reduction: ``"mean"`` over the 2m anchors (NT-Xent), or ``"sum"``: eq. 5's sum over the m
            texts, each text's term the mean of its two views as anchors (the sum over anchors / 2).
    """
    count = similarity.shape[0]
    rows = torch.arange(count, device=similarity.device)
    logits = similarity.clone()
    logits[rows, offset + rows] = float("-inf")  # (2m, C)
    twins = offset + (rows + count // 2) % count  # (2m,)
    loss = F.cross_entropy(logits, twins, reduction=reduction)
    return loss / 2 if reduction == "sum" else loss


# ----- IDF for IDF-REC ----------------------------------------------------------------------------


def compute_idf(token_id_lists: Iterable[Sequence[int]], vocab_size: int) -> np.ndarray:
    """IDF of every vocabulary id over texts given as token-id lists: ``log((N + 1) / (df + 1))``.

    Smoothed so that ids never seen get the largest weight, log(N + 1), and ids in every text get 0.
    """
    document_frequency = np.zeros(vocab_size, dtype=np.int64)
    texts = 0
    for token_ids in token_id_lists:
        document_frequency[np.unique(np.asarray(token_ids, dtype=np.int64))] += 1
        texts += 1
    if texts == 0:
        raise ValueError("compute_idf needs at least one text")
    return np.log((texts + 1) / (document_frequency + 1)).astype(np.float32)


def save_idf(path: str | os.PathLike, idf: np.ndarray) -> None:
    """Write an IDF table as ``.npy`` (atomically)."""
    save_vocabulary_table(path, idf, np.float32)


def load_idf(path: str | os.PathLike, vocab_size: int) -> torch.Tensor:
    """Read an IDF table saved by ``save_idf``; it must hold ``vocab_size`` finite values ≥ 0."""
    return load_vocabulary_table(path, vocab_size, field="idf_path", what="IDF values", dtype=np.float32)


#: ``objective.idf_path: auto`` asks for the IDF table of the run's own corpus (CPDAE's IDF-REC).
AUTO_IDF = "auto"


# ----- the objective -------------------------------------------------------------------------------


class Cpdae(MaskedLanguageModel):
    """CPDAE: MLM + bag-of-words reconstruction from [CLS] + contrast of two masked views (eq. 6).

    Parts (each as weighted in the loss): ``mlm``, ``bow_bce`` (L_REC) and, when λ > 0,
    ``js_contrastive`` (λ·L_CL on word distributions) or ``cls_contrastive`` (CPDAE′).

    Example:
        >>> objective = OBJECTIVES.get("cpdae")(encoder, tokenizer, CpdaeConfig())
        >>> output = objective(**objective.collate(token_id_lists))
        >>> output.parts["js_contrastive"]
    """

    name = "cpdae"
    config_class = CpdaeConfig
    new_parts = ("bag-of-words decoder",)
    diagnostics = frozenset({"masked_lm", "decoded_words"})

    @classmethod
    def multiply_adds_per_example(cls, options: CpdaeConfig, max_seq_length: int, shape: EncoderShape,
                                  *, batch_size: int) -> float:
        """MLM's for each masked view (eq. 1: two with the contrastive term, one without), and the MLP
        decoder from each view's [CLS] to the vocabulary (eq. 2: a dense layer, then V·H)."""
        per_view = (super().multiply_adds_per_example(options, max_seq_length, shape, batch_size=batch_size)
                    + shape.hidden ** 2 + shape.prediction_multiply_adds)
        return options.views * per_view

    @classmethod
    def complete_options(cls, options: CpdaeConfig, corpus: PretrainingCorpus) -> None:
        """``idf_path: auto`` (``AUTO_IDF``) becomes the IDF table of the pre-training corpus, ``idf.npy``
        in its token shard folder (made once, shared by every run on those shards):
        ``log((N + 1) / (df + 1))`` over the N training examples (``compute_idf``). Examples, not source
        documents, are the texts: they are what eq. 4 reconstructs, so a word's weight reflects how
        often it is a reconstruction target."""
        if options.idf_path != AUTO_IDF:
            return
        shards = corpus.token_shards()
        path = Path(shards.directory) / "idf.npy"
        with process_state().main_process_first():
            if not path.exists():
                save_idf(path, compute_idf(shards.shards, corpus.vocab_size))
        options.idf_path = str(path)

    def __init__(self, encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                 config: CpdaeConfig | None = None) -> None:
        super().__init__(encoder, tokenizer, config)
        self.bow_decoder = BagOfWordsDecoder(encoder.config)
        idf = load_idf(self.config.idf_path, encoder.config.vocab_size) if self.config.idf_rec else None
        # Not persistent: the table comes from idf_path (recorded in the run's config) on every start.
        self.register_buffer("idf", idf, persistent=False)

    def word_targets(self, input_ids: torch.Tensor) -> torch.Tensor:
        """y of eq. 4: ``(B, V)`` bool, True for every id in the (clean, padded) text but specials."""
        targets = torch.zeros(input_ids.shape[0], self.encoder.config.vocab_size, dtype=torch.bool)
        targets.scatter_(1, input_ids, True)  # (B, V)
        targets[:, self.tokenizer.all_special_ids] = False  # [CLS], [SEP], [PAD], [MASK], [UNK]
        return targets

    def collate(self, examples: Sequence[Sequence[int]]) -> dict[str, torch.Tensor]:
        input_ids, attention_mask = self.pad(examples)  # (m, T)
        views = [self.mask(input_ids) for _ in range(self.config.views)]
        return {"input_ids": torch.cat([masked for masked, _ in views]),  # (views·m, T)
                "attention_mask": attention_mask.repeat(self.config.views, 1),
                "labels": torch.cat([labels for _, labels in views]),
                "word_targets": self.word_targets(input_ids)}  # (m, V)

    def reconstruction_loss(self, word_logits: torch.Tensor, word_targets: torch.Tensor) -> torch.Tensor:
        """Eq. 4 (IDF-weighted for IDF-REC): BCE summed (or averaged) over the vocabulary, averaged
        over texts."""
        terms = F.binary_cross_entropy_with_logits(word_logits.float(), word_targets.float(), reduction="none")
        if self.idf is not None:
            terms = terms * self.idf  # (N, V)
        per_text = terms.sum(-1) if self.config.reconstruction_reduction == "sum" else terms.mean(-1)  # (N,)
        return per_text.mean()

    def contrastive_loss(self, cls_vectors: torch.Tensor, word_logits: torch.Tensor) -> torch.Tensor:
        """Eq. 5 on word distributions (−JS) or, for CPDAE′, on [CLS] vectors (cosine).

        This process's 2m views are the anchors; under ``global_in_batch`` the candidates are the views
        of every process (W·2m), gathered with gradients. The ``"mean"`` reduction averages over this
        process's anchors, which the DDP all-reduce turns into the global mean; the ``"sum"`` reduction
        is multiplied by W so that the averaged gradient is that of the sum over the global batch
        (``seedr.losses.gather`` derives both)."""
        if self.config.contrast == "words":
            anchors = word_distribution(word_logits)  # (2m, V)
        else:
            anchors = F.normalize(at_least_float32(cls_vectors), dim=-1)  # (2m, H)
        candidates, offset, processes = anchors, 0, 1
        if self.config.global_in_batch:
            candidates, offset, processes = gather_rows(anchors), row_offset(len(anchors)), world_size()
        if self.config.contrast == "words":
            similarity = -pairwise_js_divergence(anchors, candidates)  # (2m, W·2m)
        else:
            similarity = anchors @ candidates.T  # (2m, W·2m)
        loss = twin_contrastive_loss(similarity / self.config.effective_temperature, offset,
                                     self.config.contrastive_reduction)
        return loss * processes if self.config.contrastive_reduction == "sum" else loss

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor,
                word_targets: torch.Tensor) -> ObjectiveOutput:
        """``input_ids``: the masked views stacked (views·m, T); ``word_targets``: y per text (m, V)."""
        sequence_output = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        cls_vectors = pool(sequence_output, attention_mask, self.config.bottleneck)  # (views·m, H): h of eq. 1
        word_logits = self.bow_decoder(cls_vectors)  # (views·m, V)
        parts = {"mlm": self.mlm_loss(sequence_output, labels),
                 "bow_bce": self.reconstruction_loss(word_logits, word_targets.repeat(self.config.views, 1))}
        if self.config.contrastive_weight > 0:
            name = "js_contrastive" if self.config.contrast == "words" else "cls_contrastive"
            parts[name] = self.config.contrastive_weight * self.contrastive_loss(cls_vectors, word_logits)
        return ObjectiveOutput(loss=sum(parts.values()), parts=parts)
