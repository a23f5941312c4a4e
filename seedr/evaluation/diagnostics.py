"""The papers' diagnostics of an encoder beyond retrieval metrics.

- **Random-pair similarity by length** (SEED-Encoder, Lu et al., EMNLP 2021, §3.2 and Figure 1(b);
  §4.6.2 and Figure 5): the cosine similarity of the [CLS] embeddings of random pairs of text
  sequences cut to 64 … 512 tokens. An autoencoder with a strong decoder (Optimus) gives long random
  sequences cosines around 0.8 ("cluttered representations"); SEED-Encoder's stay near 0.48 at 512.
  ``random_pair_similarity``.
- **Decoded word distributions of CPDAE** (Ma et al., CIKM 2022, §3.3 eq. 7–9 and Table 4): the
  contrastive loss on word distributions "suppresses the probability of common words" and
  "highlights the probability of representative/informative words" in the MLP decoder's output
  z̃ = ẑ / Σ ẑ (eq. 3, 5). ``decoded_words`` lists the top words, ``word_probabilities`` is Table 4
  (each word of a text with the summed z̃ of its subwords), ``common_word_mass`` measures the mass on
  the corpus's most frequent tokens against the mass on the text's own other words.
- **Embedding-space statistics**: anisotropy, the mean cosine of random embeddings (Ethayarajh,
  EMNLP 2019, §3: "the average cosine similarity between uniformly randomly sampled words"; here
  sequence embeddings), and the alignment and uniformity of Wang & Isola (ICML 2020, §4.1 eq. 2–3)
  on positive (query, document) pairs: SciFact's judged pairs or ICT pairs (Chang et al., ICLR 2020).

``diagnose`` runs what its inputs allow and ``write_diagnostics`` writes ``diagnostics.json``
(``{"metrics": {...}, "details": {...}}``, read by ``seedr report``) and ``diagnostics.png``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch.nn import functional as F
from tqdm.auto import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from seedr.data.io import DataError, atomic_write
from seedr.data.records import Document
from seedr.modeling.encoder import load_encoder, load_tokenizer, pool, resolve_model_path

#: "cls" and "mean" as ``seedr.modeling.encoder.pool``; "model": what the model folder declares.
DiagnosticPooling = Literal["cls", "mean", "model"]
#: Figure 1(b) of SEED-Encoder shows these sequence lengths.
PAPER_LENGTHS = (64, 128, 256, 512)
#: A text of this many characters per wanted token holds far more tokens than wanted (English
#: WordPiece averages 4–5 characters a token); cutting before tokenising keeps long articles cheap.
_CHARACTERS_PER_TOKEN_BOUND = 12

#: A model folder, a seedr run folder, ``minilm``, or an in-memory model (given with its tokenizer).
EncoderSource = str | os.PathLike | PreTrainedModel
#: A positive (query, document) pair.
PositivePair = tuple[str, Document]


# ------------------------------------------------------------------------ the encoder under test


def _device() -> torch.device:
    """Where a model loaded from a folder runs: a GPU when there is one (as ``TextEncoder``)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _encoder_parts(encoder: EncoderSource, tokenizer: PreTrainedTokenizerBase | None,
                   pooling: DiagnosticPooling) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, str]:
    """``(model in eval mode, tokenizer, "cls" | "mean")`` from a model folder / run folder / ``minilm``,
    or from an in-memory model and its tokenizer."""
    if pooling not in ("cls", "mean", "model"):
        raise ValueError(f"unknown pooling {pooling!r}; valid: cls, mean, model")
    if isinstance(encoder, PreTrainedModel):
        if tokenizer is None:
            raise ValueError("an in-memory encoder needs its tokenizer (tokenizer=...)")
        if pooling == "model":
            raise ValueError("pooling='model' reads a model folder; an in-memory encoder needs cls or mean")
        return encoder.eval(), tokenizer, pooling
    from seedr.retrieval.encode import model_defaults

    path = resolve_model_path(encoder)
    if pooling == "model":
        pooling = model_defaults(path)["pooling"]
    return load_encoder(path).to(_device()).eval(), tokenizer or load_tokenizer(path), pooling


