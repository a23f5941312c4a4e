"""Configuration, in one home: the settings of the training stages as dataclasses (``settings``), torch-free,
and how recipes, ``--set`` and experiment steps fill them (``loading``: bounded YAML, ``load_config``,
``describe_settings``); the pre-training objectives' options, in the same layer and torch-free too, are in
their folders (``seedr/objectives/<name>/options.py``). Import each from its module."""
