"""What every pre-training objective is: a module that wraps the encoder, owns its auxiliary parts
(MLM head, decoder, projection ...), and returns its total loss together with the named parts."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from seedr.config.settings import MAX_LENGTH
from seedr.data.shards import TokenShardData
from seedr.engine.batches import TrainData
from seedr.modeling.encoder import save_encoder
from seedr.modeling.folders import EncoderShape, objective_pooling
from seedr.modeling.outputs import ObjectiveOutput
from seedr.retrieval.encode import model_defaults


@dataclasses.dataclass
class PretrainingCorpus:
    """The pre-training corpus as ``seedr.training.pretrain`` offers it to an objective, which takes what
    it needs (``Objective.training_data``, ``Objective.complete_options``): the corpus files (none: the
    embedded default corpus), the run's seed, the encoder's vocabulary size, and its token shards,
    tokenised on first use and shared by every run on the same corpus, tokenizer and length."""

    files: list[Path]
    seed: int
    vocab_size: int
    token_shards: Callable[[], TokenShardData]



def expected_longest(probabilities: Sequence[float], draws: int) -> float:
    """E[max] of ``draws`` independent lengths of distribution ``probabilities`` (P(length = k) for k = 0, 1,
    …): Σ_k≥1 P(max ≥ k) = Σ 1 − F(k−1)^n. A batch of rows of random lengths is padded to its longest, so
    this, not the mean length, is what each row costs (``multiply_adds_per_example``)."""
    expected, below = 0.0, 0.0  # below: F(k − 1)
    for probability in probabilities[:-1]:
        below += probability
        expected += 1.0 - min(below, 1.0) ** draws
    return expected

class Objective(nn.Module):
    """Base class of pre-training objectives.

    Subclasses, each in its folder's ``objective.py`` (``seedr.objectives.OBJECTIVES`` finds them there), set
    ``name`` (the folder's) and ``config_class`` (the dataclass of their options, in the folder's torch-free
    ``options.py``, where settings are resolved without torch; it also says the pooled vector the objective
    trains, ``trained_representation``), build their auxiliary modules in ``__init__(encoder, tokenizer, config)``, and implement:

    - ``collate(examples) -> dict[str, Tensor]``: turn a list of examples (token id lists for
      single-text objectives; dicts for two-tower ones) into exactly the keys ``forward`` takes;
    - ``forward(**batch) -> ObjectiveOutput``.

    Only ``self.encoder`` (a ``transformers`` model) is the product; ``save_encoder`` writes it in
    Hugging Face + sentence-transformers form. Everything else is saved in the training state so a
    run can resume.
    """

    name: ClassVar[str] = ""
    config_class: ClassVar[type] = object
    #: "tokens": examples are token-id lists cut from a tokenised corpus (MLM, SEED, CPDAE);
    #: "pairs": examples are (query, document) text pairs from a pair builder (ICT, BFS, WLP).
    input_kind: ClassVar[str] = "tokens"
    #: The diagnostics a run of this objective supports beyond its encoder's own
    #: (``seedr.diagnostics.diagnose``): "masked_lm" (an MLM head: held-out masked-token accuracy),
    #: "cls_reliance" (SEED-Encoder's weak decoder: its reliance on [CLS] by position, Figure 4),
    #: "decoded_words" (CPDAE's bag-of-words decoder: the words it decodes).
    diagnostics: ClassVar[frozenset[str]] = frozenset()
    #: The parts the objective adds to the encoder that start from random weights whatever encoder it is
    #: given ("weak decoder"): ``changes`` says so when a run starts from an encoder.
    new_parts: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def complete_options(cls, options: Any, corpus: PretrainingCorpus) -> None:
        """Fill in the options that come from the corpus before the objective is built (CPDAE's IDF table
        of ``idf_path: auto``); none by default."""

    @classmethod
    def multiply_adds_per_example(cls, options: Any, max_seq_length: int, shape: EncoderShape,
                                  *, batch_size: int) -> float:
        """Multiply-adds of one training example's forward pass through the encoder and the objective's
        own parts as a batch of ``batch_size`` runs them (rows padded to their batch's longest), which a
        ``flops_budget`` is spent by and an ETA sized with; held within 5% of ``FlopCounterMode``'s count
        of a real step (``seedr.training.measured_compute``, ``tests/test_measured_compute.py``). By
        default one text of ``max_seq_length`` tokens through the encoder."""
        return shape.sequence_multiply_adds(max_seq_length)

    @classmethod
    def training_data(cls, options: Any, corpus: PretrainingCorpus) -> TrainData:
        """What the objective trains on: the corpus's token shards, unless it draws other examples."""
        return corpus.token_shards()

    def __init__(self, encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, config: Any) -> None:
        super().__init__()
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.config = config

    def collate(self, examples: list[Any]) -> dict[str, torch.Tensor]:
        raise NotImplementedError(f"{type(self).__name__} does not define collate")

    @property
    def pooling(self) -> str:
        """How the saved encoder pools: the objective's ``bottleneck`` option where it has one (the vector its
        decoder reads was trained to be the text's representation), else its ``pooling`` (Contriever), else
        [CLS] (``seedr.modeling.folders.objective_pooling``, which resolving an experiment reads too)."""
        return objective_pooling(self.config)

    def changes(self, init: str) -> list[str]:
        """What starting this objective from the encoder ``init`` (a name or folder) changes of it, one line
        each, which a run prints as it starts and its model card records: the parts that start from random
        weights (``new_parts``), and a pooling other than the encoder had (``pooling`` is what the saved
        encoder records: SEED from MiniLM turns its mean pooling into [CLS]). Unannounced, both read as
        failures: an initial loss near ln V, a retriever fine-tuned through a vector that was never trained."""
        lines = [f"{part}: new, from random weights ({init} has none; it is trained with the encoder)"
                 for part in self.new_parts]
        before = model_defaults(init)["pooling"]
        if before != self.pooling:
            representation = self.config_class.trained_representation
            trained = (f" ({representation.format(pooling='[CLS]' if self.pooling == 'cls' else 'mean')})"
                       if representation else "")
            keep = (f"; objective.bottleneck={before} trains and keeps its {before} instead"
                    if hasattr(self.config, "bottleneck") else f"; fine-tune with pooling={before} to keep {init}'s")
            lines.append(f"pooling: the saved encoder pools by {self.pooling}{trained}, where {init} pooled by "
                         f"{before}{keep}")
        return lines

    def save_encoder(self, directory: str | os.PathLike, max_seq_length: int = MAX_LENGTH) -> Path:
        return save_encoder(self.encoder, self.tokenizer, directory, pooling=self.pooling,
                            max_seq_length=max_seq_length)


__all__ = ["Objective", "ObjectiveOutput", "PretrainingCorpus", "expected_longest"]
