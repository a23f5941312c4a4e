"""The training engine shared by pre-training and fine-tuning: the Accelerate ``Trainer`` and its callbacks
(``trainer.py``), optimiser and schedule (``optim.py``), checkpoints and exact resume (``checkpoint.py``),
GradCache (``gradient_cache.py``), each loss part's gradient norm (``part_gradients.py``), checkpoint
averaging (``averaging.py``) and memory-mapped token shards (``shards.py``).

Its layer (``pyproject.toml``) is below the objectives and the negative strategies, which hook into it (a
callback, a checkpoint's head), and below the rest of ``seedr.training``, whose runs are built out of them.
``seedr/training/__init__.py`` imports nothing, so that importing the engine runs nothing of the layers
above it."""

from seedr.training.engine.batches import TrainData
from seedr.training.engine.shards import TokenShardData, write_token_shards
from seedr.training.engine.trainer import Callback, Trainer

__all__ = ["Callback", "TokenShardData", "TrainData", "Trainer", "write_token_shards"]
