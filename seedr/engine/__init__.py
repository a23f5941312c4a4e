"""The training engine shared by pre-training and fine-tuning: the Accelerate ``Trainer`` and its callbacks
(``trainer.py``), optimiser and schedule (``optim.py``), checkpoints and exact resume (``checkpoint.py``),
each loss part's gradient norm (``part_gradients.py``), divergence checks (``divergence.py``) and the run's
state and metrics (``run_state.py``, ``run_metrics.py``). What the engine runs but is not its own job lives
where that job is: GradCache in ``seedr.losses.gradient_cache``, checkpoint averaging in
``seedr.modeling.averaging``, memory-mapped token shards in ``seedr.data.shards``.

Its layer (``pyproject.toml``) is below the objectives and the negative strategies, which hook into it (a
callback, a checkpoint's head), and below ``seedr.training``, whose runs are built out of them."""

from seedr.engine.batches import TrainData
from seedr.engine.trainer import Callback, Trainer

__all__ = ["Callback", "TrainData", "Trainer"]
