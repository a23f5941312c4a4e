"""coCondenser (Gao & Callan, ACL 2022, "Unsupervised Corpus Aware Language Model Pre-training for Dense
Passage Retrieval", arXiv:2108.05540): Condenser plus a corpus-level contrastive loss between two random
spans of the same document, on the backbone's late [CLS].

    L^co_ij = −log exp(⟨h_i1, h_i2⟩) / Σ_{k=1..n} Σ_{l=1,2} 1[ij ≠ kl] exp(⟨h_ij, h_kl⟩)
    L = 1/(2n) Σ_i Σ_j [L^co_ij + L_mlm_ij]

(the paper's §3 equations, written out here without their numbers, which could not be checked) for a
batch of n documents, two spans s_i1, s_i2 of each, ``h`` the late [CLS] of a span, and L_mlm
Condenser's (``seedr.objectives.condenser``: the head's MLM plus the backbone's). What seedr takes from
the released code (github.com/luyug/Condenser, ``modeling.py``, ``CoCondenserForPretraining``):

- the similarity is the raw dot product of the late [CLS] vectors, ``hidden_states[-1][:, :1]``, without
  normalisation or temperature (``compute_contrastive_loss``: ``matmul`` then ``cross_entropy``; its
  diagonal filled with −inf, so a span is never its own candidate): ``temperature`` defaults to 1;
- the contrastive term is the mean over the 2n spans of the global batch (``cross_entropy``'s mean; the
  code gathers without gradient and multiplies by the world size, seedr gathers with gradient,
  ``seedr.losses.gather``, which gives the same gradient) and is added unweighted to the two MLM means;
- both spans of a document are masked and trained with Condenser's MLM, in one forward pass.

Span sampling. The released code reads documents already broken into spans (``{"spans": [...]}`` per
document; how they were cut is outside the repository) and draws two of them uniformly without
replacement (``CoCondenserDataset.__getitem__``: ``random.sample(spans, 2)``), each truncated to a random
window of the maximum length (``CondenserCollator._truncate``). seedr's examples are token blocks of one
article (``doc_sentences`` packing), so the document is the block: its content is cut into
``ceil(n / span_length)`` (at least 2) contiguous chunks of near-equal length, at most ``span_length``
tokens each, and two distinct chunks are drawn uniformly (``draw_spans``), each becoming
``[CLS] chunk [SEP]``. A block of a single content token gives that token twice. Masking is per span
(seedr's BERT masking, as Condenser here).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import torch

from seedr.losses.gather import gather_rows, row_offset
from seedr.modeling.bow_decoder import at_least_float32
from seedr.modeling.encoder import pool
from seedr.modeling.folders import EncoderShape
from seedr.objectives.base import ObjectiveOutput
from seedr.objectives.cocondenser.options import CoCondenserConfig
from seedr.objectives.condenser.objective import Condenser
from seedr.objectives.cpdae.objective import twin_contrastive_loss


def span_bounds(length: int, span_length: int) -> list[tuple[int, int]]:
    """``[start, end)`` of the contiguous, near-equal chunks, at least 2 and each at most ``span_length``
    tokens, that cut ``length`` content tokens (a single token is one chunk, drawn twice)."""
    if length < 2:
        return [(0, length)]
    chunks = max(2, math.ceil(length / span_length))
    edges = [round(index * length / chunks) for index in range(chunks + 1)]
    return list(itertools.pairwise(edges))


class CoCondenser(Condenser):
    """Condenser on two random spans of each text + their contrast against the batch's spans (L = L^co + L_mlm).

    Parts: ``condenser_mlm``, ``mlm`` (as Condenser's) and ``span_contrastive`` (times its weight).

    Example:
        >>> objective = OBJECTIVES.get("cocondenser")(encoder, tokenizer, CoCondenserConfig())
        >>> spans = objective.draw_spans(token_id_lists, torch.Generator().manual_seed(0))
        >>> objective(**objective.collate_spans(spans)).parts["span_contrastive"]
    """

    name = "cocondenser"
    config_class = CoCondenserConfig

    @classmethod
    def multiply_adds_per_example(cls, options: CoCondenserConfig, max_seq_length: int,
                                  shape: EncoderShape, *, batch_size: int) -> float:
        """Condenser's for each of the two spans of a full-length text: its ``max_seq_length − 2`` content
        tokens cut into at least two chunks (``span_bounds``), the longest of them with [CLS] and [SEP]
        (a batch pads to it); the 2n × 2n dot products are negligible beside them."""
        span = max(end - start for start, end in span_bounds(max_seq_length - 2, options.span_length)) + 2
        return 2 * super().multiply_adds_per_example(options, span, shape, batch_size=batch_size)

    def draw_spans(self, examples: Sequence[Sequence[int]],
                   generator: torch.Generator | None = None) -> list[tuple[list[int], list[int]]]:
        """Two distinct chunks of each ``[CLS] … [SEP]`` example (``span_bounds``), drawn uniformly, each
        as ``[CLS] chunk [SEP]``; all randomness is here (torch's RNG, or ``generator``)."""
        pairs = []
        for example in examples:
            first, content, last = example[0], list(example[1:-1]), example[-1]
            bounds = span_bounds(len(content), self.config.span_length)
            chosen = torch.randperm(len(bounds), generator=generator)[:2].tolist() if len(bounds) > 1 else [0, 0]
            pairs.append(tuple([first, *content[bounds[index][0]:bounds[index][1]], last] for index in chosen))
        return pairs

    def collate_spans(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> dict[str, torch.Tensor]:
        """The 2n spans as ``[s_11 … s_n1, s_12 … s_n2]`` (``twin_contrastive_loss``'s order), padded and
        BERT-masked."""
        input_ids, attention_mask = self.pad([pair[0] for pair in pairs] + [pair[1] for pair in pairs])  # (2n, T)
        masked_input_ids, labels = self.mask(input_ids)
        return {"input_ids": masked_input_ids, "attention_mask": attention_mask, "labels": labels}

    def collate(self, examples: Sequence[Sequence[int]]) -> dict[str, torch.Tensor]:
        return self.collate_spans(self.draw_spans(examples))

    def span_contrastive_loss(self, cls_vectors: torch.Tensor) -> torch.Tensor:
        """L^co averaged over this process's 2n spans (``cls_vectors`` (2n, H)), the candidates being the
        spans of every process under ``global_in_batch``; the DDP average makes it the global mean."""
        candidates, offset = cls_vectors, 0
        if self.config.global_in_batch:
            candidates, offset = gather_rows(cls_vectors), row_offset(len(cls_vectors))
        similarity = cls_vectors @ candidates.T / self.config.temperature  # (2n, W·2n)
        return twin_contrastive_loss(similarity, offset, "mean")

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                labels: torch.Tensor) -> ObjectiveOutput:
        """``input_ids``: the masked spans (2n, T), first spans then second spans; ``labels``: MLM targets."""
        parts, late = self.condenser_losses(input_ids, attention_mask, labels)
        cls_vectors = at_least_float32(pool(late, attention_mask, "cls"))  # (2n, H): the late [CLS]
        parts["span_contrastive"] = self.config.contrastive_weight * self.span_contrastive_loss(cls_vectors)
        return ObjectiveOutput(loss=sum(parts.values()), parts=parts)
