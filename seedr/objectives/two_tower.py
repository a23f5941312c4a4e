"""The two-tower contrastive kernel shared by ICT, BFS, WLP and their mix (Chang et al., ICLR 2020).

The paper's model (sec. 2, 4.1): a query tower φ and a document tower ψ, each a BERT encoder whose
embedding is a linear layer on the [CLS] state (dimension 512), scored by the inner product
f(q, d) = ⟨φ(q), ψ(d)⟩ (Eq. 1) and trained by maximum likelihood of the positive document under a
softmax over documents (Eq. 3), approximated by the sampled softmax over the documents of the batch.
The tasks differ *only* in how the positive (query, document) pairs are made (sec. 3), so this module
holds everything else:

- the pairs themselves (``Pair``), built by the tasks of ``seedr.objectives.pair_tasks``;
- ``PairData``: the ``TrainData`` of two-tower objectives, a fresh draw of pairs each epoch,
  deterministic in (seed, epoch), mixing several tasks uniformly (the paper's "ICT+BFS+WLP", sec. 4.1);
- ``pair_data_for``: ``PairData`` for an objective name and corpus files (wiki shards or FOLDOC);
- ``TwoTowerObjective``: collate + a ``DualEncoder`` + the loss ``seedr.losses.in_batch_softmax``.

Where the paper is silent we follow BERT and DPR (Karpukhin et al., 2020) and say so below.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn
from torch.utils.data import Dataset
from tqdm.auto import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from seedr.config.settings import MAX_LENGTH
from seedr.data.articles import read_articles
from seedr.data.glossary import read_glossary
from seedr.data.links import recover_title_links
from seedr.data.records import Article
from seedr.io import DataError, iter_jsonl
from seedr.losses.base import Similarity, in_batch_false_negatives
from seedr.losses.gather import document_key
from seedr.losses.gradient_cache import GradientCacheSplit
from seedr.losses.in_batch_softmax import InBatchSoftmaxLoss
from seedr.modeling.folders import EncoderShape
from seedr.modeling.projection import Projection
from seedr.objectives import OBJECTIVES
from seedr.objectives.base import Objective, ObjectiveOutput, PretrainingCorpus
from seedr.objectives.pair_tasks import PAIR_TASKS, Pair, PairTask
from seedr.objectives.two_tower_options import PairConfig, TwoTowerConfig
from seedr.retrieval.dual_encoder import DualEncoder
from seedr.retrieval.encode import tokenize_pairs

class PairDataset(Dataset):
    """One epoch of pairs: position ``i`` is a pair of task ``task_of[i]``.

    With several tasks each position's task is drawn uniformly, as "each pair is uniformly sampled
    from the three pre-training tasks" (sec. 4.1); within a task the units are visited in a random
    order, each once before any repeats. Each pair is drawn with a generator seeded by
    (seed, epoch, position), so ``dataset[i]`` is the same whenever and in whichever worker it is read.
    """

    def __init__(self, tasks: Sequence[PairTask], seed: int, epoch: int, size: int) -> None:
        self.tasks, self.seed, self.epoch = list(tasks), seed, epoch
        rng = np.random.default_rng([seed, epoch])
        self.task_of = (rng.integers(len(self.tasks), size=size) if len(self.tasks) > 1
                        else np.zeros(size, dtype=np.int64))
        self.rank = np.empty(size, dtype=np.int64)  # how many earlier positions drew the same task
        for task_index in range(len(self.tasks)):
            positions = np.flatnonzero(self.task_of == task_index)
            self.rank[positions] = np.arange(len(positions))
        self.orders = [rng.permutation(len(task)) for task in self.tasks]
        # Q of a pair of task t at any position: the task's draw (1/T) times its unit's (1/N_t).
        self.log_q = [-float(np.log(len(self.tasks) * len(task))) for task in self.tasks]

    def __len__(self) -> int:
        return len(self.task_of)

    def __getitem__(self, index: int) -> Pair:
        if not 0 <= index < len(self):
            raise IndexError(f"pair {index} of an epoch of {len(self)}")
        task_index = int(self.task_of[index])
        order = self.orders[task_index]
        unit = int(order[self.rank[index] % len(order)])
        pair = self.tasks[task_index].pair(unit, np.random.default_rng([self.seed, self.epoch, index]))
        return dataclasses.replace(pair, log_q=self.log_q[task_index])


class PairData:
    """The training data of a two-tower objective: ``dataset(epoch)`` is a new draw of pairs per epoch.

    Args:
        tasks: the pair builders (one for ICT/BFS/WLP, three for their mix).
        seed: with the epoch, determines every pair.
        pairs_per_epoch: default one pair per unit of every task (``sum(len(task))``).

    Example (``pair_data_for`` builds one from corpus files):
        >>> shard = "../shared/data/wiki/enwiki-2015-00.jsonl.xz"
        >>> data = pair_data_for("ict", shard, seed=13)  # doctest: +SKIP
        >>> data.dataset(epoch=0)[0].query  # doctest: +SKIP
    """

    def __init__(self, tasks: Sequence[PairTask], seed: int, pairs_per_epoch: int | None = None) -> None:
        empty = [task.name for task in tasks if len(task) == 0]
        if not tasks or empty:
            raise ValueError(f"no pairs for task(s) {empty or '(none given)'}")
        self.tasks, self.seed = list(tasks), seed
        self.pairs_per_epoch = pairs_per_epoch or sum(len(task) for task in tasks)

    def __len__(self) -> int:
        return self.pairs_per_epoch

    def dataset(self, epoch: int) -> PairDataset:
        return PairDataset(self.tasks, self.seed, epoch, self.pairs_per_epoch)


def _corpus_kind(path: str | os.PathLike) -> str:
    """``"glossary"`` for FOLDOC/Jargon entries (``headword``), ``"wiki"`` for structured articles."""
    for _, record in iter_jsonl(path):
        return "glossary" if "headword" in record else "wiki"
    raise DataError(path, "empty: no article to build pairs from")


def read_pair_corpus(paths: Iterable[str | os.PathLike], config: PairConfig, links: bool) -> list[Article]:
    """Articles to draw pairs from: wiki bundle shards and/or FOLDOC/Jargon files (``max_articles``).

    With ``links``, wiki articles get links recovered from title mentions (their hyperlinks were
    stripped); glossary entries keep their real ``{cross-links}``.
    """
    wiki: list[Article] = []
    glossary: list[Article] = []
    remaining = config.max_articles
    for path in paths:
        if remaining is not None and remaining <= 0:
            break
        kind = _corpus_kind(path)
        reader = read_glossary(path) if kind == "glossary" else read_articles(path)
        articles = list(tqdm(itertools.islice(reader, remaining), desc=f"read {Path(path).name}",
                             unit=" articles", disable=None, leave=False))
        (glossary if kind == "glossary" else wiki).extend(articles)
        remaining = None if remaining is None else remaining - len(articles)
    if links and wiki:
        wiki = recover_title_links(wiki, min_title_words=config.min_title_words)
    return wiki + glossary


def pair_data_for(objective_name: str, corpus_paths: Sequence[str | os.PathLike] | str | os.PathLike,
                  seed: int, config: PairConfig | None = None) -> PairData:
    """``PairData`` for a registered two-tower objective (``ict``, ``bfs``, ``wlp``, ``ict_bfs_wlp``).

    Args:
        objective_name: the objective; its ``tasks`` say which pair builders to use.
        corpus_paths: wiki bundle shards (``{"id", "title", "lead", "sections"}`` JSONL) and/or FOLDOC
            / Jargon files (``{"headword", "text", "links"}``), compressed or not.
        seed: with the epoch, determines every pair.
        config: see ``PairConfig``.

    Raises:
        ValueError: the objective does not train on pairs, or a task finds no pair in the corpus.
    """
    objective = OBJECTIVES.get(objective_name)
    if objective.input_kind != "pairs":
        pair_objectives = [name for name in OBJECTIVES if OBJECTIVES.get(name).input_kind == "pairs"]
        raise ValueError(f"objective {objective_name!r} does not train on (query, document) pairs; "
                         f"these do: {', '.join(pair_objectives)}")
    config = config or PairConfig()
    paths = [corpus_paths] if isinstance(corpus_paths, str | os.PathLike) else list(corpus_paths)
    articles = read_pair_corpus(paths, config, links="wlp" in objective.tasks)
    tasks = [PAIR_TASKS.get(name)(articles, config) for name in objective.tasks]
    for task in tasks:
        if len(task) == 0:
            raise DataError(", ".join(map(str, paths)), f"no {task.name} pair can be built from these "
                            f"articles")
    return PairData(tasks, seed, config.pairs_per_epoch)


# ---------------------------------------------------------------------------------------------- objective


class TwoTowerObjective(Objective):
    """Two-tower pre-training with the in-batch sampled softmax (ICLR 2020, Eq. 1 and 3).

    The model is a ``seedr.retrieval.dual_encoder.DualEncoder`` (``self.towers``), the one two-tower model
    of seedr, which fine-tuning trains further: [CLS] pooling (``pool``), then the optional projection,
    scored by the inner product, with the loss ``seedr.losses.in_batch_softmax``. The objective adds what
    pre-training has and fine-tuning has not: the pairs (``collate``), each pair's log Q for the loss's
    correction, and one loss part per task.

    Subclasses only name their tasks (``tasks``); ``collate`` turns their ``Pair``s into the
    tokenised towers' inputs: the query alone (64 tokens) and the document as the text pair
    ``title [SEP] passage`` (288 tokens, the paper's input for ICT, sec. 4.1; we use it for every
    task, and DPR's convention: token type 1 on the passage, the passage alone when there is no title).

    ``forward`` returns ``ObjectiveOutput(loss, parts, metrics)``: ``parts`` has one entry per task, the
    sum of the losses of that task's rows divided by the batch size, so the parts add up to ``loss``
    (for a single task, the part is the loss); ``metrics`` has the in-batch top-1 ``accuracy`` and, with
    several tasks, each task's own (``accuracy/ict``: the share of that task's queries whose own document
    ranks first in the batch; 0 in a batch without the task, as its loss part) — whether the towers learn
    every task or ride on the easiest one.

    The product is the query tower (= the shared encoder), saved by ``DualEncoder.save``: with the
    projection, if any, as a sentence-transformers ``Dense`` module (``2_Dense/``), so
    ``SentenceTransformer(dir)`` gives the projected embedding while ``AutoModel`` loads the backbone.
    A separate document tower goes to ``doc_encoder/`` inside it, where ``DualEncoder.from_pretrained``
    finds it for fine-tuning.

    Any encoder whose output's first state is its sequence embedding works too, e.g. the BoW-MLP
    baseline (``seedr.modeling.bow_mlp``).
    """

    config_class = TwoTowerConfig
    input_kind = "pairs"
    #: Names of the ``PAIR_TASKS`` whose pairs this objective trains on.
    tasks: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def multiply_adds_per_example(cls, options: TwoTowerConfig, max_seq_length: int,
                                  shape: EncoderShape, *, batch_size: int) -> float:
        """A pair: the query and the ``title [SEP] passage`` document through a tower each, at their own
        lengths (not ``max_seq_length``), to which every batch is padded (``collate``)."""
        return (shape.sequence_multiply_adds(options.query_max_length)
                + shape.sequence_multiply_adds(options.document_max_length))

    @classmethod
    def training_data(cls, options: TwoTowerConfig, corpus: PretrainingCorpus) -> PairData:
        """(query, document) pairs drawn from the corpus files every epoch (``pair_data_for``)."""
        if not corpus.files:
            raise ValueError(f"objective {cls.name!r} draws (query, document) pairs from structured articles: "
                             "give the corpus (data.corpus / --corpus), e.g. the wiki shards or FOLDOC")
        return pair_data_for(cls.name, corpus.files, corpus.seed, options.pairs)

    def __init__(self, encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                 config: TwoTowerConfig | None = None) -> None:
        super().__init__(encoder, tokenizer, config or TwoTowerConfig())
        dim = self.config.projection_dim
        projection = Projection(encoder.config.hidden_size, dim) if dim is not None else None
        separate = self.config.separate_towers
        # Separate towers are distinct modules, never two names for one: checkpoints hold no shared tensors.
        # So the query tower is registered once, in the towers: ``encoder`` (the product) reads it there.
        del self._modules["encoder"]
        self.towers = DualEncoder(
            encoder, tokenizer, InBatchSoftmaxLoss(global_in_batch=self.config.global_in_batch),
            document_encoder=copy.deepcopy(encoder) if separate else None, pooling="cls",
            similarity=Similarity("dot"), query_max_length=self.config.query_max_length,
            document_max_length=self.config.document_max_length, query_projection=projection,
            document_projection=copy.deepcopy(projection) if separate and projection is not None else None)
        self.register_load_state_dict_pre_hook(_read_former_names)

    @property
    def encoder(self) -> PreTrainedModel:  # type: ignore[override]
        """The query tower (= the shared encoder): the product."""
        return self.towers.query_encoder

    @property
    def projection(self) -> Projection | None:
        return self.towers.query_projection

    @property
    def document_encoder(self) -> PreTrainedModel | None:
        """The separate document tower, ``None`` when shared."""
        return self.towers.document_encoder

    @property
    def document_projection(self) -> Projection | None:
        return self.towers.document_projection

    @property
    def embedding_dim(self) -> int:
        return self.config.projection_dim or self.encoder.config.hidden_size

    def collate(self, examples: list[Pair]) -> dict[str, torch.Tensor]:
        unknown = sorted({pair.task for pair in examples} - set(self.tasks))
        if unknown:
            raise ValueError(f"the {self.name} objective got pairs of task(s) {unknown}; "
                             f"it trains on {list(self.tasks)}")
        # Both towers pad to their full lengths: the compute a step spends is then what the budget counts
        # (``multiply_adds_per_example``), whatever the batch's sentences, and the shapes are static.
        queries = self.tokenizer([pair.query for pair in examples], max_length=self.config.query_max_length,
                                 truncation=True, padding="max_length", return_tensors="pt")
        documents = self._tokenize_documents(examples)
        batch = {
            "query_input_ids": queries["input_ids"],  # (B, Tq)
            "query_attention_mask": queries["attention_mask"],
            "document_input_ids": documents["input_ids"],  # (B, Td)
            "document_attention_mask": documents["attention_mask"],
            "document_token_type_ids": documents["token_type_ids"],
            # identical documents (the same passage drawn twice) have the same key: not negatives of each other
            "document_keys": torch.tensor([document_key(pair.title, pair.document) for pair in examples]),  # (B,)
            "task_ids": torch.tensor([self.tasks.index(pair.task) for pair in examples]),  # (B,)
        }
        if self.config.log_q_correction:
            batch["document_log_q"] = torch.tensor([pair.log_q for pair in examples])  # (B,)
        return batch

    def _tokenize_documents(self, examples: list[Pair]) -> dict[str, torch.Tensor]:
        """``title [SEP] passage`` per pair (the passage alone without a title), padded to the document
        tower's length."""
        firsts = [pair.title or pair.document for pair in examples]
        seconds = [pair.document if pair.title else None for pair in examples]
        encoded = tokenize_pairs(self.tokenizer, firsts, seconds, self.config.document_max_length)
        return self.tokenizer.pad(encoded, padding="max_length", max_length=self.config.document_max_length,
                                  return_tensors="pt")

    def embed_queries(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """φ(q): (B, D)."""
        return self.towers.encode_queries(input_ids, attention_mask)

    def embed_documents(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                        token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """ψ(d): (B, D), from the document tower when separate."""
        return self.towers.encode_documents(input_ids, attention_mask, token_type_ids)

    def forward(self, query_input_ids: torch.Tensor, query_attention_mask: torch.Tensor,
                document_input_ids: torch.Tensor, document_attention_mask: torch.Tensor,
                task_ids: torch.Tensor, document_token_type_ids: torch.Tensor | None = None,
                document_keys: torch.Tensor | None = None,
                document_log_q: torch.Tensor | None = None) -> ObjectiveOutput:
        queries = self.embed_queries(query_input_ids, query_attention_mask)  # (B, D)
        documents = self.embed_documents(document_input_ids, document_attention_mask,
                                         document_token_type_ids)  # (B, D)
        return self.loss_from_embeddings(queries, documents, task_ids, document_keys, document_log_q)

    def split_for_gradient_cache(self, query_input_ids: torch.Tensor, query_attention_mask: torch.Tensor,
                                 document_input_ids: torch.Tensor, document_attention_mask: torch.Tensor,
                                 task_ids: torch.Tensor, document_token_type_ids: torch.Tensor | None = None,
                                 document_keys: torch.Tensor | None = None,
                                 document_log_q: torch.Tensor | None = None) -> GradientCacheSplit:
        """``forward``'s batch as its two towers (``DualEncoder.split_for_gradient_cache``) and the
        loss's other inputs (``train.gradient_cache``)."""
        towers = self.towers.split_for_gradient_cache(query_input_ids, query_attention_mask, document_input_ids,
                                                      document_attention_mask,
                                                      document_token_type_ids=document_token_type_ids).towers
        return GradientCacheSplit(towers, {"task_ids": task_ids, "document_keys": document_keys,
                                           "document_log_q": document_log_q})

    def loss_from_embeddings(self, queries: torch.Tensor, documents: torch.Tensor, task_ids: torch.Tensor,
                             document_keys: torch.Tensor | None = None,
                             document_log_q: torch.Tensor | None = None) -> ObjectiveOutput:
        """The loss of ``forward`` given φ(q) (B, D) and ψ(d) (B, D)."""
        loss = self.towers.loss
        false_negatives = (None if document_keys is None else
                           in_batch_false_negatives(document_keys[:, None], document_keys, loss.global_in_batch))
        no_negatives = documents.new_zeros(documents.shape[0], 0, documents.shape[-1])  # (B, 0, D)
        losses, correct = loss.per_query(queries, documents, no_negatives, self.towers.similarity,
                                         false_negatives, document_log_q)  # (B,), (B,)
        batch = losses.shape[0]
        # every task always has its part (0 when absent from the batch), so all processes log the same names
        parts = {task: losses[task_ids == index].sum().detach() / batch for index, task in enumerate(self.tasks)}
        metrics = {"accuracy": correct.float().mean()}
        if len(self.tasks) > 1:
            for index, task in enumerate(self.tasks):
                rows = task_ids == index
                metrics[f"accuracy/{task}"] = correct[rows].float().sum() / rows.sum().clamp(min=1)
        return ObjectiveOutput(losses.mean(), parts, metrics)

    def save_encoder(self, directory: str | os.PathLike, max_seq_length: int = MAX_LENGTH) -> Path:
        """The towers as ``DualEncoder.save`` writes them: what ``DualEncoder.from_pretrained`` reads to
        fine-tune with the same towers, pooling and score."""
        return self.towers.save(directory, max_seq_length=max_seq_length)


#: Where the towers' weights were named before the objective wrapped a ``DualEncoder``.
_FORMER_NAMES = {"encoder.": "towers.query_encoder.", "projection.": "towers.query_projection.",
                 "document_encoder.": "towers.document_encoder.",
                 "document_projection.": "towers.document_projection."}


def _read_former_names(module: nn.Module, state_dict: dict[str, torch.Tensor], prefix: str, *_: Any) -> None:
    """A checkpoint of a run trained before the objective wrapped a ``DualEncoder`` still resumes (and
    ``seedr diagnose`` still reads it): its towers' names are mapped to the new ones as it loads."""
    for key in [key for key in state_dict if key.startswith(prefix)]:
        name = key[len(prefix):]
        former = next((old for old in _FORMER_NAMES if name.startswith(old)), None)
        if former is not None:
            state_dict[prefix + _FORMER_NAMES[former] + name[len(former):]] = state_dict.pop(key)
