"""The papers' diagnostics of an encoder beyond retrieval metrics (``seedr diagnose``, the ``diagnose``
experiment step), in one place: what they measure, from models in memory and from vectors (``measures``:
SEED-Encoder's random-pair similarity by length and reliance on [CLS], CPDAE's decoded words, alignment
and uniformity), how they are loaded from folders (``loading``: the encoder, a pre-training objective
with its trained decoder from a run's checkpoint, texts and positive pairs), run and written down
(``diagnose``: ``diagnostics.json``) and how they are drawn (``plots``)."""
