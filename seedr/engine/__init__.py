"""The training engine shared by pre-training and fine-tuning: the Accelerate ``Trainer`` and its callbacks
(``trainer.py``), optimiser and schedule (``optim.py``), checkpoints and exact resume (``checkpoint.py``),
GradCache (``gradient_cache.py``), each loss part's gradient norm (``part_gradients.py``), checkpoint
averaging (``averaging.py``) and memory-mapped token shards (``shards.py``).

It sits below the objectives and the negative strategies, which hook into it (a callback, a checkpoint's
head), and below ``seedr.training``, which builds runs out of them."""

from seedr.engine.batches import TrainData
from seedr.engine.shards import TokenShardData, write_token_shards
from seedr.engine.trainer import Callback, Trainer

__all__ = ["Callback", "TokenShardData", "TrainData", "Trainer", "write_token_shards"]
