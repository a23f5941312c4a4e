"""The projection head on the sequence embedding, in sentence-transformers' ``Dense`` format.

The two-tower models of Chang et al. (ICLR 2020, sec. 4.1) embed a text as "a linear layer on top
of the [CLS] token" (512 dimensions). seedr saves that layer as the ``Dense`` module that
sentence-transformers puts after ``Pooling`` (``2_Dense/config.json`` + ``model.safetensors``, listed
in ``modules.json``), so ``SentenceTransformer(dir)`` reproduces the projected embedding. This module
reads such a head back as a ``Projection`` — fine-tuning (``DualEncoder``) trains it and saves it
again, encoding (``TextEncoder`` / ``encode_texts``) applies it — and writes one.

seedr reproduces the sentence-transformers pipelines ``Transformer → Pooling → [Dense] → [Normalize]``;
a model folder listing anything else is refused rather than encoded without it.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from torch import nn

from seedr.io import DataError, read_json

MODULES_FILE = "modules.json"
#: Where ``save_encoder`` writes the projection: sentence-transformers names module folders ``<idx>_<Type>``.
PROJECTION_FOLDER = "2_Dense"
#: The modules seedr applies after ``Transformer → Pooling``, in the orders it can reproduce.
SUPPORTED_HEADS = ([], ["Dense"], ["Normalize"], ["Dense", "Normalize"])
#: Module weights seedr never reads: pickles, which can run code when read (``torch.load`` included: a
#: ``weights_only`` load still unpickles, and has had ways around it).
PICKLED_WEIGHTS = ("*.bin", "*.pt", "*.pth", "*.ckpt")


class Projection(nn.Linear):
    """``activation(W·e + b)`` on a sequence embedding e: a sentence-transformers ``Dense`` as a torch layer.

    An ``nn.Linear`` (parameters ``weight`` (D, H) and ``bias`` (D,)) followed by ``activation``
    (identity by default: the ICLR 2020 paper's plain linear layer; ``Dense`` modules saved by others
    may carry e.g. tanh).

    Example:
        >>> Projection(384, 512)(torch.zeros(2, 384)).shape
        torch.Size([2, 512])
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 activation: nn.Module | None = None) -> None:
        super().__init__(in_features, out_features, bias=bias)
        self.activation = activation if activation is not None else nn.Identity()

    def forward(self, embeddings: torch.Tensor) -> torch.Tensor:
        return self.activation(super().forward(embeddings))  # (B, H) → (B, D)


def read_modules(model_dir: str | os.PathLike) -> list[dict]:
    """The sentence-transformers module list of a model folder (``modules.json``), ``[]`` without one.

    Raises:
        DataError: ``modules.json`` is not a list of modules, or names a module folder outside the model
            folder (an absolute path, one through ``..``, or a link leading out): what a folder loads, and
            its fingerprint hashes, stays inside it.
    """
    path = Path(model_dir) / MODULES_FILE
    if not path.exists():
        return []
    modules = read_json(path)
    if not isinstance(modules, list) or not all(isinstance(module, dict) for module in modules):
        raise DataError(path, "expected a JSON list of modules (objects with a type and a path)")
    inside = Path(model_dir).resolve()
    for module in modules:
        folder = module.get("path", "")
        if not isinstance(folder, str) or Path(folder).is_absolute() or ".." in Path(folder).parts:
            raise DataError(path, f"module path {folder!r} is not a folder inside the model folder", field="path")
        # a module folder that is a link leading out (``1_Pooling -> /``) would have the fingerprint hash
        # whatever it leads to; links to files stay allowed (a Hugging Face cache links its blobs)
        if not (Path(model_dir) / folder).resolve().is_relative_to(inside):
            raise DataError(Path(model_dir) / folder, "is a link leading out of the model folder; a module "
                                                      "folder must lie inside it", field="path")
    return modules


def module_folders(model_dir: str | os.PathLike) -> list[Path]:
    """The folders of the modules ``modules.json`` lists beside the transformer (whose path is the model
    folder itself): ``1_Pooling``, ``2_Dense`` ... or wherever the file puts them."""
    model_dir = Path(model_dir)
    return [model_dir / module["path"] for module in read_modules(model_dir) if module.get("path")]


