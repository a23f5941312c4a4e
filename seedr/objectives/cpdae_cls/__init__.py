"""CPDAE′ (Ma et al., CIKM 2022): CPDAE contrasting the [CLS] vectors.

Its options (``options.py``, torch-free), its objective (``objective.py``); registered by this folder
(``seedr.objectives.OBJECTIVES``). Imports nothing, so that importing its options loads no torch."""
