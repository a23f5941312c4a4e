"""Training shared by pre-training and fine-tuning: the Accelerate ``Trainer`` (``trainer.py``), its
optimiser and schedule (``optim.py``), checkpoints and exact resume (``checkpoint.py``), memory-mapped
token shards (``shards.py``), and pre-training with one objective (``pretrain.py``, behind
``seedr pretrain``)."""

from seedr.training.shards import TokenShardData, write_token_shards
from seedr.training.trainer import Callback, TrainConfig, TrainData, Trainer

__all__ = ["Callback", "TokenShardData", "TrainConfig", "TrainData", "Trainer", "write_token_shards"]
