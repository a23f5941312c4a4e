"""TSDAE (Wang et al., EMNLP Findings 2021): a denoising auto-encoder reading the sentence vector.

Its options (``options.py``, torch-free), its objective (``objective.py``); registered by this folder
(``seedr.objectives.OBJECTIVES``). Imports nothing, so that importing its options loads no torch."""
