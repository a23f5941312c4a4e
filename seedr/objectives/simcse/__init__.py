"""Unsupervised SimCSE (Gao et al., EMNLP 2021): dropout as the augmentation of a contrastive loss.

Its options (``options.py``, torch-free), its objective (``objective.py``); registered by this folder
(``seedr.objectives.OBJECTIVES``). Imports nothing, so that importing its options loads no torch."""
