"""Contriever (Izacard et al., TMLR 2022): contrastive learning on independent crops.

Its options (``options.py``, torch-free), its objective (``objective.py``); registered by this folder
(``seedr.objectives.OBJECTIVES``). Imports nothing, so that importing its options loads no torch."""
