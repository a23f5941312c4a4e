"""PROP (Ma et al., WSDM 2021): representative words prediction, as a bi-encoder.

Its options (``options.py``, torch-free), its objective (``objective.py``); registered by this folder
(``seedr.objectives.OBJECTIVES``). Imports nothing, so that importing its options loads no torch."""
