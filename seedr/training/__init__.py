"""Training runs: pre-training with one objective (``pretrain.py``, behind ``seedr pretrain``), fine-tuning a
dual encoder with a loss and a negative strategy (``finetune.py``), few-shot samples of the labels
(``few_shot.py``) and the model card of a run's product (``run_card.py``), over the engine of
``seedr.engine`` (a package of its own layer, below the objectives)."""
