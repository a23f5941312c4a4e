"""Experiments as data: orchestration over the stages (``seedr experiment``, ``seedr demo``).

An experiment file (``seedr/experiments/NAME.yaml``, shipped in this package; read, with the shared files
it extends, by ``seedr.experiments.files``; resolved by ``seedr.experiments.spec``) lists conditions —
chains of the stages' own steps (``seedr.experiments.steps``) — and the tasks they
are evaluated on (``seedr.experiments.tasks``); ``seedr.experiments.runner`` runs them resumably, tests the differences
and renders one report. What a run records: its figures and what each is read against
(``seedr.experiments.figures``), its claims' verdicts (``seedr.experiments.verdicts``), their Markdown
(``seedr.experiments.results_markdown``); ``seedr.experiments.records`` records them in the checkout and
verifies re-runs, and ``seedr.experiments.claims_page`` renders the claims page from the records.
``seedr.experiments.diagnostics`` loads run folders, checkpoints and objectives for the papers'
diagnostics (``seedr diagnose``).
"""
