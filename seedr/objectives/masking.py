"""BERT's masked-language-model corruption and the padding shared by the single-text objectives.

Masking follows BERT (Devlin et al., 2019, sec. 3.1 and Appendix A.1; ``create_pretraining_data.py``
of google-research/bert): in each sequence ``max(1, round(n × 15%))`` of its ``n`` non-special
tokens are chosen uniformly at random as prediction targets; of those, 80% become ``[MASK]``, 10% a
token drawn uniformly from the whole vocabulary, 10% stay unchanged. Choosing an exact count per
sequence (rather than a Bernoulli draw per token) is what BERT's data pipeline does, and it guarantees
every sequence has at least one target, so the MLM loss is never an average over nothing.

All randomness comes from torch's global RNG (or an explicit ``generator``), which the trainer seeds
and checkpoints, so a resumed run masks exactly as an uninterrupted one would.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

#: Label of positions that are not prediction targets (ignored by ``torch.nn.functional.cross_entropy``).
IGNORE_INDEX = -100


def pad_token_ids(examples: Sequence[Sequence[int]], pad_token_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad token-id lists into ``(input_ids, attention_mask)``, both ``(B, T)`` with T the longest."""
    if not examples or any(len(example) == 0 for example in examples):
        raise ValueError("collate needs a non-empty batch of non-empty token-id lists")
    longest = max(len(example) for example in examples)
    input_ids = torch.full((len(examples), longest), pad_token_id, dtype=torch.long)  # (B, T)
    attention_mask = torch.zeros((len(examples), longest), dtype=torch.long)  # (B, T)
    for row, example in enumerate(examples):
        input_ids[row, : len(example)] = torch.as_tensor(example, dtype=torch.long)
        attention_mask[row, : len(example)] = 1
    return input_ids, attention_mask


def special_tokens_mask(input_ids: torch.Tensor, special_ids: Iterable[int]) -> torch.Tensor:
    """True where ``input_ids`` holds a special token ([CLS], [SEP], [PAD], ...); ``(B, T)`` bool."""
    return torch.isin(input_ids, torch.tensor(sorted(set(special_ids)), dtype=input_ids.dtype))


def mask_tokens(input_ids: torch.Tensor, special_mask: torch.Tensor, mask_token_id: int, vocab_size: int,
                probability: float = 0.15, generator: torch.Generator | None = None,
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT-mask a padded batch; returns ``(masked_input_ids, labels)``, both ``(B, T)``.

    ``labels`` holds the original token at the chosen positions and ``IGNORE_INDEX`` elsewhere;
    ``special_mask`` (True at [CLS]/[SEP]/padding) marks positions that are never chosen.
    """
    candidates = ~special_mask  # (B, T)
    counts = candidates.sum(1)  # (B,)
    # BERT: num_to_predict = max(1, int(round(n * masked_lm_prob))), never more than n.
    targets_per_row = torch.clamp(torch.round(counts * probability), min=1).minimum(counts)  # (B,)
    # Exactly ``targets_per_row`` positions chosen uniformly per row: rank random keys, specials last.
    keys = torch.rand(input_ids.shape, generator=generator)  # (B, T)
    keys = keys.masked_fill(~candidates, 2.0)
    ranks = keys.argsort(1).argsort(1)  # (B, T): rank of each position's key in its row
    chosen = ranks < targets_per_row.unsqueeze(1)  # (B, T)

    labels = input_ids.masked_fill(~chosen, IGNORE_INDEX)  # (B, T)
    action = torch.rand(input_ids.shape, generator=generator)  # (B, T): 80% mask, 10% random, 10% keep
    to_mask = chosen & (action < 0.8)
    to_randomise = chosen & (action >= 0.8) & (action < 0.9)
    random_tokens = torch.randint(vocab_size, input_ids.shape, generator=generator, dtype=input_ids.dtype)
    masked = input_ids.masked_fill(to_mask, mask_token_id)
    masked = torch.where(to_randomise, random_tokens, masked)  # (B, T)
    return masked, labels
