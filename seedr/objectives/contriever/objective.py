"""Contriever (Izacard et al., TMLR 2022, "Unsupervised Dense Information Retrieval with Contrastive
Learning"): two independent random crops of a text are a positive pair; InfoNCE against the other texts'
crops (§3.1, §3.2 "Independent cropping"):

    s(q, k) = ⟨f_θ(q), f_θ(k)⟩                                                            (§3.1)
    L(q, k+) = −log exp(s(q, k+)/τ) / (exp(s(q, k+)/τ) + Σ_{i=1}^K exp(s(q, k_i)/τ))       (§3.1)

What seedr takes from the authors' released code (facebookresearch/contriever: ``src/data.py``,
``src/inbatch.py``, ``src/moco.py``, ``src/contriever.py``, ``example_scripts/contriever.sh``) where the
paper is brief:

- Crops (``randomcrop``): a ratio r ~ U(ratio_min, ratio_max), length ⌊n·r⌋ of the n-token chunk, start
  uniform over the positions where it fits; each crop then loses each token with probability 0.1
  (``deleteword``, ``--augmentation delete --prob_augmentation 0.1``) and gets [CLS] … [SEP]
  (``add_bos_eos``). The script's ratios are 0.05–0.5 (``rmin=0.05 rmax=0.5``; ``options.py``'s default
  minimum is 0.1). Its chunks are 256 tokens of the concatenated corpus; seedr's are the token-shard
  blocks, [CLS] and [SEP] stripped before cropping.
- f_θ is the average of the last layer's states over real tokens (``--pooling average``), not normalised
  (``--norm_query``/``--norm_doc`` unset, ``--score_function dot``): s is a plain dot product, divided by
  τ = 0.05 (``T=0.05``; ``options.py``'s default is 1). ``normalize: true`` is the cosine variant.
  Unnormalised vectors make the first logits large (a loss near 50 and a gradient norm near 1,000 from
  seedr-base, measured over the CPU-scale recipe's first steps), which the released code neither
  normalises nor clips.
- In-batch negatives (``InBatch``): the crops q of this process against the keys k of every process,
  gathered (seedr gathers with gradients, ``seedr.losses.gather``; the released ``dist_utils.gather``
  does too); the loss is the mean over this process's q. Only q → k, not symmetrised.
- The momentum queue (MoCo, He et al. 2020; ``MoCo``) is what the paper's released Contriever uses
  (queue 131,072, momentum 0.9995): off by default here (``queue_size: 0``): in-batch negatives, the
  paper's other mode (compared with MoCo in its ablations, §6), need no second encoder and are what every
  other in-batch loss of seedr uses.
  With ``queue_size > 0``: keys come from a key encoder, a copy of the encoder never trained by gradient
  and moved towards it by ``k ← m·k + (1 − m)·θ`` before every forward pass; q is scored against its own
  key and the queue (l_pos first, target 0); then the batch's keys, gathered from every process, replace
  the oldest in the queue, which starts as random unit vectors. As released, the key encoder runs in the
  objective's mode (dropout on in training), the queue size must be a multiple of the global batch, and
  under gradient accumulation the key encoder moves at every micro-batch (every step in the paper).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from pathlib import Path

import torch
from torch.nn import functional as F
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from seedr.config.settings import MAX_LENGTH
from seedr.losses.base import Similarity, candidate_scores
from seedr.losses.gather import gather_rows
from seedr.modeling.bow_decoder import at_least_float32
from seedr.modeling.encoder import pool, save_encoder
from seedr.modeling.folders import EncoderShape
from seedr.objectives.base import Objective, ObjectiveOutput
from seedr.objectives.contriever.options import ContrieverConfig
from seedr.objectives.masking import pad_token_ids


def random_crop(tokens: Sequence[int], ratio_min: float, ratio_max: float, deletion_probability: float,
                generator: torch.Generator | None = None) -> list[int]:
    """A contiguous span of ⌊n·r⌋ of the n ``tokens``, r ~ U(ratio_min, ratio_max), its start uniform over
    the positions where it fits, then each of its tokens deleted with ``deletion_probability``
    (the released ``randomcrop`` then ``deleteword``)."""
    ratio = ratio_min + (ratio_max - ratio_min) * torch.rand((), generator=generator).item()
    length = int(len(tokens) * ratio)
    start = int(torch.randint(len(tokens) - length + 1, (), generator=generator))
    crop = torch.as_tensor(list(tokens[start:start + length]), dtype=torch.long)  # (L,)
    kept = torch.rand(len(crop), generator=generator) > deletion_probability  # (L,)
    return crop[kept].tolist()


class Contriever(Objective):
    """Contriever: InfoNCE between two independent random crops of each text, mean-pooled, dot / τ, against
    the other texts' crops (in-batch, gathered across processes) or a MoCo queue.

    Parts: ``contriever`` (the whole loss); metric ``accuracy`` (share of crops whose own key scores
    highest).

    Example:
        >>> objective = OBJECTIVES.get("contriever")(encoder, tokenizer, ContrieverConfig())
        >>> batch = objective.collate(token_id_lists)  # two crops of each text
        >>> objective(**batch).parts["contriever"]
    """

    name = "contriever"
    config_class = ContrieverConfig

    @classmethod
    def multiply_adds_per_example(cls, options: ContrieverConfig, max_seq_length: int,
                                  shape: EncoderShape, *, batch_size: int) -> float:
        """Two crops of a full-length text through the encoder, each view's batch padded to its longest:
        the expected largest of ``batch_size`` crop ratios drawn uniformly (``lo + (hi − lo)·B/(B + 1)``)
        of the content tokens, less the deleted ones, plus [CLS] and [SEP]. With a queue the key's crop
        goes through the key encoder forward only: a third of a trained pass (forward, and backward twice
        its cost: ``seedr.training.compute_budget``)."""
        longest = options.ratio_min + (options.ratio_max - options.ratio_min) * batch_size / (batch_size + 1)
        crop = (max_seq_length - 2) * longest * (1 - options.deletion_probability) + 2
        key = 1.0 / 3.0 if options.queue_size else 1.0
        return (1 + key) * shape.sequence_multiply_adds(crop)

    def __init__(self, encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                 config: ContrieverConfig | None = None) -> None:
        super().__init__(encoder, tokenizer, config or ContrieverConfig())
        if None in (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id):
            raise ValueError("Contriever needs a tokenizer with [CLS], [SEP] and [PAD] tokens")
        if self.config.queue_size:
            self.key_encoder = copy.deepcopy(encoder).requires_grad_(False)
            queue = F.normalize(torch.randn(self.config.queue_size, encoder.config.hidden_size), dim=-1)  # (K, H)
            self.register_buffer("queue", queue)
            self.register_buffer("queue_position", torch.zeros((), dtype=torch.long))
            self.new_parts = ("MoCo key encoder and queue (training only)",)

    # ----- batches ---------------------------------------------------------------------------------

    def crops(self, examples: Sequence[Sequence[int]], generator: torch.Generator | None = None
              ) -> tuple[list[list[int]], list[list[int]]]:
        """Two independent crops of each ``[CLS] … [SEP]`` example, each ``[CLS] crop [SEP]``: ``(queries,
        keys)``. Randomness from ``generator``, else torch's global RNG (which the trainer seeds and
        checkpoints)."""
        options, cls, sep = self.config, self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        queries, keys = [], []
        for example in examples:
            text = example[1:-1]
            for views in (queries, keys):
                crop = random_crop(text, options.ratio_min, options.ratio_max, options.deletion_probability,
                                   generator)
                views.append([cls, *crop, sep])
        return queries, keys

    def collate(self, examples: Sequence[Sequence[int]], generator: torch.Generator | None = None
                ) -> dict[str, torch.Tensor]:
        queries, keys = self.crops(examples, generator)
        query_input_ids, query_attention_mask = pad_token_ids(queries, self.tokenizer.pad_token_id)  # (B, Tq)
        key_input_ids, key_attention_mask = pad_token_ids(keys, self.tokenizer.pad_token_id)  # (B, Tk)
        return {"query_input_ids": query_input_ids, "query_attention_mask": query_attention_mask,
                "key_input_ids": key_input_ids, "key_attention_mask": key_attention_mask}

    # ----- loss ------------------------------------------------------------------------------------

    def embed(self, encoder: PreTrainedModel, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """f(x): (B, H), pooled as configured, unit length under ``normalize``."""
        states = encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (B, T, H)
        vectors = at_least_float32(pool(states, attention_mask, self.config.pooling))  # (B, H): the softmax in float32
        return F.normalize(vectors, dim=-1) if self.config.normalize else vectors

    def in_batch_loss(self, queries: torch.Tensor, keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """InfoNCE of this process's queries (B, H) against the keys (B, H) of the batch (gathered from every
        process under ``global_in_batch``), mean over the queries: ``(loss, accuracy)``."""
        scores = candidate_scores(queries, keys, keys.new_zeros(len(keys), 0, keys.shape[-1]), Similarity("dot"),
                                  in_batch=True, global_in_batch=self.config.global_in_batch)  # (B, W·B)
        return F.cross_entropy(scores.scores / self.config.temperature, scores.target), scores.accuracy()

    def queue_loss(self, queries: torch.Tensor, keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """MoCo's InfoNCE: each query (B, H) against its own key (B, H, no gradient) and the queue (K, H),
        the positive in column 0: ``(loss, accuracy)``."""
        positive = (queries * keys).sum(-1, keepdim=True)  # (B, 1)
        negatives = queries @ self.queue.clone().T  # (B, K): a copy, as enqueue overwrites the queue before backward
        logits = torch.cat([positive, negatives], dim=1) / self.config.temperature  # (B, 1 + K)
        target = torch.zeros(len(queries), dtype=torch.long, device=queries.device)
        return F.cross_entropy(logits, target), (logits.argmax(-1) == 0).float().mean()

    @torch.no_grad()
    def momentum_update(self) -> None:
        """k ← m·k + (1 − m)·θ for every weight of the key encoder."""
        momentum = self.config.momentum
        for key, query in zip(self.key_encoder.parameters(), self.encoder.parameters(), strict=True):
            key.mul_(momentum).add_(query.detach(), alpha=1 - momentum)

    @torch.no_grad()
    def enqueue(self, keys: torch.Tensor) -> None:
        """The global batch's keys replace the oldest ones in the queue."""
        keys = gather_rows(keys.detach())  # (W·B, H)
        if self.config.queue_size % len(keys):
            raise ValueError(f"objective.queue_size ({self.config.queue_size}) must be a multiple of the global "
                             f"batch ({len(keys)} keys a step)")
        start = int(self.queue_position)
        self.queue[start:start + len(keys)] = keys.to(self.queue.dtype)
        self.queue_position.fill_((start + len(keys)) % self.config.queue_size)

    def forward(self, query_input_ids: torch.Tensor, query_attention_mask: torch.Tensor,
                key_input_ids: torch.Tensor, key_attention_mask: torch.Tensor) -> ObjectiveOutput:
        """The two crops of each text: ``query_*`` (B, Tq) and ``key_*`` (B, Tk)."""
        queries = self.embed(self.encoder, query_input_ids, query_attention_mask)  # (B, H)
        if self.config.queue_size:
            self.momentum_update()
            with torch.no_grad():
                keys = self.embed(self.key_encoder, key_input_ids, key_attention_mask)  # (B, H)
            loss, accuracy = self.queue_loss(queries, keys)
            self.enqueue(keys)
        else:
            keys = self.embed(self.encoder, key_input_ids, key_attention_mask)  # (B, H)
            loss, accuracy = self.in_batch_loss(queries, keys)
        return ObjectiveOutput(loss=loss, parts={"contriever": loss}, metrics={"accuracy": accuracy})

    def save_encoder(self, directory: str | os.PathLike, max_seq_length: int = MAX_LENGTH) -> Path:
        """The encoder alone (no key encoder), with the pooling and the score it was trained with."""
        return save_encoder(self.encoder, self.tokenizer, directory, pooling=self.config.pooling,
                            max_seq_length=max_seq_length, similarity="cosine" if self.config.normalize else "dot",
                            normalize=self.config.normalize)
