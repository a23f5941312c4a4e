"""Condenser (Gao and Callan, EMNLP 2021): MLM through a head reading [CLS] and early states.

Its options (``options.py``, torch-free), its objective (``objective.py``); registered by this folder
(``seedr.objectives.OBJECTIVES``). Imports nothing, so that importing its options loads no torch."""
