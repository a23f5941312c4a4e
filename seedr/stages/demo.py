"""`seedr demo`: the main job — the whole pipeline, small, on the embedded default data
(the experiment ``seedr/experiments/demo.yaml``)."""

from __future__ import annotations

from seedr.experiments.configs import DemoConfig
from seedr.stages.common import console
from seedr.stages.options import options_of


@options_of(DemoConfig)
def command(config: DemoConfig) -> None:
    """Prepare the embedded Wikipedia leads; fine-tune MiniLM with seedr's best recipe and fuse it with
    BM25; continue pre-training the seedr base with MLM and with SEED-Encoder and fine-tune both; compare
    all with BM25 and MiniLM as shipped on held-out queries (significance-tested), and write a report
    (Markdown, HTML) with tables and training curves into OUT/reports/demo.

    Example: seedr demo --out runs/demo-scifact --data ../shared/data/scifact --set pretrain_steps=300
    """
    from seedr.experiments import stage  # every stage's libraries

    config.console = console
    stage.run_demo(config)
