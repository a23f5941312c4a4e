"""TSDAE (Wang, Reimers and Gurevych, Findings of EMNLP 2021, "TSDAE: Using
Transformer-based Sequential Denoising Auto-Encoder for Unsupervised Sentence Embedding Learning", §3) trained
through sentence-transformers' own implementation, as a reference for ``adapt`` at equal compute (the
experiments' ``tsdae_st`` step, ``seedr.experiments.steps.tsdae_st``).

sentence-transformers' API used, unchanged: ``DenoisingAutoEncoderDataset`` (``sentence_transformer.datasets``:
each text as ``InputExample(texts=[noisy, original])``) and ``DenoisingAutoEncoderLoss``
(``sentence_transformer.losses``: a decoder built from the encoder's own checkpoint with cross-attention to the
sentence embedding alone, its weights tied to the encoder's — ``tie_encoder_decoder=True`` — reconstructing the
original text from the embedding of the noisy one, cross-entropy over its tokens). The loop around them is a
plain AdamW loop at TSDAE's settings (learning rate 3e-5, constant, batch 8, deletion ratio 0.6: the paper's
§3 and sentence-transformers' TSDAE example). Two departures, both forced: the noise is
``DenoisingAutoEncoderDataset.delete``'s (each word dropped with probability 0.6, at least one kept) over
whitespace words, passed as its ``noise_fn``, because the dataset's default tokenises with NLTK, which is
not installed here; and the pooling is the model's own (MiniLM's mean, as every other condition reads it),
where the paper pools [CLS] for a model trained from BERT.

Equal compute with ``adapt`` (``equal_compute``): the step count is that at which TSDAE's training
floating-point operations equal an adapt fine-tuning's of ``steps`` steps (``matched_steps``), both counted
as ``seedr.experiments.sizing`` counts training — multiply-adds per token from the encoder's shape,
× 2 per multiply-add × 3 for the backward pass, texts at their length caps:

- adapt, per example: a pseudo-query (``query_max_length``) and its positive and ``negatives`` hard negatives
  (``document_max_length`` each) through the encoder: ``(Lq + (1 + n)·Ld) · M``;
- TSDAE, per example: the noisy text (``1 − deletion`` of ``max_length``) through the encoder, the original
  (``max_length``) through the decoder — the encoder's layers plus each layer's cross-attention query and
  output projections (2·H²; its keys and values are of one vector) and the prediction head (H², then V·H):
  ``(1 − p)·L·M + L·(M + 2·layers·H² + H² + V·H)``, seedr's TSDAE objective's own count
  (``Tsdae.multiply_adds_per_example``).

Adapt's validations, its BM25 mining and its early stopping are not counted: the match is to adapt's full
budget of steps, which patience may cut short. The encoder (without the decoder) is written as a normal
encoder folder (``seedr.modeling.encoder.save_encoder``) in ``encoder/``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
from pathlib import Path
from typing import Any

import torch

from seedr.config.settings import FINETUNE_MODEL, QUERY_MAX_LENGTH
from seedr.data.corpus import article_document, read_corpus_articles
from seedr.data.training_log import METRICS
from seedr.hardware import resolve_mixed_precision
from seedr.io import atomic_directory, atomic_write
from seedr.modeling.encoder import save_encoder
from seedr.modeling.folders import declared_pooling, encoder_shape, resolve_model_path
from seedr.training.compute_budget import contrastive_multiply_adds, denoising_multiply_adds

#: TSDAE's batch (Wang et al. 2021, §3, and sentence-transformers' TSDAE example).
TSDAE_BATCH_SIZE = 8
#: The text length TSDAE and the adapt run it matches read (the ``adapt`` recipe's ``document_max_length``).
ADAPT_DOCUMENT_LENGTH = 256
#: The ``adapt`` recipe's batch.
ADAPT_BATCH_SIZE = 16


@dataclasses.dataclass
class EqualCompute:
    """The adapt fine-tuning whose training compute TSDAE matches (its ``train.max_steps``,
    ``train.batch_size``, lengths and hard negatives per query)."""

    steps: int = 0
    batch_size: int = ADAPT_BATCH_SIZE
    query_max_length: int = QUERY_MAX_LENGTH
    document_max_length: int = ADAPT_DOCUMENT_LENGTH
    negatives: int = 1


@dataclasses.dataclass
class TsdaeStConfig:
    """TSDAE through sentence-transformers.

    Attributes:
        model: the encoder to train (a built-in name, a folder, or the previous step's).
        corpus: the documents (paths; a BEIR folder stands for its ``corpus.jsonl``).
        max_documents: read only the corpus's first documents.
        max_length: tokens of a text, noisy and original (the model's ``max_seq_length``).
        batch_size: texts per step (TSDAE: 8).
        learning_rate: AdamW's, constant (TSDAE: 3e-5).
        deletion: the share of words deleted (TSDAE: 0.6).
        seed: the order, the noise and the initialisation of the decoder's cross-attention.
        max_steps: steps to train; null: ``matched_steps(equal_compute)``.
        equal_compute: the adapt fine-tuning to match in training FLOPs, when ``max_steps`` is null.
        mixed_precision: ``auto`` (bf16 where native, as seedr's training), ``bf16`` or ``no``.
    """

    model: str = FINETUNE_MODEL
    corpus: list[str] = dataclasses.field(default_factory=list)
    max_documents: int | None = None
    max_length: int = ADAPT_DOCUMENT_LENGTH
    batch_size: int = TSDAE_BATCH_SIZE
    learning_rate: float = 3.0e-5
    deletion: float = 0.6
    seed: int = 13
    max_steps: int | None = None
    equal_compute: EqualCompute | None = None
    mixed_precision: str = "auto"

    def __post_init__(self) -> None:
        if not self.corpus:
            raise ValueError("corpus is required: the documents to denoise")
        if not 0 < self.deletion < 1:
            raise ValueError(f"deletion must be in (0, 1), got {self.deletion}")
        if self.max_steps is None and (self.equal_compute is None or self.equal_compute.steps < 1):
            raise ValueError("max_steps, or equal_compute.steps (≥ 1: the adapt fine-tuning whose compute to match), "
                             "is required")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {self.max_steps}")
        for name in ("max_length", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_documents is not None and self.max_documents < 1:
            raise ValueError(f"max_documents must be at least 1, got {self.max_documents}")
        if self.mixed_precision not in ("auto", "bf16", "no"):
            raise ValueError(f"mixed_precision is auto, bf16 or no, not {self.mixed_precision!r}")


def matched_steps(config: TsdaeStConfig, shape: Any) -> int:
    """TSDAE's steps at the training FLOPs of ``config.equal_compute``'s adapt fine-tuning, for an encoder
    of ``shape`` (``seedr.modeling.folders.EncoderShape``; the module docstring gives both counts, which
    ``seedr.training.compute_budget`` computes); ``config.max_steps`` when given."""
    if config.max_steps is not None:
        return config.max_steps
    match = config.equal_compute
    adapt = match.steps * match.batch_size * contrastive_multiply_adds(
        shape, match.query_max_length, match.document_max_length, match.negatives)
    tsdae = config.batch_size * denoising_multiply_adds(shape, config.max_length, config.deletion,
                                                        config.batch_size)
    return max(1, round(adapt / tsdae))


def _noise(rng: random.Random, deletion: float):
    """``DenoisingAutoEncoderDataset.delete`` over whitespace words, from a seeded generator."""

    def delete(text: str) -> str:
        words = text.split()
        if not words:
            return text
        kept = [word for word in words if rng.random() > deletion]
        return " ".join(kept or [rng.choice(words)])

    return delete


def train_tsdae(config: TsdaeStConfig, out_dir: Path) -> dict[str, Any]:
    """Train ``config.model`` with ``DenoisingAutoEncoderLoss`` on the corpus's texts (title and text
    joined, as retrieval reads a document) for ``matched_steps`` steps; the encoder lands in
    ``out_dir/encoder``, the losses in ``out_dir/metrics.jsonl``."""
    # here, not at the top: sentence-transformers takes 2.5 s to import, which every experiment would wait for
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.datasets import DenoisingAutoEncoderDataset
    from sentence_transformers.sentence_transformer.losses import DenoisingAutoEncoderLoss

    class Dataset(DenoisingAutoEncoderDataset):
        """The dataset with its ``noise_fn`` given, without its NLTK check (only its default noise needs NLTK)."""

        def __init__(self, sentences: list[str], noise_fn: Any) -> None:  # noqa: D107
            self.sentences, self.noise_fn = sentences, noise_fn

    folder = resolve_model_path(config.model)
    steps = matched_steps(config, encoder_shape(folder))
    documents = [article_document(article) for article in
                 itertools.islice(read_corpus_articles(config.corpus), config.max_documents)]
    texts = [" ".join(part for part in (document.title, document.text) if part) for document in documents]
    texts = [text for text in texts if text.strip()]
    if not texts:
        raise ValueError(f"{', '.join(config.corpus)}: no text to denoise")
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    model = SentenceTransformer(str(folder), device="cpu" if not torch.cuda.is_available() else "cuda")
    model.max_seq_length = config.max_length
    loss = DenoisingAutoEncoderLoss(model, tie_encoder_decoder=True)
    loss.train()
    dataset = Dataset(texts, _noise(rng, config.deletion))
    optimizer = torch.optim.AdamW([p for p in loss.parameters() if p.requires_grad], lr=config.learning_rate)
    device = model.device
    autocast = resolve_mixed_precision(config.mixed_precision, device) == "bf16"
    order: list[int] = []
    log = []
    for step in range(1, steps + 1):
        if len(order) < config.batch_size:
            fresh = list(range(len(dataset)))
            rng.shuffle(fresh)
            order += fresh
        batch, order = [dataset[i] for i in order[: config.batch_size]], order[config.batch_size:]
        features = [{key: value.to(device) for key, value in model.tokenize([e.texts[column] for e in batch]).items()
                     if isinstance(value, torch.Tensor)} for column in (0, 1)]
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
            value = loss(features, None)
        optimizer.zero_grad(set_to_none=True)
        value.backward()
        optimizer.step()
        log.append({"step": step, "loss": float(value.detach())})
    with atomic_write(out_dir / METRICS) as stream:
        stream.writelines(json.dumps(entry) + "\n" for entry in log)
    with atomic_directory(out_dir / "encoder") as temporary:
        save_encoder(model.transformers_model, model.tokenizer, temporary, pooling=declared_pooling(folder),
                     max_seq_length=config.max_length)
    return {"steps": steps, "documents": len(texts), "loss": log[-1]["loss"],
            "first_loss": log[0]["loss"], "encoder": str(out_dir / "encoder")}


__all__ = ["ADAPT_BATCH_SIZE", "ADAPT_DOCUMENT_LENGTH", "TSDAE_BATCH_SIZE", "EqualCompute", "TsdaeStConfig",
           "matched_steps", "train_tsdae"]
