"""Configuration, in one home: the settings of the training stages as dataclasses (``settings``), the
pre-training objectives' options (``objective_options``), both torch-free, and how recipes, ``--set``
and experiment steps fill them (``loading``: bounded YAML, ``load_config``, ``describe_settings``).
Import each from its module."""
