"""ICT+BFS+WLP (Chang et al., ICLR 2020): two towers on the three tasks' pairs together.

Its options (``options.py``, torch-free), its objective (``objective.py``); registered by this folder
(``seedr.objectives.OBJECTIVES``). Imports nothing, so that importing its options loads no torch."""
