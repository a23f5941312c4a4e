"""ICT (Lee et al., ACL 2019; Chang et al., ICLR 2020): two towers on inverse cloze pairs.

Its options (``options.py``, torch-free), its objective (``objective.py``); registered by this folder
(``seedr.objectives.OBJECTIVES``). Imports nothing, so that importing its options loads no torch."""