@torch.inference_mode()
def embed_token_ids(model: PreTrainedModel, sequences: Sequence[Sequence[int]], pooling: str = "cls",
                    batch_size: int = 16, show_progress: bool = False) -> torch.Tensor:
    """Embed token-id sequences of equal length, specials included, exactly as given; (N, H) float32."""
    device = next(model.parameters()).device
    vectors = []
    for start in tqdm(range(0, len(sequences), batch_size), desc="embed", unit="batch",
                      disable=not show_progress, leave=False):
        input_ids = torch.tensor(sequences[start:start + batch_size], device=device)  # (B, T)
        attention_mask = torch.ones_like(input_ids)  # (B, T): equal lengths, no padding
        states = model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (B, T, H)
        vectors.append(pool(states, attention_mask, pooling).float().cpu())  # (B, H)
    return torch.cat(vectors) if vectors else torch.zeros(0, model.config.hidden_size)


# ------------------------------------------------------------------ SEED-Encoder Figure 1(b)


def random_pair_similarity(encoder: EncoderSource, texts: Sequence[str],
                           lengths: Iterable[int] = PAPER_LENGTHS, pairs: int = 256, seed: int = 13, *,
                           tokenizer: PreTrainedTokenizerBase | None = None,
                           pooling: DiagnosticPooling = "cls", batch_size: int = 16,
                           show_progress: bool = False) -> dict[int, tuple[float, float]]:
    """Cosine similarity of random pairs of sequences, by length: ``{length: (mean, std)}``.

    SEED-Encoder §3.2: "We randomly select sequence pairs of different lengths and calculate the
    cosine similarity of their CLS embeddings" (Figure 1(b); Figure 5 for SEED-Encoder). For each
    length L, the texts with at least L − 2 tokens are the candidates; each is cut to its first L − 2
    tokens and framed as ``[CLS] … [SEP]``, so every sequence is exactly L tokens (the papers count
    the specials in their 512). ``pairs`` pairs of two different candidates are drawn uniformly, with
    a generator seeded by ``(seed, L)``; each text drawn is embedded once.

    Args:
        encoder: a model folder, a seedr run folder, ``minilm``, or an in-memory model (with ``tokenizer``).
        texts: real texts, e.g. Wikipedia articles (``corpus_texts``).
        lengths: sequence lengths in tokens, specials included (Figure 1(b): 64, 128, 256, 512).
        pairs: random pairs per length (the paper does not say how many).
        pooling: ``"cls"`` as the paper, ``"mean"``, or ``"model"`` (the folder's declared pooling).

    Raises:
        ValueError: a length outside [3, the model's positions], or fewer than two texts that long.
    """
    lengths = sorted(set(lengths))
    if pairs < 1:
        raise ValueError(f"pairs must be at least 1, got {pairs}")
    model, tokenizer, pooling = _encoder_parts(encoder, tokenizer, pooling)
    positions = model.config.max_position_embeddings
    for length in lengths:
        if not 3 <= length <= positions:
            raise ValueError(f"sequence length {length} is outside [3, {positions}] (the model's positions)")
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    if cls is None or sep is None:
        raise ValueError(f"tokenizer {tokenizer.name_or_path!r} has no [CLS]/[SEP] to frame sequences with")
    content = max(lengths) - 2  # tokens between [CLS] and [SEP]
    token_ids = tokenizer([text[:content * _CHARACTERS_PER_TOKEN_BOUND] for text in texts],
                          add_special_tokens=False, truncation=True, max_length=content)["input_ids"]
    available = np.array([len(ids) for ids in token_ids])
    results = {}
    for length in lengths:
        candidates = np.flatnonzero(available >= length - 2)
        if len(candidates) < 2:
            raise ValueError(f"{len(candidates)} of {len(texts)} texts have {length} tokens; random pairs at "
                             f"that length need at least two (give more or longer texts, or drop {length})")
        rng = np.random.default_rng([seed, length])
        first = rng.integers(len(candidates), size=pairs)
        second = rng.integers(len(candidates) - 1, size=pairs)
        second += second >= first  # uniform over the candidates other than ``first``
        drawn = np.unique(np.concatenate([first, second]))
        sequences = [[cls, *token_ids[candidates[i]][:length - 2], sep] for i in drawn]
        vectors = embed_token_ids(model, sequences, pooling, batch_size, show_progress)  # (U, H)
        cosines = F.cosine_similarity(vectors[np.searchsorted(drawn, first)],
                                      vectors[np.searchsorted(drawn, second)], dim=-1)  # (pairs,)
        results[length] = (float(cosines.mean()), float(cosines.std(unbiased=False)))
    return results


