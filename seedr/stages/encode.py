"""`seedr encode`: embed a corpus into resumable ``.npy`` shards with a trained encoder."""

from __future__ import annotations

from pathlib import Path
from seedr.io.run_folders import CHECKPOINTS, PRODUCT
from seedr.pipeline import encode as encoding
from seedr.pipeline.encode import EncodeConfig
from seedr.stages.common import console
from seedr.stages.options import options_of


def _say_which_step(model: str, device: str | None) -> None:
    """For a run folder: which step of the run its ``encoder/`` is, and a warning when a newer checkpoint
    exists (a run killed between a checkpoint and the product's update, not yet resumed); said by the main
    process. Torch is imported only for a run folder, so that any other model's missing input is refused at
    once (``seedr.api.encode``)."""
    run = Path(model).expanduser()
    if not ((run / PRODUCT / "config.json").exists() and (run / CHECKPOINTS).is_dir()):
        return
    from accelerate import PartialState
    from rich.markup import escape

    from seedr.engine.checkpoint import product_steps

    if not PartialState(cpu=device == "cpu").is_main_process:
        return
    step, newest = product_steps(run)
    if step is not None:
        console.print(f"model: {escape(str(run / PRODUCT))}, step {step} of the run", highlight=False)
    if newest is not None and (step is None or newest > step):
        which = f"step {step}" if step is not None else "of no kept checkpoint"
        console.print(escape(f"warning: {run / PRODUCT} is {which}, but the run has a newer checkpoint, step "
                             f"{newest}: it was stopped before publishing it. Resume the run (--resume) to publish "
                             f"it, or encode {run / CHECKPOINTS / f'step-{newest}' / PRODUCT}"),
                      style="yellow", soft_wrap=True, highlight=False)


@options_of(EncodeConfig)
def command(config: EncodeConfig) -> None:
    """Encode every document of a corpus; run the same command again to resume an interrupted run.

    Under `torchrun` or `accelerate launch` each process encodes its own shards on its own device
    (shard i goes to process i mod N); the last process to finish completes the folder, whose shards
    are those one process makes.

    Example: seedr encode --model runs/finetune-seed --corpus scifact/corpus.jsonl --out runs/scifact-emb
    """
    _say_which_step(config.model, config.device)
    embeddings = encoding.run(config)
    if not embeddings.complete:
        console.print(f"process {embeddings.process_index} of {embeddings.num_processes}: its shards are in "
                      f"{embeddings.path}; the last process to finish completes the folder")
        return
    from seedr.retrieval.embeddings import read_manifest

    settings = read_manifest(embeddings.path)["encoder"]
    console.print(f"embeddings written to [bold]{embeddings.path}[/] "
                  f"(pooling {settings['pooling']}, normalize {settings['normalize']}, "
                  f"max length {settings['max_length']}, title {settings['title']}, "
                  f"computed in {settings['compute_dtype']})")
