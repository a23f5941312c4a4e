"""The batches of a run, deterministic in (seed, epoch): the data interface the trainer takes
(``TrainData``) and the collation seeded by each batch's position, so that a resumed run sees exactly the
batches, and the masks, an uninterrupted one would have seen."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from torch import Tensor


@runtime_checkable
class TrainData(Protocol):
    """Examples for one epoch, deterministic in (seed, epoch) so a resumed run sees the same batches.

    Optionally ``state_dict()`` / ``load_state_dict(d)`` for data that changes during training (ANCE
    negatives); the state is saved in every checkpoint and restored before the epoch is rebuilt.
    """

    def dataset(self, epoch: int) -> torch.utils.data.Dataset: ...


@contextmanager
def isolated_rng(seed: int) -> Iterator[None]:
    """Seed python/numpy/torch-CPU RNGs for a block, then put the outer states back untouched."""
    python_state, numpy_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=[]):
        random.seed(seed)
        np.random.seed(seed)
        torch.random.default_generator.manual_seed(seed)  # CPU only: GPU RNGs belong to dropout
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)


class IndexedDataset(torch.utils.data.Dataset):
    """Items of ``dataset`` paired with their index, so collation can be seeded by position."""

    def __init__(self, dataset: torch.utils.data.Dataset) -> None:
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)  # type: ignore[arg-type]

    def __getitem__(self, index: int) -> tuple[int, Any]:
        return index, self.dataset[index]


class SeededCollate:
    """``collate`` run under RNGs seeded by ``(seed, epoch, index of the batch's first example)``."""

    def __init__(self, collate: Callable[[list], dict[str, Tensor]], seed: int, epoch: int) -> None:
        self.collate, self.seed, self.epoch = collate, seed, epoch

    def __call__(self, indexed: list[tuple[int, Any]]) -> dict[str, Tensor]:
        batch_seed = int(np.random.SeedSequence([self.seed, self.epoch, indexed[0][0]]).generate_state(1)[0])
        with isolated_rng(batch_seed):
            return self.collate([example for _, example in indexed])
