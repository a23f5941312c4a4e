"""The steps an experiment chains: each calls the library function its stage command calls.

One job per module, imports one way: ``base`` (``ExperimentStep``, the registry ``STEPS``, ``build_step``,
``record_step``) ← ``training`` (``pretrain``, ``finetune``, ``average``, ``diagnose``), ``adaptation``
(``adapt``, no labels), ``tsdae_st`` (TSDAE through sentence-transformers) and ``setup`` (the
set-up steps ``prepare``, ``open_qa``, ``reqa_split``, ``retrieval_task``), which register their kinds
when this package imports them, and ``validation`` (an experiment checked before it runs). Settings use
the stage config's keys (dotted for nested fields); a step that follows another starts from its product
(the pre-trained or fine-tuned encoder) unless its settings name a model.
"""

from seedr.experiments.steps.adaptation import AdaptOptions
from seedr.experiments.steps.base import (
    STEPS,
    ExperimentStep,
    build_step,
    condition_references,
    record_step,
)
from seedr.experiments.steps.setup import RetrievalTaskConfig, shipped_split
from seedr.experiments.steps.training import AverageConfig, DiagnoseConfig, check_options
from seedr.experiments.steps.tsdae_st import TsdaeStConfig
from seedr.experiments.steps.validation import BM25_DEPTH, validate

__all__ = ["BM25_DEPTH", "STEPS", "AdaptOptions", "AverageConfig", "DiagnoseConfig", "ExperimentStep",
           "RetrievalTaskConfig", "TsdaeStConfig", "build_step", "check_options", "condition_references",
           "record_step", "shipped_split", "validate"]