def _module_kind(module: dict) -> str:
    # "sentence_transformers.models.Dense" and "sentence_transformers.base.modules.dense.Dense" alike
    return str(module.get("type", "")).rsplit(".", 1)[-1]


def refuse_other_weights(folder: Path, patterns: tuple[str, ...], how_to_convert: str, whose: str) -> None:
    """A folder without safetensors: a ``DataError`` naming its first file of ``patterns`` (a pickle, which
    could run code when read, or another framework's weights; never opened) and how to convert it, or
    saying that it holds no weights at all."""
    others = sorted(path for pattern in patterns for path in folder.glob(pattern))
    if others:
        raise DataError(others[0], "seedr loads safetensors only (model.safetensors), never a pickle, which could "
                                   f"run code when read: convert it where you trust its source ({how_to_convert})")
    raise DataError(folder, f"holds no weights of {whose} (model.safetensors)")


def load_projection(model_dir: str | os.PathLike) -> Projection | None:
    """The ``Dense`` module a model folder's ``modules.json`` lists after ``Pooling``, as a ``Projection``;
    ``None`` when it has none (or no ``modules.json``: a plain Hugging Face folder).

    Loaded with sentence-transformers' own ``Dense.load`` (the activation resolved as it resolves it, code
    never trusted), so the layer is the one ``SentenceTransformer(dir)`` applies; from ``model.safetensors``
    only, never a pickle.

    Raises:
        DataError: ``modules.json`` lists modules seedr would not apply (anything but ``Transformer →
            Pooling → [Dense] → [Normalize]``), a ``Dense`` that is not a plain layer on the
            sentence embedding (a residual, or one reading token embeddings), or one whose weights are
            not ``model.safetensors`` (``pytorch_model.bin`` and other pickles are refused, unread).
    """
    model_dir = Path(model_dir)
    modules = read_modules(model_dir)
    if not modules:
        return None
    kinds = [_module_kind(module) for module in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or kinds[2:] not in SUPPORTED_HEADS:
        raise DataError(model_dir / MODULES_FILE, f"seedr encodes with Transformer → Pooling → [Dense] → "
                                                  f"[Normalize]; this model is {' → '.join(kinds)}")
    if "Dense" not in kinds:
        return None
    # imported here: sentence-transformers takes seconds to import and only projected models need it
    from sentence_transformers.sentence_transformer.modules import Dense

    folder = model_dir / modules[kinds.index("Dense")]["path"]
    if not (folder / "model.safetensors").is_file():
        refuse_other_weights(folder, PICKLED_WEIGHTS, "load the model there and save it: sentence-transformers "
                                                      "writes model.safetensors", "its Dense module")
    dense = Dense.load(str(folder), local_files_only=True, trust_remote_code=False)
    if dense.use_residual or {dense.module_input_name, dense.module_output_name} != {"sentence_embedding"}:
        raise DataError(folder / "config.json", "seedr applies a Dense module as a plain layer on the sentence "
                                                "embedding (no residual, sentence_embedding in and out)")
    projection = Projection(dense.in_features, dense.out_features, bias=dense.bias,
                            activation=dense.activation_function)
    with torch.no_grad():
        projection.weight.copy_(dense.linear.weight)
        if dense.bias:
            projection.bias.copy_(dense.linear.bias)
    return projection


def save_projection(projection: Projection, folder: str | os.PathLike) -> Path:
    """Write ``projection`` into ``folder`` as sentence-transformers' ``Dense.save`` does (``config.json``
    + ``model.safetensors``). Listing it in ``modules.json`` is ``seedr.modeling.encoder.save_encoder``'s job."""
    from sentence_transformers.sentence_transformer.modules import Dense

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    has_bias = projection.bias is not None
    dense = Dense(projection.in_features, projection.out_features, bias=has_bias,
                  activation_function=projection.activation,
                  init_weight=projection.weight.detach().cpu().clone(),
                  init_bias=projection.bias.detach().cpu().clone() if has_bias else None)
    dense.save(str(folder))
    return folder
