"""coCondenser (Gao and Callan, ACL 2022): Condenser with a span contrastive loss.

Its options (``options.py``, torch-free), its objective (``objective.py``); registered by this folder
(``seedr.objectives.OBJECTIVES``). Imports nothing, so that importing its options loads no torch."""
