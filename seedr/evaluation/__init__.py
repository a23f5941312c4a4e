"""Evaluation as the field does it: IR metrics (``metrics``, through ir_measures), DPR answer coverage
(``qa_coverage``), ReQA (``reqa``), MIND impression metrics (``mind``), paired significance tests
(``significance``) and comparison tables (``compare``)."""

#: What ``seedr evaluate`` reports unless told otherwise: MRR@10 / MRR@100 (MS MARCO passage / document),
#: recall at the depths the papers report, nDCG@10 (BEIR) and MAP. Kept here, free of imports, so that
#: the command line shows them without loading ``ir_measures`` (``seedr.evaluation.metrics`` re-exports it).
DEFAULT_METRICS: tuple[str, ...] = ("MRR@10", "MRR@100", "R@5", "R@10", "R@20", "R@50", "R@100", "R@1000",
                                    "nDCG@10", "MAP")
