"""SEED-Encoder (Lu et al., EMNLP 2021): MLM with a weak decoder reading [CLS].

Its options (``options.py``, torch-free), its objective (``objective.py``), its weak decoder
(``weak_decoder.py``); registered by this folder (``seedr.objectives.OBJECTIVES``). Imports nothing, so that
importing its options loads no torch."""
