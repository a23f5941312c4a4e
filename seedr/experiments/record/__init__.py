"""What an experiment's run records, apart from how it runs: figures, verdicts, the report, the results
committed under ``docs/results``, the claims page and seeds run apart combined (``seedr.experiments``
says which module does which)."""
