"""Evaluation as the field does it: IR metrics (``metrics``, through ir_measures), DPR answer coverage
(``qa_coverage``), ReQA (``reqa``), MIND impression metrics (``mind``), paired significance tests
(``significance``) and comparison tables (``compare``)."""
