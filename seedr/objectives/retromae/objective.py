"""RetroMAE (Xiao, Liu, Shao & Cao, EMNLP 2022, "RetroMAE: Pre-Training Retrieval-oriented Language
Models Via Masked Auto-Encoder", arXiv:2205.12035): an encoder reads a moderately masked text (MLM),
and a one-layer decoder reconstructs an aggressively masked view of it from the encoder's [CLS] vector,
with position-specific attention masks (enhanced decoding). (The equations are named, not numbered:
the paper is not among the project's papers to check numbers on.)

    h_X̃ ← Φ_enc(X̃_enc)                                                           (encoding: [CLS] of the masked text)
    H1 = {h_X̃ + p_i},  H2 = {h_X̃, e_{x_1} + p_1, …, e_{x_N} + p_N}                 (query and content streams)
    A = softmax(Qᵀ K / √d + M) V,  M_ij = 0 iff x_j ∈ s(X_≠i) or j = 0              (enhanced decoding)
    L_dec = Σ_i CE(x_i | A_i)                                                      (its loss)
    L = L_enc + L_dec                                                              (the total, as the released code sums it)

What the paper leaves to its released code (github.com/staoxiao/RetroMAE ``src/pretrain``: ``modeling.py``
``RetroMAEForPretraining``, ``data.py`` ``RetroMAECollator``, ``enhancedDecoder.py``; FlagOpen/
FlagEmbedding's RetroMAE pre-training is the same code), and what seedr takes from it:

- The encoder's loss is BERT's MLM on its masked input (``lm_out.loss`` of ``BertForMaskedLM``, added
  unweighted to the decoder's), so this objective subclasses ``MaskedLanguageModel``: one encoder pass
  gives both the MLM states and ``h_X̃`` (``hidden_states[-1][:, :1]``). Masking ratios: 0.3 for the encoder
  and 0.5 for the decoder (the released pre-training command; the paper: 15-30% and 50-70%).
- The decoder predicts through the *encoder's* MLM head (``self.lm.cls``): one head, trained by both
  losses; its targets are every real token but the first ([CLS]) and the last ([SEP]); both losses are
  means over their targets (``nn.CrossEntropyLoss``).
- ``s(X_≠i)`` of row ``i``: a fresh decoder-ratio sample of the text's non-special tokens, plus ``i``
  itself hidden. [CLS] and [SEP] are never sampled, so every row sees position 0 (M's ``j = 0``,
  which holds ``h_X̃``) and the last token; padding is never seen. The released collator draws
  ``min(N, 256)`` masks per text and lets each row pick one of them at random, a speed-up that shares
  masks between rows; seedr draws one per row (the distribution M describes).
- Masking is seedr's token-level BERT masking (``seedr.objectives.masking``: an exact share of the
  non-special tokens, 80/10/10 for the encoder); the released collator masks whole words
  (``DataCollatorForWholeWordMask``), which seedr does not (a WordPiece continuation can be masked
  while its word's first piece is not).
- The decoder's details (content stream = the encoder's embedding module on the clean tokens, queries
  from raw position embeddings, post-LN BERT layer): ``seedr.objectives.retromae.enhanced_decoder``.

Masks are drawn in ``mask`` and ``draw_visibility`` (torch's RNG or a ``generator``), apart from the loss,
so that a test can fix them. Only the encoder is the product (pooling: [CLS]).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.nn import functional as F
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from seedr.modeling.folders import EncoderShape
from seedr.objectives.base import ObjectiveOutput
from seedr.objectives.masking import IGNORE_INDEX, mask_tokens, special_tokens_mask
from seedr.objectives.mlm.objective import MaskedLanguageModel
from seedr.objectives.retromae.enhanced_decoder import EnhancedDecoderLayer
from seedr.objectives.retromae.options import RetroMaeConfig


class RetroMae(MaskedLanguageModel):
    """MLM on the encoder's masked text + enhanced decoding of the clean text from its [CLS].

    Parts: ``mlm`` and ``decoder`` (already multiplied by ``decoder_weight``).

    Example:
        >>> objective = OBJECTIVES.get("retromae")(encoder, tokenizer, RetroMaeConfig())
        >>> objective(**objective.collate(token_id_lists)).parts["decoder"]
    """

    name = "retromae"
    config_class = RetroMaeConfig
    new_parts = ("enhanced decoder",)
    diagnostics = frozenset({"masked_lm"})

    @classmethod
    def multiply_adds_per_example(cls, options: RetroMaeConfig, max_seq_length: int, shape: EncoderShape,
                                  *, batch_size: int) -> float:
        """MLM's, and the decoder's: every position through its one layer (attending to the whole sequence
        through its visibility mask) and predicted over the vocabulary by the MLM head (a dense layer, then
        the vocabulary)."""
        decoder = (shape.sequence_multiply_adds(max_seq_length, 1)
                   + max_seq_length * (shape.hidden ** 2 + shape.prediction_multiply_adds))
        mlm = super().multiply_adds_per_example(options, max_seq_length, shape, batch_size=batch_size)
        return mlm + decoder

    def __init__(self, encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                 config: RetroMaeConfig | None = None) -> None:
        super().__init__(encoder, tokenizer, config)
        self.decoder = EnhancedDecoderLayer(encoder.config)

    # ----- batches ---------------------------------------------------------------------------------

    def draw_visibility(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                        generator: torch.Generator | None = None) -> torch.Tensor:
        """``(B, T, T)`` bool: True where decoder row ``i`` may attend position ``j`` (M of enhanced decoding): every real
        position but ``i`` and a fresh ``decoder_mask_probability`` sample of the non-special tokens."""
        batch, length = input_ids.shape
        specials = special_tokens_mask(input_ids, self.tokenizer.all_special_ids)  # (B, T)
        rows = input_ids.unsqueeze(1).expand(batch, length, length).reshape(batch * length, length)  # (B·T, T)
        # BERT's exact-count choice of seedr's masking, one draw per row: the chosen are the hidden
        _, chosen = mask_tokens(rows, specials.repeat_interleave(length, 0), self.tokenizer.mask_token_id,
                                len(self.tokenizer), self.config.decoder_mask_probability, generator)
        hidden = (chosen != IGNORE_INDEX).view(batch, length, length)  # (B, T, T)
        itself = torch.eye(length, dtype=torch.bool).unsqueeze(0)  # (1, T, T)
        return attention_mask.bool().unsqueeze(1) & ~hidden & ~itself

    def decoder_labels(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The clean tokens as targets, but the first and the last real token (the released collator's
        ``e_trunc[0] = e_trunc[-1] = -100``) and padding: ``(B, T)``, ``IGNORE_INDEX`` elsewhere."""
        positions = torch.arange(input_ids.shape[1])  # (T,)
        last = attention_mask.sum(1, keepdim=True) - 1  # (B, 1)
        target = attention_mask.bool() & (positions > 0) & (positions < last)  # (B, T)
        return input_ids.masked_fill(~target, IGNORE_INDEX)

    def collate(self, examples: Sequence[Sequence[int]]) -> dict[str, torch.Tensor]:
        input_ids, attention_mask = self.pad(examples)
        masked_input_ids, labels = self.mask(input_ids)
        return {"input_ids": masked_input_ids, "attention_mask": attention_mask, "labels": labels,
                "decoder_input_ids": input_ids, "decoder_labels": self.decoder_labels(input_ids, attention_mask),
                "decoder_visibility": self.draw_visibility(input_ids, attention_mask)}

    # ----- losses ----------------------------------------------------------------------------------

    def decoder_loss(self, cls_vector: torch.Tensor, decoder_input_ids: torch.Tensor,
                     decoder_labels: torch.Tensor, decoder_visibility: torch.Tensor) -> torch.Tensor:
        """L_dec as a mean over the targets: each position's token from ``cls_vector`` (B, H) and the
        positions its row of ``decoder_visibility`` (B, T, T) allows."""
        embeddings = self.encoder.embeddings
        cls = cls_vector.unsqueeze(1)  # (B, 1, H)
        content = torch.cat([cls, embeddings(input_ids=decoder_input_ids)[:, 1:]], dim=1)  # (B, T, H): H2
        positions = torch.arange(decoder_input_ids.shape[1], device=decoder_input_ids.device)
        query = embeddings.position_embeddings(positions).unsqueeze(0) + cls  # (B, T, H): H1
        states = self.decoder(query, content, decoder_visibility)  # (B, T, H)
        logits = self.mlm_logits(states, decoder_labels)  # (N, V): the encoder's MLM head, at the targets
        total = F.cross_entropy(logits, decoder_labels[decoder_labels != IGNORE_INDEX], reduction="sum")
        return total / max(1, logits.shape[0])  # 0, not NaN, for texts that are only [CLS] [SEP]

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor,
                decoder_input_ids: torch.Tensor, decoder_labels: torch.Tensor,
                decoder_visibility: torch.Tensor) -> ObjectiveOutput:
        """``input_ids``: the encoder's masked text (B, T); ``labels``: its MLM targets; ``decoder_input_ids``:
        the clean text; ``decoder_labels``: the decoder's targets; ``decoder_visibility``: M's masks."""
        sequence_output = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mlm = self.mlm_loss(sequence_output, labels)
        decoder = self.config.decoder_weight * self.decoder_loss(sequence_output[:, 0], decoder_input_ids,
                                                                 decoder_labels, decoder_visibility)
        return ObjectiveOutput(loss=mlm + decoder, parts={"mlm": mlm, "decoder": decoder})
