"""Experiments as data: orchestration over the stages (``seedr experiment``, ``seedr demo``).

An experiment file (``seedr/experiments/NAME.yaml``, shipped in this package; read, with the shared files
it extends, by ``seedr.experiments.files``; resolved by ``seedr.experiments.spec``) lists conditions —
chains of the stages' own steps (``seedr.experiments.steps``) — and the tasks they
are evaluated on (``seedr.experiments.tasks``); ``seedr.experiments.runner`` runs them resumably, tests the differences
and renders one report; ``seedr.experiments.results`` records figures, verifies re-runs and renders
the README's claims table. ``seedr.experiments.diagnostics`` loads run folders, checkpoints and
objectives for the papers' diagnostics (``seedr diagnose``).
"""
