"""Build, load, pool and save the text encoder — the only artefact seedr ships.

The encoder is a Hugging Face BERT-architecture model. It is saved as a plain Hugging Face folder
(``config.json`` + ``model.safetensors`` + tokenizer) with the sentence-transformers module files
beside it, so ``transformers.AutoModel.from_pretrained(dir)`` and
``sentence_transformers.SentenceTransformer(dir)`` both load it unchanged, with [CLS] pooling
(the sequence embedding of SEED-Encoder, CPDAE and the ICLR 2020 two-tower models) unless told
otherwise, and the projection head, if any, as a ``Dense`` module (``seedr.modeling.projection``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import warnings
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from transformers import (
    AutoConfig,
    AutoModel,
    AutoTokenizer,
    BertConfig,
    BertModel,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
from transformers.utils import logging as hf_logging

from seedr.config.settings import DROPOUT, MAX_LENGTH, Pooling
from seedr.io import DataError
from seedr.modeling.config_values import check_values
from seedr.modeling.folders import (  # the folders' torch-free half, imported from here too
    read_settings,
    resolve_model_path,
    tokenizer_folder,
    usable_positions,
)
from seedr.modeling.model_card import write_model_card
from seedr.modeling.projection import (
    MODULES_FILE,
    PROJECTION_FOLDER,
    Projection,
    module_folders,
    refuse_other_weights,
    save_projection,
)

#: The files of a model folder that determine its vectors: weights, architecture, tokenizer, and the
#: sentence-transformers modules (pooling, projection, normalisation) — not its model card or logs.
_FINGERPRINTED = ("config.json", "*.safetensors", "pytorch_model.bin", "tokenizer.json", "tokenizer_config.json",
                  "vocab.txt", "special_tokens_map.json", "modules.json", "sentence_bert_config.json",
                  "1_Pooling/config.json", "2_Dense/*")


def model_fingerprint(name_or_path: str | os.PathLike) -> str:
    """A sha256 over the files of a model folder that determine its vectors (``config.json``, the weights
    — ``model.safetensors`` —, the tokenizer files and the sentence-transformers module files: every file
    under every module folder ``modules.json`` names), each under its relative name: two folders holding
    the same model have the same fingerprint, and a model re-trained into the same folder gets a new one.
    Recorded beside embeddings and in index folders.
    """
    folder = resolve_model_path(name_or_path)
    digest = hashlib.sha256()
    files = {file for pattern in _FINGERPRINTED for file in folder.glob(pattern) if file.is_file()}
    # every module modules.json names, wherever it puts it: a Dense in proj/ changes the vectors as one in 2_Dense/
    for module in module_folders(folder):
        files.update(Path(root) / name for root, _, names in os.walk(module) for name in names)
    files = sorted(file for file in files if file.is_file())
    if not files:
        raise FileNotFoundError(f"{folder}: no model files to fingerprint")
    for file in files:
        digest.update(file.relative_to(folder).as_posix().encode() + b"\0")
        with open(file, "rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def _code_files(auto_map: object) -> str:
    """The ``.py`` files an ``auto_map`` names (``"module.Class"``, ``"repo--module.Class"``, or a list of
    them per auto class, as tokenizers give a slow and a fast one)."""
    values = auto_map.values() if isinstance(auto_map, dict) else [auto_map]
    references = [item for value in values for item in (value if isinstance(value, list) else [value])
                  if isinstance(item, str)]
    return ", ".join(sorted({reference.split("--")[-1].rsplit(".", 1)[0] + ".py" for reference in references}))


#: The ``config.json`` fields that size an encoder, with the tensor of a BERT-family checkpoint (a name, or
#: the end of one: ``bert.embeddings...`` in a masked-LM checkpoint) whose axis shows each. ELECTRA's word
#: embeddings are narrower than its layers, so the width is read from a layer's query projection.
SHAPE_WITNESSES = {
    "vocab_size": ("embeddings.word_embeddings.weight", 0),
    "max_position_embeddings": ("embeddings.position_embeddings.weight", 0),
    "type_vocab_size": ("embeddings.token_type_embeddings.weight", 0),
    "hidden_size": ("encoder.layer.0.attention.self.query.weight", 0),
    "intermediate_size": ("encoder.layer.0.intermediate.dense.weight", 0),
}
#: A layer's tensors, numbered: ``num_hidden_layers`` is one more than the highest number.
_LAYER = re.compile(r"(?:^|\.)encoder\.layer\.(\d+)\.")


def _weight_shapes(folder: Path) -> dict[str, list[int]]:
    """Every tensor's shape in the ``*.safetensors`` of ``folder``, from their headers (no weight is read),
    or a ``DataError`` naming a truncated or corrupt file (transformers would fail with a traceback deep in
    its loader)."""
    shapes: dict[str, list[int]] = {}
    for file in sorted(folder.glob("*.safetensors")):
        try:
            with safe_open(str(file), framework="pt") as weights:
                shapes.update((key, weights.get_slice(key).get_shape()) for key in weights.keys())  # noqa: SIM118
        except Exception as error:  # noqa: BLE001 (safetensors raises its own error type)
            raise DataError(file, f"damaged weights ({error})") from None
    return shapes


def check_shape(folder: str | os.PathLike) -> None:
    """Refuse, before the model is built, a ``config.json`` whose sizes the shipped weights do not have.

    transformers builds the model the config describes and only then fills it from the checkpoint, so a
    crafted ``"hidden_size": 1e12`` ends in a traceback (``Storage size calculation overflowed``) or in
    memory exhausted, and a config asking for more layers than the weights hold builds layers of random
    numbers, with a warning. The safetensors headers give every tensor's shape without reading a weight:
    each field of ``SHAPE_WITNESSES`` and ``num_hidden_layers`` must be a positive integer equal to what the
    tensors show; a field no tensor shows (another architecture's names) must at least not exceed the
    count of numbers the weights hold, which no dimension of a model built from them can.

    Raises:
        DataError: naming ``config.json`` and the field.
    """
    folder = Path(folder)
    path = folder / "config.json"
    config = read_settings(path)
    shapes = _weight_shapes(folder)
    if not shapes:
        return  # no safetensors: _check_weights refuses the folder
    held = sum(math.prod(shape) for shape in shapes.values())
    shown = {}
    for field, (suffix, axis) in SHAPE_WITNESSES.items():
        name = next((key for key in shapes if key == suffix or key.endswith(f".{suffix}")), None)
        if name is not None:
            shown[field] = (shapes[name][axis], f"{name} of shape {tuple(shapes[name])}")
    layers = {int(match.group(1)) for key in shapes if (match := _LAYER.search(key))}
    if layers:
        shown["num_hidden_layers"] = (max(layers) + 1, f"layers numbered 0 to {max(layers)}")
    for field in [*SHAPE_WITNESSES, "num_hidden_layers"]:
        if field not in config:
            continue
        value = config[field]
        if not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
            raise DataError(path, f"{field} must be a positive integer, got {value!r}", field=field)
        if field in shown and value != shown[field][0]:
            size, witness = shown[field]
            raise DataError(path, f"{field} is {value}, but the weights hold {witness}, which make it {size}: "
                                  f"this config.json does not describe these weights", field=field)
        if value > held:
            raise DataError(path, f"{field} is {value}, more than the {held} numbers the weights hold: this "
                                  f"config.json does not describe these weights", field=field)


def check_model_folder(folder: str | os.PathLike) -> None:
    """Refuse, before anything is loaded, a model or tokenizer folder that would run code of its own.

    transformers imports the Python files a folder names in an ``auto_map`` (``config.json`` or
    ``tokenizer_config.json``) once the caller trusts them — or once anything answers "y" on standard
    input to its prompt —, and a ``model_type`` it does not know can only be built from such code.
    seedr never runs a model folder's code: every loader passes ``trust_remote_code=False``, and this
    says why in one line naming the file, instead of transformers' prompt or its error. The JSON files
    are also checked to be objects, so a damaged one is named rather than a traceback, and the sizes in
    ``config.json`` against the weights' shapes (``check_shape``) and its other values (``check_values``): the
    tokenizer's loader reads the config too, and would blame ``tokenizer.json`` for a crafted one.

    Raises:
        DataError: naming ``config.json`` or ``tokenizer_config.json`` and the field at fault.
    """

    folder = Path(folder)
    for name in ("config.json", "tokenizer_config.json"):
        path = folder / name
        if not path.is_file():
            continue
        settings = read_settings(path)
        if "auto_map" in settings:
            raise DataError(path, f"names Python code of its own to load the model "
                                  f"({_code_files(settings['auto_map'])}): seedr never runs a model folder's code; "
                                  f"use a model of an architecture transformers provides", field="auto_map")
        model_type = settings.get("model_type")
        if name == "config.json" and not (isinstance(model_type, str) and model_type in CONFIG_MAPPING):
            raise DataError(path, f"model_type {model_type!r} is not an architecture transformers provides, and "
                                  f"seedr never runs a model folder's own code", field="model_type")
    if (folder / "config.json").is_file():
        check_shape(folder)
        check_values(folder)


def load_tokenizer(name_or_path: str | os.PathLike) -> PreTrainedTokenizerBase:
    """The tokenizer of a local model folder or of a tokenizer folder saved by ``seedr prepare``.

    A folder with code of its own is refused (``check_model_folder``); a damaged tokenizer file is a
    ``DataError`` naming ``tokenizer.json`` (or the folder, without one).
    """
    path = tokenizer_folder(name_or_path)
    check_model_folder(path)
    try:
        return AutoTokenizer.from_pretrained(str(path), trust_remote_code=False)
    except Exception as error:  # noqa: BLE001
        # json (JSONDecodeError; RecursionError on deep nesting), the tokenizers library (its plain Exception)
        # and transformers (KeyError, TypeError, ValueError, OSError) each fail in their own way on a damaged
        # file; the JSON settings beside it were read above, so the tokenizer file is the one at fault
        file = path / "tokenizer.json" if (path / "tokenizer.json").exists() else path
        detail = " ".join(str(error).split()) or "no detail"
        raise DataError(file, f"not a tokenizer seedr can load ({type(error).__name__}: {detail})") from None


def build_encoder(vocab_size: int, hidden_size: int = 768, num_hidden_layers: int = 12,
                  num_attention_heads: int = 12, intermediate_size: int | None = None,
                  max_position_embeddings: int = 512, dropout: float = DROPOUT, pad_token_id: int = 0) -> BertModel:
    """A freshly initialised BERT encoder of the given size (from-scratch pre-training, as SEED-Encoder).

    Dropout 0.1 as in BERT and both papers; the intermediate size defaults to 4 × hidden.
    """
    config = BertConfig(
        vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads, intermediate_size=intermediate_size or 4 * hidden_size,
        max_position_embeddings=max_position_embeddings, hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout, pad_token_id=pad_token_id,
    )
    return BertModel(config, add_pooling_layer=False)


def model_positions(name_or_path: str | os.PathLike) -> int | None:
    """``usable_positions`` of a model folder's ``config.json`` (``check_model_folder`` reads it first)."""
    folder = resolve_model_path(name_or_path)
    check_model_folder(folder)
    return usable_positions(read_settings(folder / "config.json"))


def check_lengths(model: str | os.PathLike, lengths: dict[str, int]) -> None:
    """Refuse, before anything is loaded, a length setting (``{"data.max_seq_length": 2048}``) beyond the
    positions of ``model`` (``model_positions``): the encoder would fail deep inside its embeddings."""
    positions = model_positions(model)
    for setting, length in lengths.items():
        if positions is not None and length > positions:
            raise ValueError(f"{setting} {length} is more than the {positions} positions of "
                             f"{resolve_model_path(model)} (its config.json's max_position_embeddings): use at "
                             f"most {positions}")


#: The safetensors metadata key that marks a folder's BERT pooler as seedr's placeholder (``save_encoder``).
PLACEHOLDER_POOLER = "seedr_placeholder_pooler"
#: BERT's pooler (``BertPooler``: dense → tanh on [CLS]) as ``BertModel`` names it in a checkpoint.
POOLER_KEYS = ("pooler.dense.weight", "pooler.dense.bias")


def add_placeholder_pooler(folder: str | os.PathLike) -> bool:
    """Add BERT's pooler, as an unused placeholder, to the ``model.safetensors`` of a saved BERT encoder
    that has none (seedr's: ``build_encoder`` makes them with ``add_pooling_layer=False``); returns whether
    it did. Every other tensor is kept byte for byte.

    ``AutoModel.from_pretrained`` (and so ``SentenceTransformer``) builds ``BertModel`` with its pooler
    whatever the checkpoint holds, and reports pooler weights the checkpoint lacks as MISSING, "newly
    initialized ... Consider training on your downstream task": an alarm at every load of a seedr encoder,
    though no seedr embedding reads the pooler (sentence-transformers pools the token states,
    ``1_Pooling/``). transformers offers no checkpoint-side way to build ``BertModel`` without it
    (``add_pooling_layer`` is an argument of the call, ``_keys_to_ignore_on_load_missing`` a class
    attribute), so the folder carries one: weight = identity, bias = 0, so that ``pooler_output`` is
    ``tanh`` of the [CLS] vector rather than a random projection of it. It is marked in the file's
    metadata (``PLACEHOLDER_POOLER``), and ``load_encoder`` leaves it out, so training never sees it.
    """
    folder = Path(folder)
    file = folder / "model.safetensors"
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if config.get("model_type") != "bert" or not file.exists():
        return False
    with safe_open(str(file), framework="pt") as weights:
        metadata = weights.metadata() or {"format": "pt"}
        names = set(weights.keys())
    if names & set(POOLER_KEYS):
        return False
    tensors = load_file(str(file))
    dtype = next(tensor.dtype for tensor in tensors.values() if tensor.is_floating_point())
    hidden = config["hidden_size"]
    tensors[POOLER_KEYS[0]] = torch.eye(hidden, dtype=dtype)  # (H, H)
    tensors[POOLER_KEYS[1]] = torch.zeros(hidden, dtype=dtype)  # (H,)
    save_file(tensors, str(file), metadata={**metadata, PLACEHOLDER_POOLER: (
        "BERT's pooler, unused by this encoder's embedding (identity weight, zero bias): saved so that "
        "transformers loads the folder without reporting it missing")})
    return True


def _has_pooler(folder: Path) -> bool:
    """Whether the folder's safetensors hold a trained BERT pooler (seedr's own encoders never have one:
    the placeholder of ``add_placeholder_pooler`` does not count)."""
    files = sorted(folder.glob("*.safetensors"))
    for file in files:
        with safe_open(str(file), framework="pt") as weights:
            placeholder = PLACEHOLDER_POOLER in (weights.metadata() or {})
            if not placeholder and any(key.split(".")[-3:-1] == ["pooler", "dense"]
                                       for key in weights.keys()):  # noqa: SIM118
                return True
    return not files  # no safetensors (e.g. pytorch_model.bin): let transformers decide


#: Weights in formats seedr never loads: pickles (which can run code when read) and other frameworks'.
UNSAFE_WEIGHTS = ("pytorch_model*.bin", "*.pt", "*.pth", "*.ckpt", "tf_model.h5", "flax_model.msgpack")


def _check_weights(folder: Path) -> None:
    """A ``DataError`` naming the file when a ``*.safetensors`` of ``folder`` is truncated or corrupt
    (``_weight_shapes``), or when the folder has weights only in another format: seedr loads safetensors
    only, and never unpickles a ``pytorch_model.bin``."""
    if not _weight_shapes(folder):
        refuse_other_weights(folder, UNSAFE_WEIGHTS, "AutoModel.from_pretrained(folder).save_pretrained(folder) "
                                                     "writes model.safetensors", "its encoder")


#: Where a masked-LM checkpoint keeps its head (``BertForMaskedLM``: ``cls.predictions.*``), which the
#: encoder does not load and continued pre-training reads on its own.
MLM_HEAD_PREFIX = "cls."


def check_encoder_folder(name_or_path: str | os.PathLike) -> Path:
    """The folder of ``name_or_path``, once every refusal ``load_encoder`` makes of it without building the
    model is passed: code of its own (``check_model_folder``), damaged safetensors or weights in another
    format. A run asks it before it writes anything, so that a refused model leaves no run folder behind."""
    folder = resolve_model_path(name_or_path)
    check_model_folder(folder)
    _check_weights(folder)
    return folder


def load_encoder(name_or_path: str | os.PathLike) -> PreTrainedModel:
    """Load the encoder backbone of a local Hugging Face folder (continued pre-training / fine-tuning).

    A BERT checkpoint without pooler weights, or with seedr's placeholder (``add_placeholder_pooler``), is
    loaded without the pooler, as seedr built it (``add_pooling_layer=False``), instead of with an unused
    one: no objective reads it, and a run's training state keeps the weights it had before placeholders.
    A folder with code of its own is refused (``check_model_folder``), and so are weights that are not
    safetensors.
    """

    folder = check_encoder_folder(name_or_path)
    options = {}
    if (AutoConfig.from_pretrained(str(folder), trust_remote_code=False).model_type == "bert"
            and not _has_pooler(folder)):
        options["add_pooling_layer"] = False
    # transformers prints a table of every weight it does not use, and a seedr base carries its MLM head
    # (BertForMaskedLM's ``cls.*``): expected, and printed at every step of an experiment. The head is left
    # out of the report; any other unused, missing or resized weight is still said.
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        model, loading = AutoModel.from_pretrained(str(folder), use_safetensors=True, output_loading_info=True,
                                                   trust_remote_code=False, **options)
    finally:
        hf_logging.set_verbosity(verbosity)
    # a pooler left out (``options``) can only be the placeholder: ``_has_pooler`` keeps any other
    placeholder = set(POOLER_KEYS) if "add_pooling_layer" in options else set()
    unused = [key for key in loading.get("unexpected_keys", ())
              if not key.startswith(MLM_HEAD_PREFIX) and key not in placeholder]
    for kind, keys in (("not in the checkpoint (freshly initialised)", loading.get("missing_keys", ())),
                       ("in the checkpoint but not used", unused),
                       ("of another shape in the checkpoint", loading.get("mismatched_keys", ()))):
        if keys:
            warnings.warn(f"{folder}: {len(keys)} encoder weights {kind}: {', '.join(map(str, sorted(keys)[:8]))}"
                          f"{' ...' if len(keys) > 8 else ''}", stacklevel=2)
    return model


def pool(last_hidden_state: torch.Tensor, attention_mask: torch.Tensor, pooling: Pooling = "cls") -> torch.Tensor:
    """Sequence embedding from token states: the [CLS] vector (default) or the masked mean."""
    if pooling == "cls":
        return last_hidden_state[:, 0]  # (B, H)
    if pooling == "mean":
        mask = attention_mask.unsqueeze(-1).to(last_hidden_state.dtype)  # (B, T, 1)
        return (last_hidden_state * mask).sum(1) / mask.sum(1).clamp_min(1e-9)
    raise ValueError(f"unknown pooling {pooling!r}; valid: cls, mean")


#: seedr's own settings beside an encoder's weights (towers, pooling, similarity, scale, title): written by
#: fine-tuning and two-tower pre-training, read back by ``DualEncoder.from_pretrained`` and ``seedr encode``.
SETTINGS_FILE = "seedr_dual_encoder.json"


def save_encoder(encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, directory: str | os.PathLike,
                 pooling: Pooling = "cls", max_seq_length: int = MAX_LENGTH, similarity: str = "dot",
                 projection: Projection | None = None, normalize: bool = False) -> Path:
    """Save ``encoder`` + ``tokenizer`` as a Hugging Face folder that sentence-transformers also loads.

    Writes ``config.json``, ``model.safetensors`` and the tokenizer files (transformers), then
    ``modules.json``, ``sentence_bert_config.json``, ``config_sentence_transformers.json`` and
    ``1_Pooling/config.json`` (sentence-transformers) describing ``pooling`` and the similarity, and a
    model card ``README.md`` (``seedr.modeling.model_card``);
    ``projection`` (the ICLR 2020 linear layer on [CLS]) becomes a ``Dense`` module in ``2_Dense/``
    and ``normalize`` appends a ``Normalize`` module, so ``SentenceTransformer(dir)`` gives the
    embedding seedr trained (``seedr.modeling.projection.load_projection`` reads the head back).
    A BERT without pooler gets the placeholder of ``add_placeholder_pooler``, so that ``AutoModel`` and
    ``SentenceTransformer`` load the folder without a missing-weights report; ``max_seq_length`` is cut
    to the encoder's positions, as ``seedr.retrieval.encode.model_defaults`` cuts it.
    The caller is responsible for atomicity (see ``seedr.io.atomic_directory``).

    sentence-transformers (≥ 6) then computes seedr's vectors (``seedr encode --compute-dtype float32``,
    ``seedr search``; title mode ``pair``, no prefixes) with its documented calls, a document being the
    text pair ``(title, text)`` — ``[CLS] title [SEP] text [SEP]``, token type 1 on the text, cut
    longest-first to ``max_seq_length`` tokens —, or its one non-empty field alone::

        model = SentenceTransformer(directory)
        queries = model.encode(["what causes tides?"])
        documents = model.encode([[title, text] if title and text else title or text
                                  for title, text in [("Tide", "Tides are ..."), ("", "untitled text")]])
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    encoder.save_pretrained(str(directory), safe_serialization=True)
    tokenizer.save_pretrained(str(directory))
    add_placeholder_pooler(directory)
    positions = usable_positions(encoder.config.to_dict())
    max_seq_length = min(max_seq_length, positions or max_seq_length)
    hidden = encoder.config.hidden_size
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    if projection is not None:
        save_projection(projection, directory / PROJECTION_FOLDER)
        modules.append({"idx": 2, "name": "2", "path": PROJECTION_FOLDER,
                        "type": "sentence_transformers.models.Dense"})
    if normalize:  # no weights, no config: the folder only names the module, as sentence-transformers saves it
        folder = f"{len(modules)}_Normalize"
        (directory / folder).mkdir(exist_ok=True)
        modules.append({"idx": len(modules), "name": str(len(modules)), "path": folder,
                        "type": "sentence_transformers.models.Normalize"})
    (directory / MODULES_FILE).write_text(json.dumps(modules, indent=2))
    (directory / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": max_seq_length, "do_lower_case": False}, indent=2))
    (directory / "config_sentence_transformers.json").write_text(json.dumps(
        {"similarity_fn_name": "dot" if similarity == "dot" else "cosine",
         "model_type": "SentenceTransformer"}, indent=2))
    (directory / "1_Pooling").mkdir(exist_ok=True)
    (directory / "1_Pooling" / "config.json").write_text(json.dumps({
        "word_embedding_dimension": hidden,
        "pooling_mode_cls_token": pooling == "cls",
        "pooling_mode_mean_tokens": pooling == "mean",
        "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False,
    }, indent=2))
    write_model_card(directory)  # a run's details are added when it publishes the encoder
    return directory


def bert_init(module: torch.nn.Module, std: float) -> None:
    """BERT's initialisation (Devlin et al., 2019, as ``BertPreTrainedModel._init_weights``): N(0, std)
    weights, zero biases, unit LayerNorm; for the new decoders the objectives add (``module.apply``)."""
    if isinstance(module, torch.nn.Linear | torch.nn.Embedding):
        torch.nn.init.normal_(module.weight, std=std)
    if isinstance(module, torch.nn.Linear) and module.bias is not None:
        torch.nn.init.zeros_(module.bias)
    if isinstance(module, torch.nn.LayerNorm):
        torch.nn.init.ones_(module.weight)
        torch.nn.init.zeros_(module.bias)