# ------------------------------------------------------------------ embedding-space statistics


def anisotropy(embeddings: torch.Tensor | np.ndarray) -> float:
    """Mean cosine similarity over all pairs of distinct embeddings (Ethayarajh, 2019, §3).

    Exact, in O(N·H): with unit vectors u_i, Σ_{i≠j} u_i·u_j = ‖Σ_i u_i‖² − Σ_i ‖u_i‖².
    """
    unit = F.normalize(torch.as_tensor(embeddings, dtype=torch.float64), dim=-1)  # (N, H)
    count = unit.shape[0]
    if count < 2:
        raise ValueError("anisotropy needs at least two embeddings")
    total = unit.sum(0)  # (H,)
    return float((total @ total - (unit * unit).sum()) / (count * (count - 1)))


def alignment(queries: torch.Tensor | np.ndarray, documents: torch.Tensor | np.ndarray,
              alpha: float = 2.0) -> float:
    """L_align = E_{(x, y) ~ p_pos} ‖f(x) − f(y)‖₂^α on L2-normalised embeddings (Wang & Isola, 2020,
    eq. 2; α = 2 as their experiments). Row i of ``queries`` and of ``documents`` is a positive pair;
    lower is better aligned (0: identical, 4: opposite)."""
    x = F.normalize(torch.as_tensor(queries, dtype=torch.float64), dim=-1)  # (N, H)
    y = F.normalize(torch.as_tensor(documents, dtype=torch.float64), dim=-1)  # (N, H)
    if x.shape != y.shape:
        raise ValueError(f"positive pairs need as many queries as documents: {tuple(x.shape)} vs "
                         f"{tuple(y.shape)}")
    return float((x - y).norm(dim=-1).pow(alpha).mean())


def uniformity(embeddings: torch.Tensor | np.ndarray, t: float = 2.0) -> float:
    """L_uniform = log E_{x, y ~ p_data} exp(−t ‖f(x) − f(y)‖₂²) over pairs of distinct L2-normalised
    embeddings (Wang & Isola, 2020, eq. 3; t = 2). Lower is more uniform on the sphere; 0 means all
    embeddings coincide."""
    unit = F.normalize(torch.as_tensor(embeddings, dtype=torch.float64), dim=-1)  # (N, H)
    if unit.shape[0] < 2:
        raise ValueError("uniformity needs at least two embeddings")
    squared = torch.pdist(unit).pow(2)  # (N·(N−1)/2,)
    return float(torch.logsumexp(-t * squared, dim=0) - math.log(squared.numel()))  # log of a mean, stably


