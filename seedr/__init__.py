"""seedr: better seeds for dense retrievers.

Pre-train text encoders with objectives built for Siamese/dual-encoder retrieval (SEED-Encoder,
CPDAE, ICT/BFS/WLP), fine-tune them into retrievers, index and search corpora, and evaluate them the
way the research field does.
"""

__version__ = "0.1.0"
