"""ICT+BFS+WLP: the three paragraph-level tasks together, the paper's proposed pre-training.

Chang et al. (ICLR 2020, sec. 4.1): "the model is pre-trained on one combined set of (q, d) pairs,
where each pair is uniformly sampled from the three pre-training tasks". ``PairData`` draws each
pair's task uniformly (not in proportion to the tasks' sizes); the loss is the in-batch sampled
softmax over all documents of the batch, whatever their task, each logit corrected by the log of the
probability that its pair was drawn (eq. 3's correcting term: the tasks' sizes differ, so a small
task's documents are over-sampled; ``seedr.losses.in_batch_softmax``, ``log_q_correction``), and each
task's share of it is logged under its name (``parts``), with its in-batch accuracy (``metrics``).
"""

from __future__ import annotations

from seedr.objectives.ict_bfs_wlp.options import ICTBFSWLPConfig
from seedr.objectives.two_tower import TwoTowerObjective


class ICTBFSWLPObjective(TwoTowerObjective):
    """Two-tower pre-training on a uniform mixture of ICT, BFS and WLP pairs (Tables 3–6)."""

    name = "ict_bfs_wlp"
    config_class = ICTBFSWLPConfig
    tasks = ("ict", "bfs", "wlp")
