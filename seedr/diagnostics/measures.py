"""The papers' diagnostics of an encoder beyond retrieval metrics, computed from models in memory and
from vectors (loading run folders, checkpoints and objectives is ``seedr.diagnostics.loading``).

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
- **The decoder's reliance on [CLS] by position** (SEED-Encoder §4.6.1 and Figure 4): "the cosine
  similarity between encoder CLS and the token representations from the decoder at different
  positions", for the weak decoder's last layer under teacher forcing. With full attention the
  cosine is high at the first positions and drops once context is available (Figure 4(a)); with the
  span restricted to two it stays high at every position (Figure 4(b)): the weak decoder has to read
  [CLS]. ``cls_reliance`` gives the curve, ``reliance_summary`` its first / last-quarter values.
- **Embedding-space statistics**: anisotropy, the mean cosine of random embeddings (Ethayarajh,
  EMNLP 2019, §3: "the average cosine similarity between uniformly randomly sampled words"; here
  sequence embeddings), and the alignment and uniformity of Wang & Isola (ICML 2020, §4.1 eq. 2–3)
  on positive (query, document) pairs: SciFact's judged pairs or ICT pairs (Chang et al., ICLR 2020).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from torch.nn import functional as F
from tqdm.auto import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from seedr.config.settings import DIAGNOSE_BATCH_SIZE, MAX_LENGTH
from seedr.modeling.bow_decoder import word_distribution
from seedr.modeling.encoder import pool
from seedr.objectives.seed.weak_decoder import WeakDecoder

#: Figure 1(b) of SEED-Encoder shows these sequence lengths.
PAPER_LENGTHS = (64, 128, 256, 512)
#: A text of this many characters per wanted token holds far more tokens than wanted (English
#: WordPiece averages 4–5 characters a token); cutting before tokenising keeps long articles cheap.
_CHARACTERS_PER_TOKEN_BOUND = 12


# ------------------------------------------------------------------------ the encoder under test


@torch.inference_mode()
def embed_token_ids(model: PreTrainedModel, sequences: Sequence[Sequence[int]], pooling: str = "cls",
                    batch_size: int = DIAGNOSE_BATCH_SIZE, show_progress: bool = False) -> torch.Tensor:
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


def random_pair_similarity(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, texts: Sequence[str],
                           lengths: Iterable[int] = PAPER_LENGTHS, pairs: int = 256, seed: int = 13, *,
                           pooling: Literal["cls", "mean"] = "cls", batch_size: int = DIAGNOSE_BATCH_SIZE,
                           show_progress: bool = False) -> dict[int, tuple[float, float]]:
    """Cosine similarity of random pairs of sequences, by length: ``{length: (mean, std)}``.

    SEED-Encoder §3.2: "We randomly select sequence pairs of different lengths and calculate the
    cosine similarity of their CLS embeddings" (Figure 1(b); Figure 5 for SEED-Encoder). For each
    length L, the texts with at least L − 2 tokens are the candidates; each is cut to its first L − 2
    tokens and framed as ``[CLS] … [SEP]``, so every sequence is exactly L tokens (the papers count
    the specials in their 512). ``pairs`` pairs of two different candidates are drawn uniformly, with
    a generator seeded by ``(seed, L)``; each text drawn is embedded once.

    Args:
        model, tokenizer: the encoder in eval mode and its tokenizer
            (``seedr.diagnostics.loading.load_encoder_parts`` loads them from a folder).
        texts: real texts, e.g. Wikipedia articles (``corpus_texts``).
        lengths: sequence lengths in tokens, specials included (Figure 1(b): 64, 128, 256, 512).
        pairs: random pairs per length (the paper does not say how many).
        pooling: ``"cls"`` as the paper, or ``"mean"``.

    Raises:
        ValueError: a length outside [3, the model's positions], or fewer than two texts that long.
    """
    lengths = sorted(set(lengths))
    if pairs < 1:
        raise ValueError(f"pairs must be at least 1, got {pairs}")
    if pooling not in ("cls", "mean"):
        raise ValueError(f"unknown pooling {pooling!r}; valid: cls, mean")
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


# ------------------------------------------------------------------ SEED-Encoder Figure 4


@dataclass(frozen=True)
class ClsReliance:
    """SEED-Encoder Figure 4 for one model: ``cosine[p]`` is the mean, over the texts long enough to
    have position ``p``, of the cosine between the bottleneck vector the decoder reads and the decoder's
    last-layer state at position ``p`` (which reads token ``x_p`` and predicts ``x_{p+1}``; 0 reads
    [CLS] and is "the closest to CLS"); ``texts[p]`` is how many texts were averaged there."""

    cosine: list[float]
    texts: list[int]


def require_weak_decoder(objective: Any) -> Any:
    """``objective`` itself when it has SEED-Encoder's weak decoder, else a clear ``ValueError``."""
    if not isinstance(getattr(objective, "decoder", None), WeakDecoder):
        raise ValueError(f"{getattr(objective, 'name', type(objective).__name__)!r} has no weak decoder: the "
                         "decoder's reliance on [CLS] needs a SEED-Encoder objective (objective seed)")
    return objective


def texts_of_length(tokenizer: PreTrainedTokenizerBase, texts: Iterable[str], length: int,
                    count: int) -> list[str]:
    """The first ``count`` texts that fill ``length`` tokens, specials included: with them every position
    of the reliance curve averages the same texts (as Figure 4's 512-token sequences)."""
    chosen: list[str] = []
    texts = iter(texts)
    while len(chosen) < count and (batch := list(itertools.islice(texts, 256))):
        cut = [text[:length * _CHARACTERS_PER_TOKEN_BOUND] for text in batch]
        token_ids = tokenizer(cut, truncation=True, max_length=length)["input_ids"]
        chosen += [text for text, ids in zip(batch, token_ids) if len(ids) == length]
    return chosen[:count]


@torch.inference_mode()
def cls_reliance(objective: Any, texts: Sequence[str], max_length: int = MAX_LENGTH,
                 batch_size: int = DIAGNOSE_BATCH_SIZE) -> ClsReliance:
    """The weak decoder's reliance on [CLS] by position (SEED-Encoder §4.6.1, Figure 4).

    Each text, cut to ``max_length`` tokens, goes through the encoder and then, teacher-forced as in
    pre-training (``SeedEncoder.decoder_loss``: the clean ids shifted right), through the decoder. The
    encoder reads the clean text rather than training's masked copy: the [CLS] under study is the one
    retrieval uses, and the curve does not depend on a random mask. The positions are those the decoder
    loss trains (their target is a real token).

    The vector compared is the bottleneck itself, ``h0`` (or the masked mean under ``bottleneck:
    mean``): the decoder receives it at the encoder's width, with no projection in between; each layer
    then maps it by its own weights (``W_o W_v h0`` per cross-attention layer, or the layer's key/value
    projections on the joint path), so no single projected vector is "what the decoder receives" and
    the paper's "encoder CLS" is the one common to every layer and both paths.

    Args:
        objective: a SEED-Encoder objective in eval mode (``seedr.diagnostics.loading.load_weak_decoder``
            rebuilds it from a run folder, with its training length as ``max_length``).
        texts: real texts; ``texts_of_length`` picks ones that fill ``max_length`` tokens.

    Raises:
        ValueError: an objective without a weak decoder, or no text of at least two tokens.
    """
    require_weak_decoder(objective)
    tokenizer, device = objective.tokenizer, next(objective.parameters()).device
    tied = objective.config.tie_embeddings
    shared = objective.encoder.get_input_embeddings().weight if tied else None  # (V, H)
    sums, counts = np.zeros(max_length - 1), np.zeros(max_length - 1, dtype=np.int64)
    for start in range(0, len(texts), batch_size):
        cut = [text[:max_length * _CHARACTERS_PER_TOKEN_BOUND] for text in texts[start:start + batch_size]]
        batch = tokenizer(cut, truncation=True, max_length=max_length, padding=True, return_tensors="pt")
        input_ids, attention_mask = batch["input_ids"].to(device), batch["attention_mask"].to(device)
        states = objective.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        # input_ids, attention_mask: (B, T); states: (B, T, H)
        bottleneck = pool(states, attention_mask, objective.config.bottleneck)  # (B, H)
        decoded = objective.decoder(input_ids[:, :-1], bottleneck, shared)  # (B, T−1, H)
        cosines = F.cosine_similarity(decoded.float(), bottleneck.float().unsqueeze(1), dim=-1)  # (B, T−1)
        trained = attention_mask[:, 1:].bool()  # (B, T−1): padding is never a target
        positions = cosines.shape[1]
        sums[:positions] += (cosines * trained).sum(0).double().cpu().numpy()
        counts[:positions] += trained.sum(0).cpu().numpy()
    reached = int((counts > 0).sum())  # texts are left-aligned: the positions reached are a prefix
    if reached == 0:
        raise ValueError(f"none of the {len(texts)} texts has two tokens: the decoder has no position to "
                         "compare")
    return ClsReliance(cosine=(sums[:reached] / counts[:reached]).tolist(), texts=counts[:reached].tolist())


def reliance_summary(reliance: ClsReliance) -> dict[str, float]:
    """Figure 4 in numbers: ``cls_reliance@first`` (position 0), ``cls_reliance@last_quarter`` (the mean over
    the last quarter of the positions, at least one) and ``cls_reliance_drop`` (first − last quarter):
    near zero when the decoder reads [CLS] everywhere (span 2, Figure 4(b)), large when it stops once
    the context suffices (full attention, Figure 4(a))."""
    cosine = np.asarray(reliance.cosine)
    first, last_quarter = float(cosine[0]), float(cosine[-math.ceil(len(cosine) / 4):].mean())
    return {"cls_reliance@first": first, "cls_reliance@last_quarter": last_quarter,
            "cls_reliance_drop": first - last_quarter}


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


def embedding_statistics(queries: torch.Tensor | np.ndarray, documents: torch.Tensor | np.ndarray
                         ) -> dict[str, float]:
    """``{"alignment", "uniformity", "anisotropy"}`` of the embeddings of positive (query, document)
    pairs, row i of each a pair. Uniformity is the mean of the queries' and the documents' (Wang &
    Isola's reference code: ``(uniform(x) + uniform(y)) / 2``); anisotropy is over queries and documents
    together."""
    if len(queries) < 2:
        raise ValueError(f"embedding statistics need at least two positive pairs, got {len(queries)}")
    return {"alignment": alignment(queries, documents),
            "uniformity": (uniformity(queries) + uniformity(documents)) / 2,
            "anisotropy": anisotropy(np.concatenate([np.asarray(queries), np.asarray(documents)]))}


# ------------------------------------------------------------------ CPDAE's decoded words


def require_word_decoder(objective: Any) -> Any:
    """``objective`` itself when it has CPDAE's bag-of-words decoder, else a clear ``ValueError``."""
    if getattr(objective, "bow_decoder", None) is None:
        raise ValueError(f"{getattr(objective, 'name', type(objective).__name__)!r} has no bag-of-words "
                         "decoder: decoded word distributions need CPDAE's (objective cpdae or cpdae_cls)")
    return objective

@torch.inference_mode()
def word_distributions(objective: Any, texts: Sequence[str], max_length: int = MAX_LENGTH,
                       batch_size: int = DIAGNOSE_BATCH_SIZE) -> tuple[torch.Tensor, list[list[int]]]:
    """CPDAE's z̃ (eq. 3, 5: the decoder's sigmoids normalised to sum to one) for unmasked texts cut to
    ``max_length`` tokens: ``(distributions (N, V), token ids of each text, specials included)``."""

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


def decoded_words(objective: Any, texts: Sequence[str], k: int = 10,
                  max_length: int = MAX_LENGTH) -> list[list[tuple[str, float]]]:
    """The ``k`` most probable words of CPDAE's decoded distribution z̃ for each text, with their
    probabilities: what the decoder reads out of the [CLS] vector (§3.3).

    ``objective``: a CPDAE objective (``seedr.diagnostics.loading.load_word_decoder`` rebuilds it
    from a run folder, with its training length as ``max_length``).
    """
    require_word_decoder(objective)
    distributions, _ = word_distributions(objective, texts, max_length)
    top = distributions.topk(min(k, distributions.shape[-1]), dim=-1)
    tokens = objective.tokenizer.convert_ids_to_tokens
    return [list(zip(tokens(ids.tolist()), probabilities.tolist())) for probabilities, ids in zip(*top)]


def word_probabilities(objective: Any, text: str, max_length: int = MAX_LENGTH) -> list[tuple[str, float]]:
    """CPDAE's Table 4: each word of ``text`` with "the normalized output probabilities of all the
    subwords of a whole word" summed (each distinct subword once), in text order."""
    require_word_decoder(objective)
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


def common_word_mass(objective: Any, texts: Sequence[str], common_ids: Iterable[int],
                     max_length: int = MAX_LENGTH) -> dict[str, float]:
    """Where CPDAE's decoded probability mass goes (§3.3), averaged over ``texts``.

    Returns:
        ``common_mass``: Σ z̃ over ``common_ids`` (e.g. ``most_frequent_tokens`` of the corpus);
        ``own_rare_mass``: Σ z̃ over the text's own token ids that are not common (its representative
        words); ``target_common_mass``: the reference both are measured against, the mass on common
        ids of eq. 4's target normalised like z̃ (y / Σ y: uniform over the text's distinct words),
        i.e. what a decoder that reconstructs the bag of words exactly, neither suppressing nor
        highlighting, would give (its own-rare mass is 1 − this). All three lie in [0, 1].
    """
    require_word_decoder(objective)
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


__all__ = [
    "PAPER_LENGTHS",
    "ClsReliance",
    "alignment",
    "anisotropy",
    "cls_reliance",
    "common_word_mass",
    "decoded_words",
    "embed_token_ids",
    "embedding_statistics",
    "most_frequent_tokens",
    "random_pair_similarity",
    "reliance_summary",
    "require_weak_decoder",
    "require_word_decoder",
    "texts_of_length",
    "uniformity",
    "word_distributions",
    "word_probabilities",
]