def embed_pairs(encoder: EncoderSource, positive_pairs: Sequence[PositivePair], *,
                tokenizer: PreTrainedTokenizerBase | None = None, pooling: DiagnosticPooling = "cls",
                batch_size: int = 16, show_progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(query embeddings (N, H), document embeddings (N, H))`` of positive pairs, embedded as
    retrieval embeds them (``seedr.modeling.dual_encoder``: documents as ``title [SEP] text``, by the
    document tower when the model has one)."""
    from seedr.modeling.dual_encoder import DualEncoder

    if isinstance(encoder, PreTrainedModel):
        model, tokenizer, pooling = _encoder_parts(encoder, tokenizer, pooling)
        towers = DualEncoder(model, tokenizer, pooling=pooling)
    else:
        towers = DualEncoder.from_pretrained(encoder, pooling=None if pooling == "model" else pooling)
        towers.to(_device())
    queries = towers.embed_queries([query for query, _ in positive_pairs], batch_size, show_progress)
    documents = towers.embed_documents([document for _, document in positive_pairs], batch_size,
                                       show_progress)
    return queries, documents


def embedding_statistics(encoder: EncoderSource, positive_pairs: Sequence[PositivePair], *,
                         tokenizer: PreTrainedTokenizerBase | None = None, pooling: DiagnosticPooling = "cls",
                         batch_size: int = 16, show_progress: bool = False) -> dict[str, float]:
    """``{"alignment", "uniformity", "anisotropy"}`` of an encoder on positive (query, document) pairs
    (``embed_pairs``). Uniformity is the mean of the queries' and the documents' (Wang & Isola's
    reference code: ``(uniform(x) + uniform(y)) / 2``); anisotropy is over queries and documents together.
    """
    if len(positive_pairs) < 2:
        raise ValueError(f"embedding statistics need at least two positive pairs, got {len(positive_pairs)}")
    queries, documents = embed_pairs(encoder, positive_pairs, tokenizer=tokenizer, pooling=pooling,
                                     batch_size=batch_size, show_progress=show_progress)  # (N, H) each
    return {"alignment": alignment(queries, documents),
            "uniformity": (uniformity(queries) + uniformity(documents)) / 2,
            "anisotropy": anisotropy(np.concatenate([queries, documents]))}


def beir_positive_pairs(directory: str | os.PathLike, split: str = "train", limit: int | None = None,
                        seed: int = 13) -> list[PositivePair]:
    """(query, relevant document) pairs of a BEIR folder (``corpus.jsonl``, ``queries.jsonl``,
    ``qrels/<split>.tsv``; e.g. SciFact): every judgement with relevance > 0, or ``limit`` of them
    drawn at random (seeded)."""
    from seedr.data.corpus import read_corpus
    from seedr.data.queries import read_qrels, read_queries

    directory = Path(directory)
    queries = read_queries(directory / "queries.jsonl")
    qrels = read_qrels(directory / "qrels" / f"{split}.tsv", queries=queries)
    wanted = {doc for judged in qrels.values() for doc, relevance in judged.items() if relevance > 0}
    documents = {document.id: document for document in read_corpus(directory / "corpus.jsonl")
                 if document.id in wanted}
    missing = wanted - documents.keys()
    if missing:
        raise DataError(directory / "qrels" / f"{split}.tsv", f"{len(missing)} judged documents are not in "
                        f"corpus.jsonl, e.g. {min(missing)!r}", field="corpus-id")
    pairs = [(queries[qid], documents[doc]) for qid in sorted(qrels)
             for doc, relevance in sorted(qrels[qid].items()) if relevance > 0]
    if limit is not None and limit < len(pairs):
        chosen = np.sort(np.random.default_rng(seed).choice(len(pairs), size=limit, replace=False))
        pairs = [pairs[i] for i in chosen]
    return pairs


def ict_positive_pairs(corpus_paths: Sequence[str | os.PathLike] | str | os.PathLike, limit: int = 256,
                       seed: int = 13, max_articles: int | None = None) -> list[PositivePair]:
    """``limit`` ICT pairs (a sentence vs the rest of its paragraph, with the article's title; Chang
    et al., ICLR 2020, §3) from structured articles, by the pre-training pair builder
    (``seedr.objectives.ict``), one per randomly chosen paragraph."""
    from seedr.objectives.two_tower import PairConfig, pair_data_for

    config = PairConfig(max_articles=max_articles, pairs_per_epoch=limit)
    data = pair_data_for("ict", corpus_paths, seed, config)
    pairs = []
    for pair in data.dataset(epoch=0):
        document_id = f"{pair.source['article_id']}#{pair.source['paragraph']}"
        pairs.append((pair.query, Document(id=document_id, text=pair.document, title=pair.title)))
    return pairs


def positive_pairs(path: str | os.PathLike, limit: int = 256, seed: int = 13, split: str = "train",
                   max_articles: int | None = None) -> list[PositivePair]:
    """Positive pairs from a BEIR folder (its judged pairs of ``split``) or from structured article
    files (ICT pairs)."""
    path = Path(path)
    if path.is_dir() and (path / "queries.jsonl").exists():
        return beir_positive_pairs(path, split, limit, seed)
    return ict_positive_pairs(path, limit, seed, max_articles)


# ------------------------------------------------------------------ CPDAE's decoded words


def load_objective(run_dir: str | os.PathLike, step: int | None = None) -> tuple[torch.nn.Module, Any]:
    """Rebuild a pre-training objective with its trained auxiliary modules (e.g. CPDAE's MLP decoder)
    from a run folder: ``(objective in eval mode, the run's PretrainConfig)``.

    The objective is built from the run's ``config.yaml`` around the encoder of the checkpoint
    (``checkpoints/step-N/encoder``, the newest unless ``step`` is given), then the checkpoint's full
    weights are loaded (``seedr.training.checkpoint.load_model_weights``).
    """
    from safetensors import safe_open
    from transformers import AutoModel

    from seedr.config import from_dict, load_config
    from seedr.objectives import OBJECTIVES
    from seedr.training.checkpoint import (
        PRODUCT,
        checkpoint_path,
        latest_checkpoint,
        load_model_weights,
        model_weights_path,
    )
    from seedr.training.pretrain import PretrainConfig

    run_dir = Path(run_dir)
    if not (run_dir / "config.yaml").exists():
        raise DataError(run_dir, "not a pre-training run folder (no config.yaml)")
    checkpoint = latest_checkpoint(run_dir) if step is None else checkpoint_path(run_dir, step)
    if checkpoint is None or not (checkpoint / PRODUCT).is_dir():
        raise DataError(checkpoint or run_dir / "checkpoints",
                        "no complete checkpoint to rebuild the objective from")
    config = load_config(PretrainConfig, run_dir / "config.yaml")
    objective_class = OBJECTIVES.get(config.objective_name)
    options = from_dict(objective_class.config_class, config.objective,
                        f"{run_dir / 'config.yaml'}: objective")
    # Files needed only to start training: the MLM head's weights come from the checkpoint, and the
    # IDF table (IDF-REC) weights the training loss, not the decoder's output.
    unneeded = {"mlm_head_from": None, "idf_rec": False, "idf_path": None}
    names = {field.name for field in dataclasses.fields(options)}
    options = dataclasses.replace(options, **{key: value for key, value in unneeded.items() if key in names})
    # The encoder as training built it: BERT's pooler exists only when it was loaded from a folder
    # (``model.init``), not when it was built from scratch; no objective uses it, but weights must match.
    with safe_open(model_weights_path(checkpoint), "pt") as weights:
        tensor_names = weights.keys()  # a safetensors file handle, not a dict: keys() lists the tensors
    pooler = any(name.startswith("encoder.pooler.") for name in tensor_names)
    encoder = AutoModel.from_pretrained(str(checkpoint / PRODUCT), add_pooling_layer=pooler)
    objective = objective_class(encoder, load_tokenizer(checkpoint / PRODUCT), options)
    load_model_weights(checkpoint, objective)
    return objective.eval(), config


def _word_decoder(source: Any, max_length: int | None) -> tuple[Any, int]:
    """``(CPDAE objective, input length)`` from a run folder (its training length) or a loaded objective."""
    objective = source
    if isinstance(source, str | os.PathLike):
        objective, config = load_objective(source)
        objective.to(_device())
        max_length = max_length or config.data.max_seq_length
    if getattr(objective, "bow_decoder", None) is None:
        what = (type(source).__name__ if objective is source
                else f"{source} (objective {objective.name!r})")
        raise ValueError(f"{what} has no bag-of-words decoder: decoded word distributions need CPDAE's "
                         "(objective cpdae or cpdae_cls)")
    return objective, min(max_length or 512, objective.encoder.config.max_position_embeddings)


@torch.inference_mode()
def word_distributions(objective: Any, texts: Sequence[str], max_length: int = 512,
                       batch_size: int = 16) -> tuple[torch.Tensor, list[list[int]]]:
    """CPDAE's z̃ (eq. 3, 5: the decoder's sigmoids normalised to sum to one) for unmasked texts cut to
    ``max_length`` tokens: ``(distributions (N, V), token ids of each text, specials included)``."""
    from seedr.objectives.cpdae import word_distribution

    tokenizer, device = objective.tokenizer, next(objective.parameters()).device
    distributions, token_ids = [], []
    for start in range(0, len(texts), batch_size):
        batch = tokenizer(list(texts[start:start + batch_size]), truncation=True, max_length=max_length,
                          padding=True, return_tensors="pt")
        states = objective.encoder(input_ids=batch["input_ids"].to(device),
                                   attention_mask=batch["attention_mask"].to(device)).last_hidden_state
        # states: (B, T, H)
        distributions.append(word_distribution(objective.bow_decoder(states[:, 0])).cpu())  # (B, V)
        token_ids += [ids[mask.bool()].tolist()
                      for ids, mask in zip(batch["input_ids"], batch["attention_mask"])]
    vocab_size = objective.encoder.config.vocab_size
    return (torch.cat(distributions) if distributions else torch.zeros(0, vocab_size)), token_ids


def decoded_words(run_dir: Any, texts: Sequence[str], k: int = 10,
                  max_length: int | None = None) -> list[list[tuple[str, float]]]:
    """The ``k`` most probable words of CPDAE's decoded distribution z̃ for each text, with their
    probabilities: what the decoder reads out of the [CLS] vector (§3.3).

    ``run_dir``: a CPDAE run folder (texts are cut to its training length) or a loaded objective.
    """
    objective, max_length = _word_decoder(run_dir, max_length)
    distributions, _ = word_distributions(objective, texts, max_length)
    top = distributions.topk(min(k, distributions.shape[-1]), dim=-1)
    tokens = objective.tokenizer.convert_ids_to_tokens
    return [list(zip(tokens(ids.tolist()), probabilities.tolist())) for probabilities, ids in zip(*top)]


def word_probabilities(run_dir: Any, text: str, max_length: int | None = None) -> list[tuple[str, float]]:
    """CPDAE's Table 4: each word of ``text`` with "the normalized output probabilities of all the
    subwords of a whole word" summed (each distinct subword once), in text order."""
    objective, max_length = _word_decoder(run_dir, max_length)
    distribution = word_distributions(objective, [text], max_length)[0][0]  # (V,)
    encoding = objective.tokenizer(text, truncation=True, max_length=max_length, return_offsets_mapping=True)
    words: dict[int, tuple[int, int, set[int]]] = {}
    for token_id, word, (start, end) in zip(encoding["input_ids"], encoding.word_ids(),
                                            encoding["offset_mapping"]):
        if word is None:
            continue  # [CLS], [SEP]
        first, _, ids = words.get(word, (start, end, set()))
        words[word] = (first, end, ids | {token_id})
    return [(text[start:end], float(distribution[sorted(ids)].sum())) for start, end, ids in words.values()]


def most_frequent_tokens(tokenizer: PreTrainedTokenizerBase, texts: Iterable[str],
                         count: int = 100) -> list[int]:
    """The ``count`` most frequent token ids of ``texts`` (special tokens excluded), most frequent first:
    the corpus's common words ("in, the, and of", CPDAE §1)."""
    frequency = np.zeros(len(tokenizer), dtype=np.int64)
    texts = iter(texts)
    while batch := list(itertools.islice(texts, 256)):
        # verbose=False: whole articles are longer than the model's input, which is no concern here
        for ids in tokenizer(batch, add_special_tokens=False, verbose=False)["input_ids"]:
            frequency += np.bincount(ids, minlength=len(frequency))
    frequency[tokenizer.all_special_ids] = 0
    ranked = np.argsort(-frequency, kind="stable")[:count]
    return [int(i) for i in ranked if frequency[i] > 0]


def common_word_mass(run_dir: Any, texts: Sequence[str], common_ids: Iterable[int],
                     max_length: int | None = None) -> dict[str, float]:
    """Where CPDAE's decoded probability mass goes (§3.3), averaged over ``texts``.

    Returns:
        ``common_mass``: Σ z̃ over ``common_ids`` (e.g. ``most_frequent_tokens`` of the corpus);
        ``own_rare_mass``: Σ z̃ over the text's own token ids that are not common (its representative
        words); ``target_common_mass``: the reference both are measured against, the mass on common
        ids of eq. 4's target normalised like z̃ (y / Σ y: uniform over the text's distinct words),
        i.e. what a decoder that reconstructs the bag of words exactly, neither suppressing nor
        highlighting, would give (its own-rare mass is 1 − this). All three lie in [0, 1].
    """
    objective, max_length = _word_decoder(run_dir, max_length)
    distributions, token_ids = word_distributions(objective, texts, max_length)
    vocab_size = distributions.shape[-1]
    common = torch.zeros(vocab_size, dtype=torch.bool)
    common[torch.as_tensor(list(common_ids), dtype=torch.long)] = True
    special = torch.as_tensor(objective.tokenizer.all_special_ids, dtype=torch.long)
    common_mass, own_rare_mass, target_common_mass = [], [], []
    for distribution, ids in zip(distributions, token_ids):
        ids = torch.as_tensor(ids, dtype=torch.long)
        own = torch.zeros(vocab_size, dtype=torch.bool)  # (V,) y of eq. 4: the text's words, specials out
        own[ids[~torch.isin(ids, special)]] = True
        common_mass.append(float(distribution[common].sum()))
        own_rare_mass.append(float(distribution[own & ~common].sum()))
        target_common_mass.append(float((own & common).sum() / own.sum().clamp_min(1)))
    return {"common_mass": float(np.mean(common_mass)), "own_rare_mass": float(np.mean(own_rare_mass)),
            "target_common_mass": float(np.mean(target_common_mass))}


def is_cpdae_run(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a run folder of an objective with CPDAE's decoder and has a checkpoint."""
    from seedr.config import parse_yaml
    from seedr.objectives import OBJECTIVES
    from seedr.objectives.cpdae import Cpdae
    from seedr.training.checkpoint import latest_checkpoint

    path = Path(path)
    if not (path / "config.yaml").exists() or latest_checkpoint(path) is None:
        return False
    name = (parse_yaml((path / "config.yaml").read_text(encoding="utf-8")) or {}).get("objective_name")
    return name in OBJECTIVES and issubclass(OBJECTIVES.get(name), Cpdae)


# ------------------------------------------------------------------ everything, written down


def corpus_texts(paths: Sequence[str | os.PathLike], max_documents: int | None = None) -> list[str]:
    """The texts (bodies, without titles) of the first ``max_documents`` documents of corpus files in
    any format ``seedr.data.corpus.read_corpus`` reads (files, quoted globs, folders:
    ``seedr.data.inputs.input_files``)."""
    from seedr.data.corpus import read_corpus
    from seedr.data.inputs import input_files

    documents = (document for path in input_files(paths, "corpus")
                 for document in read_corpus(path, skip_empty=True))
    return [document.text for document in itertools.islice(documents, max_documents) if document.text.strip()]


def diagnose(model: str | os.PathLike, texts: Sequence[str] = (),
             pairs_for_statistics: Sequence[PositivePair] = (), lengths: Iterable[int] = PAPER_LENGTHS,
             pairs: int = 256, seed: int = 13, pooling: DiagnosticPooling = "cls", word_texts: int = 8,
             top_k: int = 10, common_words: int = 100, batch_size: int = 16,
             show_progress: bool = False) -> dict[str, Any]:
    """Run the diagnostics the inputs allow; returns ``{"metrics": {name: number}, "details": {...}}``.

    - ``texts`` → random-pair similarity at each length (``random_pair_cosine@L`` and its ``_std``);
      when ``model`` is a CPDAE run folder, also the decoded words of the first ``word_texts`` texts
      and the mass on the ``common_words`` most frequent tokens of ``texts`` (``decoded_common_mass``,
      ``decoded_own_rare_mass``, ``target_common_mass``);
    - ``pairs_for_statistics`` → ``alignment``, ``uniformity``, ``anisotropy``.
    """
    if not texts and not pairs_for_statistics:
        raise ValueError("nothing to diagnose: give texts (random-pair similarity, CPDAE words) and/or "
                         "positive pairs (alignment, uniformity, anisotropy)")
    metrics: dict[str, float] = {}
    details: dict[str, Any] = {"model": str(model), "pooling": pooling, "seed": seed}
    if texts:
        similarity = random_pair_similarity(model, texts, lengths, pairs, seed, pooling=pooling,
                                            batch_size=batch_size, show_progress=show_progress)
        for length, (mean, std) in similarity.items():
            metrics[f"random_pair_cosine@{length}"] = mean
            metrics[f"random_pair_cosine_std@{length}"] = std
        details["random_pair_similarity"] = {"texts": len(texts), "pairs_per_length": pairs,
                                             "by_length": {str(k): list(v) for k, v in similarity.items()}}
    if texts and word_texts > 0 and isinstance(model, str | os.PathLike) and is_cpdae_run(model):
        objective, config = load_objective(model)
        objective.to(_device())
        max_length = min(config.data.max_seq_length, objective.encoder.config.max_position_embeddings)
        shown = list(texts[:word_texts])
        common = most_frequent_tokens(objective.tokenizer, texts, common_words)
        mass = common_word_mass(objective, shown, common, max_length)
        metrics.update({"decoded_common_mass": mass["common_mass"],
                        "decoded_own_rare_mass": mass["own_rare_mass"],
                        "target_common_mass": mass["target_common_mass"]})
        details["decoded_words"] = {
            "max_length": max_length, "common_words": objective.tokenizer.convert_ids_to_tokens(common),
            "top_words": [[[word, probability] for word, probability in words]
                          for words in decoded_words(objective, shown, top_k, max_length)],
            "word_probabilities": [[word, probability] for word, probability
                                   in word_probabilities(objective, shown[0], max_length)],
        }
    if pairs_for_statistics:
        metrics.update(embedding_statistics(model, pairs_for_statistics, pooling=pooling,
                                            batch_size=batch_size, show_progress=show_progress))
        details["embedding_statistics"] = {"positive_pairs": len(pairs_for_statistics)}
    return {"metrics": metrics, "details": details}


def plot_diagnostics(result: dict[str, Any], path: str | os.PathLike) -> Path:
    """One PNG with a panel per diagnostic in ``result`` (from ``diagnose``), written atomically."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = result["metrics"]
    panels = [name for name, present in (("similarity", "random_pair_similarity" in result["details"]),
                                         ("words", "decoded_common_mass" in metrics),
                                         ("statistics", "alignment" in metrics)) if present]
    figure, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.6), squeeze=False)
    for axis, panel in zip(axes[0], panels):
        if panel == "similarity":
            by_length = result["details"]["random_pair_similarity"]["by_length"]
            lengths = [int(length) for length in by_length]
            means, stds = zip(*by_length.values())
            axis.errorbar(lengths, means, yerr=stds, marker="o", capsize=3)
            axis.set_xscale("log", base=2)
            axis.set_xticks(lengths, [str(length) for length in lengths])
            axis.set_ylim(min(0.0, min(means) - max(stds)) - 0.05, 1.05)
            axis.set_xlabel("sequence length (tokens)")
            axis.set_ylabel("cosine of random pairs (mean ± std)")
            axis.set_title("SEED-Encoder Fig. 1(b)")
        elif panel == "words":
            names = ["common", "own rare"]
            positions = np.arange(len(names))
            target = metrics["target_common_mass"]
            axis.bar(positions - 0.2, [target, 1 - target], width=0.4, color="0.65",
                     label="bag-of-words target")
            axis.bar(positions + 0.2, [metrics["decoded_common_mass"], metrics["decoded_own_rare_mass"]],
                     width=0.4, color="tab:blue", label="decoded z̃")
            axis.set_xticks(positions, [f"{name} words" for name in names])
            axis.set_ylim(0, 1)
            axis.set_ylabel("probability mass")
            axis.legend(fontsize="small")
            axis.set_title("CPDAE decoded word distribution")
        else:
            point = (-metrics["uniformity"], metrics["alignment"])
            axis.scatter(*point, color="tab:green", clip_on=False)
            axis.annotate(f"anisotropy {metrics['anisotropy']:.3f}", point, textcoords="offset points",
                          xytext=(6, 6), fontsize="small")
            # Wang & Isola's axes: with t = 2, −uniformity is ≈ 4 for orthogonal embeddings and 0 for
            # collapsed ones; alignment runs from 0 (identical) to 4 (opposite)
            axis.set_xlim(0, max(4.2, -metrics["uniformity"] + 0.2))
            axis.set_ylim(0, max(2.2, metrics["alignment"] + 0.2))
            axis.set_xlabel("−uniformity (higher: more uniform)")
            axis.set_ylabel("alignment (lower: better aligned)")
            axis.set_title("Wang & Isola (2020)")
        axis.grid(alpha=0.3)
    figure.suptitle(Path(result["details"]["model"]).name or result["details"]["model"], fontsize="small")
    figure.tight_layout()
    with atomic_write(path, "wb") as stream:
        figure.savefig(stream, format="png", dpi=110)
    plt.close(figure)
    return Path(path)


def write_diagnostics(result: dict[str, Any], out_dir: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``out_dir/diagnostics.json`` (``seedr report`` reads its ``metrics``) and
    ``out_dir/diagnostics.png``; returns both paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with atomic_write(out_dir / "diagnostics.json") as stream:
        json.dump(result, stream, indent=2)
    return out_dir / "diagnostics.json", plot_diagnostics(result, out_dir / "diagnostics.png")


__all__ = [
    "PAPER_LENGTHS",
    "alignment",
    "anisotropy",
    "beir_positive_pairs",
    "common_word_mass",
    "corpus_texts",
    "decoded_words",
    "diagnose",
    "embed_pairs",
    "embed_token_ids",
    "embedding_statistics",
    "ict_positive_pairs",
    "is_cpdae_run",
    "load_objective",
    "most_frequent_tokens",
    "plot_diagnostics",
    "positive_pairs",
    "random_pair_similarity",
    "uniformity",
    "word_distributions",
    "word_probabilities",
    "write_diagnostics",
]
