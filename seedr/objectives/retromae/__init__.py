"""RetroMAE (Xiao et al., EMNLP 2022): MLM and an enhanced decoder reconstructing from the sentence embedding.

Its options (``options.py``, torch-free), its objective (``objective.py``), its enhanced decoder
(``enhanced_decoder.py``); registered by this folder (``seedr.objectives.OBJECTIVES``). Imports nothing, so
that importing its options loads no torch."""
