"""SEED-Encoder (Lu et al., EMNLP 2021, "Less is More: Pretrain a Strong Siamese Encoder for Dense
Text Retrieval Using a Weak Decoder"): MLM plus reconstruction of the input by a weak decoder that
sees the encoder only through its [CLS] vector.

    L(x) = L_MLM(x^M; θ_enc) + w · L_dec^weak(x; θ_dec)                                      (eq. 10)
    L_dec^weak = −Σ_t log P(x_t | x_{t−k:t−1}, h_0; θ_dec^weak)                              (eq. 9)

(equation numbers of the EMNLP paper; eq. 11 and 10 in the preprint "Less is More: Pre-training a
Strong Siamese Encoder Using a Weak Decoder").

- One encoder pass on the BERT-masked text gives both the MLM states and ``h_0``: the authors'
  released model runs ``encoder(src_tokens)`` once and feeds ``x_encoder[:, 0]`` to the decoder
  (``SEEDEncoderModel.forward``), while the decoder reconstructs the original, unmasked tokens with
  teacher forcing (preprint footnote 1). The paper writes ``w = 1``; ``decoder_weight`` exposes it.
- Both losses are means over their predicted tokens (fairseq divides the summed loss by the number
  of tokens); the decoder also predicts the closing [SEP], as a language model predicts its EOS.
- Decoder defaults are the paper's: 3 layers, span 2, the encoder's width, dropout 0.1 (sec. 4.1,
  Appendix A.1). ``attention_span="all"`` gives the strong decoder of the paper's analysis (full
  causal attention: "5-layer … All" in Figure 3 of the EMNLP paper is ``decoder_layers=5``).
- Token embeddings are tied to the encoder's (authors' code passes ``embed_tokens`` of the encoder
  to the decoder); the output projection is tied too: the released config does not say, and tying
  keeps the decoder weak (no V × H matrix of its own), as BERT ties its MLM output.

Only the encoder is the product; the decoder lives in the training state (for resuming) and is
discarded after pre-training.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from seedr.modeling.encoder import pool
from seedr.modeling.folders import EncoderShape
from seedr.modeling.linear_cross_entropy import linear_cross_entropy
from seedr.objectives.base import ObjectiveOutput
from seedr.objectives.mlm.objective import MaskedLanguageModel
from seedr.objectives.seed.options import SeedConfig
from seedr.objectives.seed.weak_decoder import WeakDecoder


class SeedEncoder(MaskedLanguageModel):
    """MLM on the masked text + weak-decoder reconstruction of the clean text from [CLS].

    Parts: ``mlm`` and ``weak_decoder`` (already multiplied by ``decoder_weight``).

    Example:
        >>> objective = OBJECTIVES.get("seed")(encoder, tokenizer, SeedConfig(attention_span=2))
        >>> output = objective(**objective.collate(token_id_lists))
        >>> output.parts["weak_decoder"]
    """

    name = "seed"
    config_class = SeedConfig
    new_parts = ("weak decoder",)
    diagnostics = frozenset({"masked_lm", "cls_reliance"})

    @classmethod
    def multiply_adds_per_example(cls, options: SeedConfig, max_seq_length: int, shape: EncoderShape,
                                  *, batch_size: int) -> float:
        """MLM's, and the decoder's: every token but the last (each predicts the next, eq. 9) through its
        layers, as wide as the encoder's — self-attention over its ``attention_span`` (the whole prefix for
        ``all``, computed as a masked square), the cross-attention's output projection of the [CLS] value
        (one key: its weight is 1, so no query), the feed-forward — then predicted over the vocabulary."""
        tokens = max_seq_length - 1
        attended = tokens if options.attention_span == "all" else min(int(options.attention_span) + 1, tokens)
        cross = shape.hidden ** 2 if options.cls_path == "cross_attention" else 0.0
        layer = shape.layer_multiply_adds + cross + shape.attention(attended)
        decoder = tokens * (options.decoder_layers * layer + shape.prediction_multiply_adds)
        mlm = super().multiply_adds_per_example(options, max_seq_length, shape, batch_size=batch_size)
        return mlm + decoder

    def __init__(self, encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                 config: SeedConfig | None = None) -> None:
        super().__init__(encoder, tokenizer, config)
        self.decoder = WeakDecoder(encoder.config, self.config.decoder_layers, self.config.span,
                                   self.config.decoder_dropout, self.config.tie_embeddings,
                                   cls_path=self.config.cls_path, pre_layer_norm=self.config.pre_layer_norm)

    def collate(self, examples: Sequence[Sequence[int]]) -> dict[str, torch.Tensor]:
        input_ids, attention_mask = self.pad(examples)
        masked_input_ids, labels = self.mask(input_ids)
        return {"input_ids": masked_input_ids, "attention_mask": attention_mask, "labels": labels,
                "decoder_input_ids": input_ids}

    def decoder_loss(self, cls_vector: torch.Tensor, decoder_input_ids: torch.Tensor,
                     attention_mask: torch.Tensor) -> torch.Tensor:
        """Eq. 9 as a mean over tokens: teacher-forced reconstruction of the clean ``[CLS] … [SEP]``
        (B, T) from ``cls_vector`` (B, H); position p reads ``x_p`` and predicts ``x_{p+1}``."""
        shared = self.encoder.get_input_embeddings().weight if self.config.tie_embeddings else None  # (V, H)
        states = self.decoder(decoder_input_ids[:, :-1], cls_vector, shared)  # (B, T−1, H)
        targets = decoder_input_ids[:, 1:]  # (B, T−1)
        real = attention_mask[:, 1:].bool()  # (B, T−1): padding is never a target
        # only at real targets, and in chunks: the (N × V) logits are never held whole
        return linear_cross_entropy(states[real], self.decoder.output_matrix(shared), targets[real])

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor,
                decoder_input_ids: torch.Tensor) -> ObjectiveOutput:
        """``input_ids``: masked text (B, T); ``labels``: MLM targets; ``decoder_input_ids``: clean text."""
        sequence_output = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mlm = self.mlm_loss(sequence_output, labels)
        bottleneck = pool(sequence_output, attention_mask, self.config.bottleneck)  # (B, H)
        decoder = self.config.decoder_weight * self.decoder_loss(bottleneck, decoder_input_ids, attention_mask)
        return ObjectiveOutput(loss=mlm + decoder, parts={"mlm": mlm, "weak_decoder": decoder})
