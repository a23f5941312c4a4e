"""The values of a model folder's ``config.json`` that no weight's shape shows (``seedr.modeling.encoder``'s
``check_shape`` checks those): each refused in one line naming the file and the field before anything is
built from them, as a crafted or damaged folder otherwise fails far from its cause."""

from __future__ import annotations

import math
import os
from pathlib import Path

from transformers import AutoConfig

from seedr.io import DataError
from seedr.modeling.folders import read_settings


#: ``config.json`` fields that no tensor's shape shows but that the model's modules use as they stand: a
#: layer-norm epsilon of -1 makes every vector NaN, a dropout probability outside [0, 1] fails in torch's
#: constructor and heads that do not divide the width in the attention's, neither naming the file.
_POSITIVE_NUMBERS = ("layer_norm_eps", "layer_norm_epsilon", "rms_norm_eps")
_PROBABILITIES = ("hidden_dropout_prob", "attention_probs_dropout_prob")


def _number(value: object) -> bool:
    """A finite JSON number that a float holds: ``math.isfinite`` raises on an int past a float's range."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int of hundreds of digits: no setting of a model is one
        return False


def check_values(folder: str | os.PathLike) -> None:
    """Refuse a ``config.json`` with a value that no tensor's shape shows (``check_shape``) and that builds
    a broken model, or one that transformers cannot read at all: its loader raises a type error
    (``"layer_norm_eps": -1`` is an int) inside the tokenizer's too, which reads the config, and so blamed
    ``tokenizer.json``.

    Raises:
        DataError: naming ``config.json`` and, where one is at fault, the field.
    """
    folder = Path(folder)
    path = folder / "config.json"
    config = read_settings(path)
    for field in _POSITIVE_NUMBERS:
        if field in config and not (_number(config[field]) and config[field] > 0):
            raise DataError(path, f"{field} must be a positive number, got {config[field]!r}", field=field)
    for field in _PROBABILITIES:
        if config.get(field) is not None and not (_number(config[field]) and 0 <= config[field] <= 1):
            raise DataError(path, f"{field} must be a probability from 0 to 1, got {config[field]!r}",
                            field=field)
    heads, width = config.get("num_attention_heads"), config.get("hidden_size")
    if heads is not None:
        if not (isinstance(heads, int) and not isinstance(heads, bool) and heads > 0):
            raise DataError(path, f"num_attention_heads must be a positive integer, got {heads!r}",
                            field="num_attention_heads")
        if isinstance(width, int) and "head_dim" not in config and width % heads:
            raise DataError(path, f"num_attention_heads is {heads}, which does not divide hidden_size "
                                  f"{width}: each head takes an equal share of the width",
                            field="num_attention_heads")
    try:
        AutoConfig.from_pretrained(str(folder), trust_remote_code=False)
    except Exception as error:  # noqa: BLE001 (transformers and huggingface_hub validate with many types)
        detail = " ".join(str(error).split()) or "no detail"
        raise DataError(path, f"not a configuration transformers can read ({type(error).__name__}: "
                              f"{detail})") from None
