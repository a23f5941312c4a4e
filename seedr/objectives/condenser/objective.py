"""Condenser (Gao & Callan, EMNLP 2021, "Condenser: a Pre-training Architecture for Dense Retrieval",
arXiv:2104.08253): MLM through a short head that sees the text's late [CLS] and its *early* token
states only, so that what the late token states knew about the text must pass through [CLS].

    [h^cls_late; h^early] = [h^last_0; h^l_1 … h^l_T]
    [h^cd_0; h^cd] = Condenser_head([h^cls_late; h^early])
    L^c_mlm = Σ_{i ∈ masked} CrossEntropy(W h^cd_i, x_i)
    L = L^c_mlm + L_mlm

(the paper's §3 equations, written out without their numbers: the paper is not among ``../shared/papers``,
so its numbering could not be checked), where ``l`` is an early layer of the backbone, ``last`` its last,
and L_mlm the backbone's own MLM on its late states. What seedr takes from the authors' released code
(github.com/luyug/Condenser, ``modeling.py``, ``CondenserForPretraining``), where the paper leaves
details to it:

- The head is ``n_head_layers`` BERT layers of the backbone's shape (``BertLayer(bert.config)``, 2 in the
  README's command line), initialised as the backbone (``c_head.apply(self.lm._init_weights)``), reading
  ``cat([hidden_states[-1][:, :1], hidden_states[skip_from][:, 1:]])`` under the text's padding mask.
  ``hidden_states[0]`` is the embeddings, so ``skip_from=6`` (the README's, for BERT-base's 12 layers)
  is the output of layer 6; ``early_layer`` here counts the same way and defaults to the middle layer
  (layers // 2: 6 of 12, 2 of the seedr base's 4), the paper's choice at BERT-base's depth.
- Both MLM losses use the *same* prediction head (``self.lm.cls`` applied to the head's states), with
  the same masked positions and labels, each a mean over the masked tokens (``nn.CrossEntropyLoss()``),
  and are summed unweighted (``loss += lm_out.loss`` under ``--late_mlm``, which the README sets).
- Masking: the released collator masks whole words (``DataCollatorForWholeWordMask``); seedr masks
  tokens as BERT and every other objective here do (``seedr.objectives.masking``), so that Condenser
  differs from MLM by its head alone.

The head is discarded after pre-training (the product is the backbone, pooled by [CLS]); a run that
starts from a Condenser run's encoder (``--model <run>/encoder``) takes that run's head and MLM head
with it, as coCondenser is warm-started "both head and backbone" from Condenser (README).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from transformers import PreTrainedModel, PreTrainedTokenizerBase
from transformers.masking_utils import create_bidirectional_mask
from transformers.models.bert.modeling_bert import BertLayer

from seedr.engine.checkpoint import run_part_weights
from seedr.modeling.folders import EncoderShape
from seedr.objectives.base import ObjectiveOutput
from seedr.objectives.condenser.options import CondenserConfig
from seedr.objectives.mlm.objective import MaskedLanguageModel


class Condenser(MaskedLanguageModel):
    """Backbone MLM + MLM through the Condenser head over [late [CLS]; early tokens] (L = L^c_mlm + L_mlm).

    Parts: ``mlm`` (the backbone's late MLM, when ``late_mlm``) and ``condenser_mlm`` (the head's).

    Example:
        >>> objective = OBJECTIVES.get("condenser")(encoder, tokenizer, CondenserConfig())
        >>> objective(**objective.collate(token_id_lists)).parts["condenser_mlm"]
    """

    name = "condenser"
    config_class = CondenserConfig
    new_parts = ("Condenser head",)

    @classmethod
    def multiply_adds_per_example(cls, options: CondenserConfig, max_seq_length: int, shape: EncoderShape,
                                  *, batch_size: int) -> float:
        """MLM's (the backbone and its prediction at the masked tokens), and the head: every token through
        its layers, then a second prediction at the same masked tokens."""
        head = (shape.sequence_multiply_adds(max_seq_length, options.head_layers) + options.mask_probability
                * max_seq_length * (shape.hidden ** 2 + shape.prediction_multiply_adds))
        return super().multiply_adds_per_example(options, max_seq_length, shape, batch_size=batch_size) + head

    def __init__(self, encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                 config: CondenserConfig | None = None) -> None:
        super().__init__(encoder, tokenizer, config)
        layers = encoder.config.num_hidden_layers
        self.early_layer = layers // 2 if self.config.early_layer is None else self.config.early_layer
        if self.early_layer > layers:
            raise ValueError(f"early_layer {self.early_layer} is beyond the encoder's {layers} layers")
        self.condenser_head = nn.ModuleList(BertLayer(encoder.config) for _ in range(self.config.head_layers))
        self.condenser_head.apply(encoder._init_weights)  # the released code's initialisation
        loaded_from = getattr(encoder, "name_or_path", "")
        self.condenser_head_loaded = bool(loaded_from) and Path(loaded_from).is_dir() and (
            self._load_run_condenser_head(Path(loaded_from).parent))  # a seedr run's product is <run>/encoder

    def _load_run_condenser_head(self, run_dir: Path) -> bool:
        """Load ``condenser_head.*`` of a Condenser-family run's newest checkpoint; False when ``run_dir``
        is no such run (or its head has another depth)."""
        head = run_part_weights(run_dir, "condenser_head")
        if set(head) != set(self.condenser_head.state_dict()):
            return False
        self.condenser_head.load_state_dict(head)
        return True

    def changes(self, init: str) -> list[str]:
        """The base's, without the new head when it came from the Condenser run ``init`` is the product of."""
        lines = super().changes(init)
        if self.condenser_head_loaded:
            return [line for line in lines if not line.startswith("Condenser head")]
        return lines

    def condense(self, late: torch.Tensor, early: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The Condenser head over the late [CLS] (B, H) … ``late[:, :1]`` and the early token states
        ``early[:, 1:]``, both from (B, T, H), under the text's padding mask; returns (B, T, H)."""
        states = torch.cat([late[:, :1], early[:, 1:]], dim=1)  # (B, T, H)
        mask = create_bidirectional_mask(config=self.encoder.config, inputs_embeds=states,
                                         attention_mask=attention_mask)
        for layer in self.condenser_head:
            states = layer(states, mask)  # (B, T, H)
        return states

    def condenser_losses(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                         labels: torch.Tensor) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """L^c_mlm and L_mlm on a masked batch, and the backbone's late states (B, T, H) (coCondenser reads
        its [CLS])."""
        output = self.encoder(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
        late = output.last_hidden_state  # (B, T, H)
        head_states = self.condense(late, output.hidden_states[self.early_layer], attention_mask)  # (B, T, H)
        parts = {"condenser_mlm": self.mlm_loss(head_states, labels)}
        if self.config.late_mlm:
            parts["mlm"] = self.mlm_loss(late, labels)
        return parts, late

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                labels: torch.Tensor) -> ObjectiveOutput:
        """``input_ids`` is the masked text (B, T); ``labels`` the originals at targets, else -100."""
        parts, _ = self.condenser_losses(input_ids, attention_mask, labels)
        return ObjectiveOutput(loss=sum(parts.values()), parts=parts)
