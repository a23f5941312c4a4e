"""CPDAE (Ma et al., CIKM 2022): MLM, a bag-of-words decoder and a contrastive loss.

Its options (``options.py``, torch-free), its objective (``objective.py``); registered by this folder
(``seedr.objectives.OBJECTIVES``). Imports nothing, so that importing its options loads no torch."""
