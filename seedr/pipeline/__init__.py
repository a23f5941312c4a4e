"""The pipeline: each stage a config dataclass (its options, declared once: ``seedr.pipeline.options``) and one
``run(config)`` holding all of the stage's logic, checks, locks and provenance.

The command line (``seedr.stages``), the Python API (``seedr.api``) and every experiment's steps and tasks
(``seedr.experiments``) call these runs, and nothing else wires the library together, so that what an
experiment records is what a user who runs the same stages gets. The configs load no torch: a command's
``--help`` and a refused value answer at once; each run imports what it needs when it runs.
"""
