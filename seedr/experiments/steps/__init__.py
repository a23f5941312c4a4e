"""The steps an experiment chains: each calls the library function its stage command calls.

One job per module, imports one way: ``base`` (``ExperimentStep``, the registry ``STEPS``, ``build_step``,
``record_step``) ← ``training`` (``pretrain``, ``finetune``, ``average``, ``diagnose``), ``adaptation``
(``adapt``, no labels), ``tsdae_st`` (TSDAE through sentence-transformers,
``seedr.training.tsdae_sentence_transformers``) and ``setup`` (the
set-up steps ``prepare``, ``open_qa``, ``reqa_split``, ``retrieval_task``), which register their kinds
when this package imports them. Settings use the stage config's keys (dotted for nested fields); a step
that follows another starts from its product (the pre-trained or fine-tuned encoder) unless its settings
name a model. An experiment's files are checked before anything runs by ``seedr.experiments.checks``.
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
from seedr.experiments.steps.tsdae_st import TsdaeStStep

__all__ = ["STEPS", "AdaptOptions", "AverageConfig", "DiagnoseConfig", "ExperimentStep", "RetrievalTaskConfig",
           "TsdaeStStep", "build_step", "check_options", "condition_references", "record_step", "shipped_split"]
