"""The BoW-MLP encoder: the shallow baseline of the two-tower study (Chang et al., ICLR 2020, sec. 4.2).

"BoW-MLP looks up uni-grams from the embedding table, aggregates the embeddings with average pooling,
and passes them through a shallow two-layer MLP network with tanh activation to generate the final
512-dimensional query/document embeddings ... (128M v.s. 110M parameters)."

The paper does not say which unigram vocabulary it uses; we use the tokenizer's (WordPiece for BERT),
so the baseline and the Transformer see the same inputs, and we leave out the special tokens
([CLS], [SEP], [PAD]) because they are not words of the text. "Two-layer MLP with tanh" is read as
``Linear → tanh → Linear``. The defaults (4096-dimensional embeddings, 512 hidden, 512 out) give
127.4M parameters over the 30,522-token BERT vocabulary: the paper's "128M".

The model is a ``transformers.PreTrainedModel`` registered with ``AutoModel`` (model type
``seedr_bow_mlp``): once this module is imported, ``seedr.modeling.encoder.save_encoder`` /
``load_encoder`` and ``sentence_transformers.SentenceTransformer`` save and load it like a BERT.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import AutoConfig, AutoModel, PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutputWithPooling


class BowMlpConfig(PretrainedConfig):
    """Sizes of the BoW-MLP encoder; ``ignored_token_ids`` are left out of the bag (special tokens)."""

    model_type = "seedr_bow_mlp"

    def __init__(self, vocab_size: int = 30522, embedding_dim: int = 4096, hidden_dim: int = 512,
                 output_dim: int = 512, pad_token_id: int = 0, ignored_token_ids: list[int] | None = None,
                 initializer_range: float = 0.02, **kwargs) -> None:
        super().__init__(pad_token_id=pad_token_id, **kwargs)
        self.vocab_size = vocab_size
        self.embedding_dim = embedding_dim
        self.hidden_dim = hidden_dim
        self.output_dim = output_dim
        self.ignored_token_ids = list(ignored_token_ids or [pad_token_id])
        self.initializer_range = initializer_range
        # The embedding width the two-tower objective projects from, under the name transformers uses.
        self.hidden_size = output_dim


class BowMlpModel(PreTrainedModel):
    """Average of unigram embeddings → ``Linear → tanh → Linear`` (ICLR 2020, sec. 4.2).

    ``forward`` returns the embedding (B, D) as ``pooler_output`` and as the single state of
    ``last_hidden_state`` (B, 1, D), so [CLS] or mean pooling anywhere in seedr (the two-tower
    objective, ``DualEncoder``, ``encode_texts``, sentence-transformers' ``Pooling``) returns it
    unchanged: the baseline drops in wherever a BERT encoder goes.

    Example:
        >>> model = BowMlpModel(BowMlpConfig(vocab_size=100, embedding_dim=16, hidden_dim=8, output_dim=4))
        >>> model(torch.tensor([[5, 6, 7]]), torch.ones(1, 3)).last_hidden_state.shape
        torch.Size([1, 1, 4])
    """

    config_class = BowMlpConfig
    base_model_prefix = "bow_mlp"

    def __init__(self, config: BowMlpConfig) -> None:
        super().__init__(config)
        self.embeddings = nn.Embedding(config.vocab_size, config.embedding_dim,
                                       padding_idx=config.pad_token_id)
        self.mlp = nn.Sequential(nn.Linear(config.embedding_dim, config.hidden_dim), nn.Tanh(),
                                 nn.Linear(config.hidden_dim, config.output_dim))
        self.post_init()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                **unused: torch.Tensor) -> BaseModelOutputWithPooling:
        """``unused`` takes BERT-only inputs (``token_type_ids``) so both encoders take the same batch."""
        # From the config, not a buffer: from_pretrained builds models on the meta device and would
        # leave a non-persistent buffer uninitialised.
        ignored = torch.tensor(self.config.ignored_token_ids, device=input_ids.device)
        in_bag = ~torch.isin(input_ids, ignored)  # (B, T)
        if attention_mask is not None:
            in_bag &= attention_mask.bool()
        weights = in_bag.unsqueeze(-1).to(self.embeddings.weight.dtype)  # (B, T, 1)
        summed = (self.embeddings(input_ids) * weights).sum(dim=1)  # (B, E)
        average = summed / weights.sum(dim=1).clamp_min(1.0)  # (B, E); an empty bag stays the zero vector
        embedding = self.mlp(average)  # (B, D)
        return BaseModelOutputWithPooling(last_hidden_state=embedding.unsqueeze(1), pooler_output=embedding)


def build_bow_mlp(vocab_size: int, embedding_dim: int = 4096, hidden_dim: int = 512, output_dim: int = 512,
                  pad_token_id: int = 0, ignored_token_ids: list[int] | None = None) -> BowMlpModel:
    """A freshly initialised BoW-MLP; pass ``tokenizer.all_special_ids`` as ``ignored_token_ids``."""
    return BowMlpModel(BowMlpConfig(vocab_size=vocab_size, embedding_dim=embedding_dim, hidden_dim=hidden_dim,
                                    output_dim=output_dim, pad_token_id=pad_token_id,
                                    ignored_token_ids=ignored_token_ids))


AutoConfig.register(BowMlpConfig.model_type, BowMlpConfig)
AutoModel.register(BowMlpConfig, BowMlpModel)
