"""seedr from Python: one function per stage, with the stage command's options as keyword arguments.

The command line is this API: ``seedr pretrain --config seed --model seedr-base --corpus docs.jsonl --out
runs/seed --set train.max_steps=20`` is ``seedr.pretrain("runs/seed", config="seed", model="seedr-base",
corpus="docs.jsonl", settings={"train.max_steps": 20})``. Every stage is one function: ``prepare``, ``pretrain``,
``finetune`` (and ``ance_refresh``, its negatives mined apart), ``adapt``, ``average``, ``encode``, ``index``,
``search``, ``fuse``, ``evaluate``, ``diagnose``, ``report``, ``experiment`` and ``demo``. Each returns an object
that leads to the next step: ``PreparedData`` (give it as ``corpus=``), a ``TrainingRun`` or an
``AveragedEncoder`` (give it as ``model=``), ``Embeddings`` (give them to ``index``), an ``Index``
(``index.search("a question", k=10)`` returns ``Hit``s with ids, scores and texts), a ``SearchRun`` or a
``FusedRun`` (give them to ``fuse`` and ``evaluate``), an ``Evaluation`` (its table, as Markdown or as numbers),
``Diagnostics``, a ``Report`` and an ``ExperimentRun``. The functions print only progress (an experiment also
its run's lines, on the ``console`` given): what a command prints, they return.

Settings are a plain mapping of the recipe's keys, dotted or nested (``{"train.max_steps": 20}`` or
``{"train": {"max_steps": 20}}``): the stage's defaults, then the recipe (``config``), then the keyword
arguments, then ``settings``, each over the one before (``seedr.config.loading.merge_settings``). ``resolve_settings``
shows the result without running anything (``seedr config`` on the command line).

Corpora and queries are paths (files, folders, quoted globs, as on the command line; parquet files and
Hugging Face ``save_to_disk`` folders too), Hugging Face ``datasets.Dataset`` objects, or lists of dicts
(corpus rows with ``_id``/``id``, ``title``, ``text``; query rows with ``_id``/``id`` and ``text``).

Heavy libraries (torch, transformers, faiss) are imported inside the functions, so that ``import seedr``
and every ``--help`` stay instant.
"""

from seedr.api.adapt import adapt
from seedr.pipeline.common import CONFIG_STAGES
from seedr.api.data import PreparedData, prepare
from seedr.api.diagnostics import Diagnostics, diagnose
from seedr.api.evaluation import Evaluation, evaluate
from seedr.api.experiments import ExperimentRun, demo, experiment
from seedr.api.fusion import FusedRun, fuse
from seedr.api.models import AveragedEncoder, average
from seedr.api.reports import Report, report
from seedr.api.retrieval import Embeddings, Hit, Index, encode, index, search
from seedr.api.training import ance_refresh, finetune, pretrain
from seedr.pipeline.finetune import MinedNegatives
from seedr.pipeline.pretrain import TrainingRun
from seedr.pipeline.search import SearchRun
from seedr.pipeline.settings import resolve_settings

__all__ = ["CONFIG_STAGES", "AveragedEncoder", "Diagnostics", "Embeddings", "Evaluation", "ExperimentRun", "FusedRun",
           "Hit", "Index", "MinedNegatives", "PreparedData", "Report", "SearchRun", "TrainingRun", "adapt",
           "ance_refresh", "average", "demo", "diagnose", "encode", "evaluate", "experiment", "finetune", "fuse",
           "index", "prepare", "pretrain", "report", "resolve_settings", "search"]
