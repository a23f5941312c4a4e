"""Thin command-line stages over the library packages, in data-flow order.

Each module defines one ``command`` function that ``seedr.cli`` registers under the module's name.
Logic lives in the library packages, never here.

A stage module imports at module level only what its typer signature needs (typer, the standard
library, ``seedr.stages.common``) and imports the library inside the command body: ``seedr.cli``
imports every stage to list them, so one module-level import of torch, transformers or faiss would
make every ``seedr --help`` wait seconds for packages it never uses. Registry names shown in an
option's help are therefore written out, and ``tests/test_cli.py`` checks them against the registries.
"""

#: Data-flow order, as ``seedr --help`` lists them; ``config`` (the settings a run would use) last.
STAGES = ["prepare", "pretrain", "finetune", "adapt", "average", "encode", "index", "search", "fuse", "evaluate", "diagnose",
          "report", "experiment", "demo", "config"]
