"""RetroMAE's enhanced decoder (Xiao et al., EMNLP 2022, "Enhanced Decoding"): one Transformer layer
whose queries and keys/values are two different streams built from the sentence embedding ``h_X̃``:

    H1 = [h_X̃ + p_0, …, h_X̃ + p_N]                  (query stream: the sentence embedding at each position)
    H2 = [h_X̃, e_{x_1} + p_1, …, e_{x_N} + p_N]        (content stream: the embedding, then the tokens)
    A = softmax(Qᵀ K / √d + M) V,  Q = H1 W_Q, K = H2 W_K, V = H2 W_V
    M_ij = 0 if j ∈ s(X_≠i) or j = 0, else −∞

so that every position ``i`` reconstructs ``x_i`` from the sentence embedding and a sampled context that
never holds ``x_i`` itself. As the authors' released code builds it (github.com/staoxiao/RetroMAE,
``src/pretrain/modeling.py`` and ``enhancedDecoder.py``; the same in FlagOpen/FlagEmbedding):

- the content stream is the encoder's own embedding module (word + position + token type, LayerNorm,
  dropout) applied to the *clean* tokens, with position 0 replaced by ``h_X̃``; the query stream is the
  encoder's raw position embeddings plus ``h_X̃``. Tokens are hidden by the attention mask, never by
  [MASK] in the input;
- the layer is a BERT layer with separate query and key/value inputs: attention, dense, dropout, then
  LayerNorm over the sum with the *query* stream (post-LN, as BERT), then BERT's feed-forward — here
  transformers' own ``BertAttention`` (cross-attention form), ``BertIntermediate`` and ``BertOutput``;
- initialised as BERT initialises (``c_head.apply(lm._init_weights)``).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PretrainedConfig
from transformers.models.bert.modeling_bert import BertAttention, BertIntermediate, BertOutput

from seedr.modeling.encoder import bert_init


class EnhancedDecoderLayer(nn.Module):
    """``query`` (B, T, H) attends ``content`` (B, T, H) where ``visible`` (B, T, T) allows → (B, T, H)."""

    def __init__(self, config: PretrainedConfig) -> None:
        super().__init__()
        self.attention = BertAttention(config, is_cross_attention=True)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)
        self.apply(lambda module: bert_init(module, config.initializer_range))

    def forward(self, query: torch.Tensor, content: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        # additive mask, as the released code's get_extended_attention_mask: a row that sees nothing (padding)
        # softmaxes uniformly instead of to NaN
        mask = torch.zeros(visible.shape, dtype=query.dtype, device=query.device)
        mask = mask.masked_fill(~visible, torch.finfo(query.dtype).min).unsqueeze(1)  # (B, 1, T, T)
        attended, _ = self.attention(query, encoder_hidden_states=content, encoder_attention_mask=mask)  # (B, T, H)
        return self.output(self.intermediate(attended), attended)  # (B, T, H)

