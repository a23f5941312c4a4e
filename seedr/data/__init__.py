"""Readers and writers for the formats of the field (BEIR, MS MARCO, TREC, SQuAD, NQ, DPR, MIND, ...)."""
