"""The dual encoder fine-tuned for dense retrieval: queries and documents embedded apart, scored by a
similarity of their sequence embeddings (SEED-Encoder's "Siamese" set-up, DPR, ANCE, CPDAE).

By default one encoder serves both sides (Siamese: SEED-Encoder §4.2, CPDAE §4.1, ANCE); separate
query and document towers (DPR, the ICLR 2020 two-tower models) are an option. A tower may end in
a projection of its pooled embedding (the ICLR 2020 paper's linear layer on [CLS], sec. 4.1), which
is part of the embedding: loaded with the model, trained with it, saved with it. The product is the
query encoder, saved in Hugging Face + sentence-transformers form (the projection as a ``Dense``
module), with the document tower in ``doc_encoder/`` beside it when the towers are separate.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from seedr.config.settings import ENCODE_BATCH_SIZE, MAX_LENGTH, QUERY_MAX_LENGTH
from seedr.data.records import Document, Run
from seedr.data.runs import run_from_topk
from seedr.losses.base import RetrievalLoss, Similarity, in_batch_false_negatives
from seedr.losses.gradient_cache import GradientCacheSplit, Tower
from seedr.modeling.encoder import (
    SETTINGS_FILE,
    Pooling,
    check_encoder_folder,
    load_encoder,
    load_tokenizer,
    pool,
    resolve_model_path,
    save_encoder,
)
from seedr.modeling.outputs import ObjectiveOutput
from seedr.modeling.projection import Projection, load_projection
from seedr.retrieval.encode import DOCUMENT_TOWER, TITLE_MODES, document_input, encode_texts, model_defaults
from seedr.retrieval.faiss_index import DenseIndex


def saved_settings(model: str | os.PathLike) -> dict[str, object]:
    """Towers, pooling, similarity, scale and title mode recorded in a model folder (``SETTINGS_FILE``,
    written beside the saved encoder so a fine-tuned model reloads as it was trained).

    seedr's own settings file when there is one; otherwise what the sentence-transformers files say
    (``seedr.retrieval.encode.model_defaults``): a model such as all-MiniLM was trained with mean pooling
    and cosine (a ``Normalize`` module, or ``similarity_fn_name``), and fine-tuning it with [CLS] would
    throw that away.
    """
    path = resolve_model_path(model)
    if (path / SETTINGS_FILE).exists():
        return json.loads((path / SETTINGS_FILE).read_text())
    defaults = model_defaults(path)
    similarity = "cosine" if defaults["normalize"] else "dot"
    st_file = path / "config_sentence_transformers.json"
    if st_file.exists() and json.loads(st_file.read_text()).get("similarity_fn_name") == "cosine":
        similarity = "cosine"
    return {"pooling": defaults["pooling"], "similarity": similarity}


class DualEncoder(nn.Module):
    """Query and document encoders + a similarity + a fine-tuning loss.

    ``forward(**batch)`` takes the keys the fine-tuning collator emits (``query_input_ids`` (B, Tq),
    ``query_attention_mask``, ``document_input_ids`` (B·(1+N), Td) — the B positives first, then the
    N hard negatives of each query in query order —, ``document_attention_mask``, optional
    ``*_token_type_ids``, and ``document_keys`` (B·(1+N),) with ``relevant_keys`` (B, R), from which the
    in-batch false negatives are found across processes: ``seedr.losses.base.in_batch_false_negatives``)
    and returns ``ObjectiveOutput(loss,
    {loss name: loss}, {"accuracy": ...})`` — accuracy being the share of queries whose positive
    outscores all their negatives —, so the shared ``seedr.engine.trainer.Trainer`` runs it.

    Args:
        query_encoder: a ``transformers`` encoder; also the document encoder unless one is given.
        tokenizer: its tokenizer (saved with the product).
        loss: a ``seedr.losses`` loss (``None`` for a model that only encodes, e.g. to mine negatives).
        document_encoder: a separate document tower, or ``None`` for the Siamese (shared) set-up.
        pooling: ``"cls"`` (the papers' [CLS] embedding) or ``"mean"``.
        similarity: dot product (the papers, the default) or scaled cosine.
        query_max_length, document_max_length: tokens kept per query / document (512 for documents is
            ANCE's FirstP: the first 512 tokens, the rest cut off).
        query_projection: a layer on the query tower's pooled embedding (also the document tower's when
            Siamese), e.g. the two-tower models' linear layer; ``None``: the pooled embedding itself.
        document_projection: the separate document tower's own projection.
        title: how documents' titles are encoded (``seedr.retrieval.encode.document_input``: ``pair``,
            ``join`` or ``none``), in training and search alike; saved with the model.
    """

    def __init__(self, query_encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                 loss: RetrievalLoss | None = None, document_encoder: PreTrainedModel | None = None,
                 pooling: Pooling = "cls", similarity: Similarity | None = None, query_max_length: int = QUERY_MAX_LENGTH,
                 document_max_length: int = MAX_LENGTH, query_projection: Projection | None = None,
                 document_projection: Projection | None = None, title: str = "pair") -> None:
        super().__init__()
        if title not in TITLE_MODES:
            raise ValueError(f"unknown title mode {title!r}; valid: {', '.join(TITLE_MODES)}")
        if document_encoder is None and document_projection is not None:
            raise ValueError("a document projection needs a separate document tower (document_encoder)")
        if document_encoder is not None:
            dims = [projection.out_features if projection is not None else encoder.config.hidden_size
                    for encoder, projection in ((query_encoder, query_projection),
                                                (document_encoder, document_projection))]
            if dims[0] != dims[1]:
                raise ValueError(f"the query tower embeds into {dims[0]} dimensions, the document tower into "
                                 f"{dims[1]}: their inner products are undefined")
        self.query_encoder = query_encoder
        self.document_encoder = document_encoder
        self.query_projection = query_projection
        self.document_projection = document_projection
        self.tokenizer = tokenizer
        self.loss = loss
        self.pooling = pooling
        self.similarity = similarity or Similarity()
        self.query_max_length = query_max_length
        self.document_max_length = document_max_length
        self.title = title

    @classmethod
    def from_pretrained(cls, model: str | os.PathLike, loss: RetrievalLoss | None = None, shared: bool | None = None,
                        pooling: Pooling | None = None, similarity: str | None = None,
                        scale: float | None = None, query_max_length: int = QUERY_MAX_LENGTH,
                        document_max_length: int = MAX_LENGTH, title: str | None = None) -> DualEncoder:
        """Start from a local model folder (or ``minilm``, or a seedr run folder).

        ``shared``/``pooling``/``similarity``/``scale``/``title`` default to what the folder records (see
        ``saved_settings``), else one shared encoder, [CLS], dot product and title [SEP] text pairs. With ``shared=False`` the
        document tower is the folder's ``doc_encoder/`` if it has one, else a copy of the query encoder
        (DPR initialises both towers from the same BERT). Each tower's projection (a sentence-transformers
        ``Dense`` module, as two-tower pre-training saves it) comes with it.
        """
        path = resolve_model_path(model)
        settings = saved_settings(path)
        shared = bool(settings.get("shared", True)) if shared is None else shared
        query_encoder, query_projection = load_encoder(path), load_projection(path)
        document_encoder = document_projection = None
        if not shared and (path / DOCUMENT_TOWER).is_dir():
            document_encoder = load_encoder(path / DOCUMENT_TOWER)
            document_projection = load_projection(path / DOCUMENT_TOWER)
        elif not shared:
            document_encoder, document_projection = copy.deepcopy(query_encoder), copy.deepcopy(query_projection)
        similarity_name = similarity or str(settings.get("similarity", "dot"))
        default_scale = 20.0 if similarity_name == "cosine" else 1.0  # sentence-transformers' MNRL default
        return cls(query_encoder, load_tokenizer(path), loss, document_encoder,
                   pooling=pooling or settings.get("pooling", "cls"),  # type: ignore[arg-type]
                   similarity=Similarity(similarity_name,  # type: ignore[arg-type]
                                         scale if scale is not None else float(settings.get("scale", default_scale))),
                   query_max_length=query_max_length, document_max_length=document_max_length,
                   query_projection=query_projection, document_projection=document_projection,
                   title=title or str(settings.get("title", "pair")))

    @staticmethod
    def check_folder(model: str | os.PathLike, shared: bool | None = None) -> None:
        """Refuse what ``from_pretrained(model, shared=shared)`` would refuse of the folder — its settings,
        each tower's encoder (``check_encoder_folder``) and projection, its tokenizer — without building an
        encoder: a run asks it before it writes anything, so that a refused model leaves no run folder."""
        path = resolve_model_path(model)
        settings = saved_settings(path)
        shared = bool(settings.get("shared", True)) if shared is None else shared
        document_tower = [path / DOCUMENT_TOWER] if not shared and (path / DOCUMENT_TOWER).is_dir() else []
        for tower in [path, *document_tower]:
            check_encoder_folder(tower)
            load_projection(tower)  # a small layer, and its refusals of modules.json and pickled weights
        load_tokenizer(path)

    def reinitialize(self, seed: int) -> None:
        """Fresh weights in every tower, the architecture and vocabulary kept (seeded): the "No
        Pretraining" rows of Chang et al. (ICLR 2020, Tables 3-4), a randomly initialised Transformer
        fine-tuned on the same pairs. Each encoder runs its own initialiser (BERT's: normal, std 0.02)
        after its loaded-weight marks are cleared: transformers skips the weights it marks as loaded."""
        torch.manual_seed(seed)
        for encoder in (self.query_encoder, self.document_encoder):
            if encoder is None:
                continue
            for marked in [*encoder.modules(), *encoder.parameters(), *encoder.buffers()]:
                if hasattr(marked, "_is_hf_initialized"):
                    del marked._is_hf_initialized
            encoder.apply(encoder._init_weights)
        for projection in (self.query_projection, self.document_projection):
            for module in projection.modules() if projection is not None else ():
                if isinstance(module, nn.Linear):
                    module.reset_parameters()

    @property
    def shared(self) -> bool:
        return self.document_encoder is None

    def _document_tower(self) -> tuple[PreTrainedModel, Projection | None]:
        """The document encoder and its projection: the query tower's when Siamese."""
        if self.document_encoder is None:
            return self.query_encoder, self.query_projection
        return self.document_encoder, self.document_projection

    def _embed(self, encoder: PreTrainedModel, projection: Projection | None, input_ids: torch.Tensor,
               attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None) -> torch.Tensor:
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            inputs["token_type_ids"] = token_type_ids
        hidden = encoder(**inputs).last_hidden_state  # (B, T, H)
        pooled = pool(hidden, attention_mask, self.pooling)  # (B, H)
        return projection(pooled) if projection is not None else pooled  # (B, D)

    def encode_queries(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                       token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Query embeddings (B, D)."""
        return self._embed(self.query_encoder, self.query_projection, input_ids, attention_mask, token_type_ids)

    def encode_documents(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                         token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Document embeddings (D, D'), from the document tower (the shared encoder when Siamese)."""
        return self._embed(*self._document_tower(), input_ids, attention_mask, token_type_ids)

    def forward(self, query_input_ids: torch.Tensor, query_attention_mask: torch.Tensor,
                document_input_ids: torch.Tensor, document_attention_mask: torch.Tensor,
                query_token_type_ids: torch.Tensor | None = None,
                document_token_type_ids: torch.Tensor | None = None,
                document_keys: torch.Tensor | None = None,
                relevant_keys: torch.Tensor | None = None) -> ObjectiveOutput:
        queries = self.encode_queries(query_input_ids, query_attention_mask, query_token_type_ids)  # (B, D)
        documents = self.encode_documents(document_input_ids, document_attention_mask,
                                          document_token_type_ids)  # (B·(1+N), D)
        return self.loss_from_embeddings(queries, documents, document_keys, relevant_keys)

    def split_for_gradient_cache(self, query_input_ids: torch.Tensor, query_attention_mask: torch.Tensor,
                                 document_input_ids: torch.Tensor, document_attention_mask: torch.Tensor,
                                 query_token_type_ids: torch.Tensor | None = None,
                                 document_token_type_ids: torch.Tensor | None = None,
                                 document_keys: torch.Tensor | None = None,
                                 relevant_keys: torch.Tensor | None = None) -> GradientCacheSplit:
        """``forward``'s batch as the query and document towers and the loss's other inputs
        (``train.gradient_cache``)."""
        towers = []
        for encode, input_ids, attention_mask, token_type_ids in (
                (self.encode_queries, query_input_ids, query_attention_mask, query_token_type_ids),
                (self.encode_documents, document_input_ids, document_attention_mask, document_token_type_ids)):
            inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
            if token_type_ids is not None:
                inputs["token_type_ids"] = token_type_ids
            towers.append(Tower(encode, inputs))
        return GradientCacheSplit(towers, {"document_keys": document_keys, "relevant_keys": relevant_keys})

    def loss_from_embeddings(self, queries: torch.Tensor, documents: torch.Tensor,
                             document_keys: torch.Tensor | None = None,
                             relevant_keys: torch.Tensor | None = None) -> ObjectiveOutput:
        """The loss of ``forward`` given the query (B, D) and document (B·(1+N), D) embeddings."""
        batch = queries.shape[0]
        positives = documents[:batch]  # (B, D)
        negatives = documents[batch:].reshape(batch, -1, documents.shape[-1])  # (B, N, D)
        if self.loss is None:
            raise ValueError("this DualEncoder was built without a loss: it can encode, not train")
        false_negatives = None
        if self.loss.in_batch and document_keys is not None and relevant_keys is not None:
            false_negatives = in_batch_false_negatives(relevant_keys, document_keys, self.loss.global_in_batch)
        loss = self.loss(queries, positives, negatives, self.similarity, false_negatives)
        with torch.no_grad():
            accuracy = self.loss.scores(queries, positives, negatives, self.similarity, false_negatives).accuracy()
        return ObjectiveOutput(loss, {self.loss.name: loss.detach()}, {"accuracy": accuracy})

    def save(self, directory: str | os.PathLike, max_seq_length: int | None = None) -> Path:
        """Write the product: the query (= shared) encoder in ``directory``, the document tower in
        ``directory/doc_encoder`` when separate; both load with ``AutoModel`` and ``SentenceTransformer``.
        A tower's projection is saved with it as a ``Dense`` module (``2_Dense/``), so
        ``SentenceTransformer(folder)`` embeds as this model does. A cosine model gets a ``Normalize``
        module (as all-MiniLM has), so sentence-transformers and ``seedr encode`` give unit vectors,
        whose inner products are the cosines it was trained on.
        ``max_seq_length`` is what sentence-transformers will keep (default ``document_max_length``).
        The caller makes it atomic (``seedr.io.atomic_directory``)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        # the settings and the document tower before the query tower, whose model card reads both from the
        # folder: how to lay a document out (the title mode) and which tower encodes it
        settings = {"shared": self.shared, "pooling": self.pooling, "similarity": self.similarity.name,
                    "scale": self.similarity.scale, "title": self.title}
        (directory / SETTINGS_FILE).write_text(json.dumps(settings, indent=2))
        towers = [(self.query_encoder, self.query_projection, directory)]
        if self.document_encoder is not None:
            towers.insert(0, (self.document_encoder, self.document_projection, directory / DOCUMENT_TOWER))
        for encoder, projection, folder in towers:
            save_encoder(encoder, self.tokenizer, folder, pooling=self.pooling,
                         max_seq_length=max_seq_length or self.document_max_length,
                         similarity=self.similarity.name, projection=projection,
                         normalize=self.similarity.name == "cosine")
        return directory

    # ------------------------------------------------------------------ inference with the in-memory model

    #: Autocast dtype for embedding outside training (dev evaluation, ANN negative mining); fine-tuning
    #: sets bfloat16 when it trains in bf16, so whole-corpus encodings run at the same precision.
    inference_dtype: torch.dtype | None = None

    def embed_queries(self, texts: Sequence[str], batch_size: int = ENCODE_BATCH_SIZE, show_progress: bool = False) -> np.ndarray:
        """Query embeddings (Q, D) as numpy, L2-normalised under cosine so an inner-product index ranks right."""
        return encode_texts(self.query_encoder, self.tokenizer, list(texts), self.pooling, self.query_max_length,
                            batch_size, projection=self.query_projection, normalize=self.similarity.name == "cosine",
                            autocast_dtype=self.inference_dtype, show_progress=show_progress)

    def embed_documents(self, documents: Sequence[Document], batch_size: int = ENCODE_BATCH_SIZE,
                        show_progress: bool = False) -> np.ndarray:
        """Document embeddings (N, D) as numpy, from the document tower."""
        encoder, projection = self._document_tower()
        inputs = [document_input(document, self.title) for document in documents]
        firsts, seconds = zip(*inputs) if inputs else ((), ())
        return encode_texts(encoder, self.tokenizer, list(firsts), self.pooling, self.document_max_length,
                            batch_size, text_pairs=list(seconds), projection=projection,
                            normalize=self.similarity.name == "cosine", autocast_dtype=self.inference_dtype,
                            show_progress=show_progress)

    def rank(self, documents: Mapping[str, Document], queries: Mapping[str, str], k: int,
             batch_size: int = ENCODE_BATCH_SIZE, show_progress: bool = False,
             score_also: Mapping[str, Collection[str]] | None = None) -> Run:
        """Retrieve the top ``k`` of ``documents`` for each query with the current weights (exact search,
        faiss Flat): what dev evaluation during training and dense negative mining (ANCE) need.
        ``score_also`` names documents per query to score wherever they rank (e.g. its positives, for
        positive-aware mining); they join that query's run beside its top ``k``."""
        embeddings = self.embed_documents(list(documents.values()), batch_size, show_progress)
        index = DenseIndex.build(embeddings, list(documents), factory="Flat")
        query_ids = list(queries)
        query_embeddings = self.embed_queries([queries[q] for q in query_ids], batch_size, show_progress)
        scores, ids = index.search(query_embeddings, min(k, len(documents)))
        run = run_from_topk(query_ids, scores, ids)
        if score_also:
            row = {doc_id: position for position, doc_id in enumerate(documents)}
            for query_embedding, qid in zip(query_embeddings, query_ids):
                wanted = [doc for doc in score_also.get(qid, ()) if doc in row and doc not in run[qid]]
                if wanted:
                    extra = embeddings[[row[doc] for doc in wanted]] @ query_embedding
                    run[qid].update(zip(wanted, map(float, extra)))
        return run
