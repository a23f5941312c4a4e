"""Experiments as data: orchestration over the stages (``seedr experiment``, ``seedr demo``).

The running: an experiment file (``seedr/experiments/NAME.yaml``, shipped in this package; read, with the
shared files it extends, by ``seedr.experiments.files``; resolved by ``seedr.experiments.spec``) lists
conditions — chains of the stages' own steps (``seedr.experiments.steps``) — and the tasks they are
evaluated on (``seedr.experiments.tasks``); ``seedr.experiments.runner`` runs them resumably and scores
them (``seedr.experiments.scoring``); the ``diagnose`` step runs the papers' diagnostics
(``seedr.diagnostics``).

The record (``seedr.experiments.record``): each figure and what it is read against (``figures``), the
claims' verdicts (``verdicts``), their Markdown (``results_markdown``), the report's preamble, plots and
case study (``preamble``, ``report``), the recorded results in the checkout and their verification
(``docs_results``), the claims page (``claims_page``), seeds run apart judged as one run (``combine``).
Apart from both, so that no result's key rests on an estimate: the progress line and its ETA (``eta``) and
the sizes of the units it estimates from (``sizing``). An experiment's files are checked before anything
runs by ``seedr.experiments.checks``; a seed pre-trained in a condition's chain keeps its pooling through
the chain's fine-tuning and retrieval (``seedr.experiments.seed_pooling``).
"""
