"""Tables of one value per vocabulary entry that an objective computes from its corpus and keeps beside
the token shards (CPDAE's IDF for IDF-REC, PROP's collection counts for its smoothed document models):
written as ``.npy`` (atomically, never a pickle) and read back checked, a bad one named in one line."""

from __future__ import annotations

import os

import numpy as np
import torch

from seedr.io import DataError, atomic_write


def save_vocabulary_table(path: str | os.PathLike, values: np.ndarray, dtype: type) -> None:
    """Write ``values`` (one per vocabulary entry) as ``.npy`` of ``dtype``, atomically."""
    with atomic_write(path, "wb") as stream:
        np.save(stream, np.asarray(values, dtype=dtype))


def load_vocabulary_table(path: str | os.PathLike, vocab_size: int, *, field: str, what: str, dtype: type,
                          nonzero: bool = False) -> torch.Tensor:
    """Read a table saved by ``save_vocabulary_table``: ``vocab_size`` finite values ≥ 0 (not all 0 where
    ``nonzero``), as a tensor of ``dtype``; a ``DataError`` naming the file and the setting ``field`` else."""
    try:
        values = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise DataError(path, "no such file", field=field) from None
    except ValueError as error:
        raise DataError(path, f"not a .npy array ({error})", field=field) from None
    if values.shape != (vocab_size,):
        raise DataError(path, f"expected {vocab_size} {what} (the vocabulary), got shape {values.shape}", field=field)
    if not np.isfinite(values).all() or (values < 0).any() or (nonzero and values.sum() == 0):
        raise DataError(path, f"{what} must be finite and ≥ 0{', not all 0' if nonzero else ''}", field=field)
    return torch.from_numpy(values.astype(dtype))


__all__ = ["load_vocabulary_table", "save_vocabulary_table"]
