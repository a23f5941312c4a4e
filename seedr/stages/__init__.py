"""Thin command-line stages over the library packages, in data-flow order.

Each module defines one ``command`` function that ``seedr.cli`` registers under the module's name.
Logic lives in the library packages, never here.
"""

#: Data-flow order, as ``seedr --help`` lists them.
STAGES = ["prepare", "pretrain", "finetune", "encode", "index", "search", "evaluate", "report", "demo"]
