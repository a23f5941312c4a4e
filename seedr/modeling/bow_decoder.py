"""CPDAE's non-autoregressive MLP decoder (Ma et al., CIKM 2022, sec. 3.1.2, eq. 2): the [CLS] vector
→ one logit per vocabulary word (does the word occur in the text?).

"Two layers of feed-forward network with a non-linear activation function GELU and a LayerNorm",
output size |V| (30,522 for BERT's vocabulary): dense(H→H) → GELU → LayerNorm → dense(H→|V|), the
layout of BERT's prediction head, with its own output matrix (the paper gives no tying).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PretrainedConfig
from transformers.activations import ACT2FN


class BagOfWordsDecoder(nn.Module):
    """``h_[CLS] (B, H) → z (B, |V|)``; build with the encoder's config."""

    def __init__(self, config: PretrainedConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = ACT2FN[config.hidden_act]
        self.norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.output = nn.Linear(config.hidden_size, config.vocab_size)
        for linear in (self.dense, self.output):  # BERT's initialisation
            nn.init.normal_(linear.weight, std=config.initializer_range)
            nn.init.zeros_(linear.bias)

    def forward(self, cls_vector: torch.Tensor) -> torch.Tensor:
        return self.output(self.norm(self.activation(self.dense(cls_vector))))  # (B, V)


def at_least_float32(tensor: torch.Tensor) -> torch.Tensor:
    """bf16/fp16 activations in float32 for long sums; float64 (exactness tests) kept as it is."""
    return tensor.to(torch.promote_types(tensor.dtype, torch.float32))


def word_distribution(word_logits: torch.Tensor) -> torch.Tensor:
    """z̃ of eq. 5: the per-word sigmoid probabilities ẑ (eq. 3) normalised to sum to one."""
    probabilities = torch.sigmoid(at_least_float32(word_logits))  # (N, V); float32 at least for the JS sums
    return probabilities / probabilities.sum(-1, keepdim=True)
