"""Negative strategies, one per file, in the ``NEGATIVES`` registry (``bm25``, ``in_batch``, ``static``,
``ance``), and the table of mined negatives with its provenance."""

from seedr.negatives import ance, bm25, in_batch, static  # noqa: F401  (registers the strategies)
from seedr.negatives.ance import ance_refresh
from seedr.negatives.base import NEGATIVES, MinedNegative, NegativeStrategy, NegativeTable

__all__ = ["NEGATIVES", "MinedNegative", "NegativeStrategy", "NegativeTable", "ance_refresh"]
