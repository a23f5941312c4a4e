"""seedr: better seeds for dense retrievers.

Pre-train text encoders with objectives built for Siamese/dual-encoder retrieval (SEED-Encoder,
CPDAE, ICT/BFS/WLP), fine-tune them into retrievers, index and search corpora, and evaluate them the
way the research field does.

From Python, one call per stage (``seedr.api``; the ``seedr`` command runs the same functions)::

    import seedr

    run = seedr.pretrain("runs/seed", config="seed", model="seedr-base", corpus="my-docs.jsonl",
                         settings={"train.max_steps": 20, "train.global_batch_size": 8})
    retriever = seedr.finetune("runs/ft", model=run, train="my-labelled-folder", loss="nll")
    adapted = seedr.adapt("runs/adapted", model="minilm", corpus="my-docs.jsonl")  # no labels: mined pairs
    index = seedr.index(seedr.encode(retriever, "my-docs.jsonl", "runs/emb"), "runs/index")
    index.search("a question", k=10)       # [Hit(id=..., score=..., text=..., title=...), ...]
"""

from seedr.api import (
    AveragedEncoder,
    Diagnostics,
    Embeddings,
    Evaluation,
    ExperimentRun,
    FusedRun,
    Hit,
    Index,
    MinedNegatives,
    PreparedData,
    Report,
    SearchRun,
    TrainingRun,
    adapt,
    ance_refresh,
    average,
    demo,
    diagnose,
    encode,
    evaluate,
    experiment,
    finetune,
    fuse,
    index,
    prepare,
    pretrain,
    report,
    resolve_settings,
    search,
)
from seedr.version import __version__

__all__ = ["AveragedEncoder", "Diagnostics", "Embeddings", "Evaluation", "ExperimentRun", "FusedRun", "Hit", "Index",
           "MinedNegatives", "PreparedData", "Report", "SearchRun", "TrainingRun", "__version__", "adapt", "ance_refresh",
           "average", "demo", "diagnose", "encode", "evaluate", "experiment", "finetune", "fuse", "index", "prepare",
           "pretrain", "report", "resolve_settings", "search"]
