"""Held-out masked-language-model loss and masked-token accuracy: whether an encoder has learned language.

BERT reports its pre-training by masked-LM accuracy on held-out text (Devlin et al., 2019, §A.2 and
``run_pretraining.py``'s ``masked_lm_accuracy``), and a small BERT trained too briefly sits on the
*unigram plateau*: it predicts every masked token from word frequencies alone, so its loss equals the
entropy of the masked tokens' unigram distribution and its accuracy the share of the most frequent token.
``heldout_masked_lm`` measures both the model and that plateau on the same targets (the frequencies
counted over every token of the held-out texts), so a curve over checkpoints shows when (and whether)
the model leaves it.

The masks are drawn from a generator seeded once, so every checkpoint is scored on the very same
corrupted texts and targets; the corruption is BERT's (``seedr.objectives.masking.mask_tokens``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import torch
from torch.nn import functional as F

from seedr.objectives.masking import IGNORE_INDEX, mask_tokens, special_tokens_mask

#: Texts longer than this many characters per wanted token are cut before tokenising (no token is
#: shorter than one character, and the cut keeps tokenising long articles cheap).
_CHARACTERS_PER_TOKEN_BOUND = 16


def unigram_plateau(targets: Sequence[int], tokens: Sequence[int] | None = None) -> dict[str, float]:
    """The loss and accuracy of predicting every target from word frequencies alone: the cross-entropy
    (nats) of ``targets`` under the unigram distribution of ``tokens`` (default: the targets themselves),
    and the share of targets equal to its most frequent token. A model whose held-out loss is at this
    level has learned word frequencies, not language.

    Count the frequencies on many more tokens than there are targets (e.g. every token of the held-out
    texts, of which the targets are 15%): the plug-in entropy of a small sample over a large vocabulary
    is biased low. Every target must occur in ``tokens``.
    """
    if not targets:
        raise ValueError("no masked targets to measure")
    counts = Counter(targets if tokens is None else tokens)
    total = sum(counts.values())
    if any(target not in counts for target in set(targets)):
        raise ValueError("every target must be one of the tokens the frequencies are counted on")
    loss = -sum(math.log(counts[target] / total) for target in targets) / len(targets)
    most_frequent = max(counts, key=lambda token: (counts[token], -token))
    return {"unigram_loss": loss, "unigram_accuracy": sum(t == most_frequent for t in targets) / len(targets)}


#: Held-out masked-LM texts: tokens each (held-out texts are scored as pre-training saw them: 128 at the
#: CPU scale) and texts per forward pass.
HELDOUT_MAX_LENGTH, HELDOUT_BATCH_SIZE = 128, 32


def masked_batches(tokenizer: Any, texts: Sequence[str], max_length: int = HELDOUT_MAX_LENGTH,
                   batch_size: int = HELDOUT_BATCH_SIZE,
                   probability: float = 0.15, seed: int = 0) -> Iterator[dict[str, torch.Tensor]]:
    """``texts`` cut to ``max_length`` tokens and BERT-masked, in batches of ``batch_size``: dicts of
    ``input_ids`` (masked), ``attention_mask`` and ``labels`` (the original token at each target, else
    ``IGNORE_INDEX``), all ``(B, T)``. The masks come from one generator seeded with ``seed``: the same
    arguments give the same batches."""
    generator = torch.Generator().manual_seed(seed)
    for start in range(0, len(texts), batch_size):
        cut = [text[:max_length * _CHARACTERS_PER_TOKEN_BOUND] for text in texts[start:start + batch_size]]
        batch = tokenizer(cut, truncation=True, max_length=max_length, padding=True, return_tensors="pt")
        specials = special_tokens_mask(batch["input_ids"], tokenizer.all_special_ids)  # (B, T)
        masked, labels = mask_tokens(batch["input_ids"], specials, tokenizer.mask_token_id, len(tokenizer),
                                     probability, generator=generator)  # (B, T) each
        yield {"input_ids": masked, "attention_mask": batch["attention_mask"], "labels": labels}


@torch.inference_mode()
def heldout_masked_lm(objective: Any, texts: Sequence[str], max_length: int = HELDOUT_MAX_LENGTH,
                      batch_size: int = HELDOUT_BATCH_SIZE,
                      seed: int = 0) -> dict[str, float]:
    """Masked-LM loss (mean cross-entropy over targets, nats) and masked-token accuracy on ``texts``.

    Args:
        objective: an objective with an MLM head (``seedr.objectives.mlm.objective.MaskedLanguageModel`` and its
            subclasses SEED-Encoder and CPDAE), e.g. from ``seedr.diagnostics.loading.load_objective``.
        texts: held-out texts, each cut to ``max_length`` tokens ([CLS] and [SEP] included).
        seed: seed of the masks (``masked_batches``); the same seed and texts give every checkpoint the
            same targets.

    Returns:
        ``mlm_loss``, ``masked_accuracy``, the plateau of the same targets (``unigram_loss``,
        ``unigram_accuracy``), and the counts ``sequences`` and ``targets``.
    """
    if not hasattr(objective, "mlm_logits"):
        raise ValueError(f"{type(objective).__name__} has no masked-language-model head to evaluate")
    if not texts:
        raise ValueError("no held-out texts to evaluate the masked-language model on")
    was_training = objective.training
    objective.eval()
    device = next(objective.parameters()).device
    loss_sum, correct, gold_targets, text_tokens = 0.0, 0, [], []
    for batch in masked_batches(objective.tokenizer, texts, max_length, batch_size,
                                objective.config.mask_probability, seed):
        labels = batch["labels"].to(device)  # (B, T)
        states = objective.encoder(input_ids=batch["input_ids"].to(device),
                                   attention_mask=batch["attention_mask"].to(device)).last_hidden_state  # (B, T, H)
        logits = objective.mlm_logits(states, labels).float()  # (N, V)
        gold = labels[labels != IGNORE_INDEX]  # (N,)
        loss_sum += float(F.cross_entropy(logits, gold, reduction="sum"))
        correct += int((logits.argmax(-1) == gold).sum())
        gold_targets += gold.tolist()
        originals = torch.where(labels == IGNORE_INDEX, batch["input_ids"].to(device), labels)  # (B, T)
        specials = special_tokens_mask(originals.cpu(), objective.tokenizer.all_special_ids).to(device)
        text_tokens += originals[~specials].tolist()
    objective.train(was_training)
    return {"mlm_loss": loss_sum / len(gold_targets), "masked_accuracy": correct / len(gold_targets),
            **unigram_plateau(gold_targets, text_tokens), "sequences": len(texts), "targets": len(gold_targets)}


__all__ = ["heldout_masked_lm", "masked_batches", "unigram_plateau"]
