"""A pre-trained condition keeps the vector its objective trained: an experiment's fine-tuning of a seed
pre-trained in its chain, and the retrieval of what that chain made, pool as the seed's objective trained
(``seedr.modeling.folders.seed_pooling``, the rule ``seedr finetune`` applies), unless the condition says
in words why not (``pooling_departure``).

``seedr finetune`` reads a seed's pooling from its folder (``pretrained_seed``); an experiment knows it before
the seed exists, from the chain's pre-training step (``trained_pooling`` of its objective and options), so that
a step's settings, and the key of its folder, are what the file resolves to before anything runs. A shared
block's ``pooling: cls`` (``shared/reqa_finetuning.yaml``, written for [CLS]-trained seeds) would otherwise
fine-tune Contriever's seed, trained through its mean-pooled crops, through a [CLS] it never trained. A
pooling left null is the model folder's own, the seed's, and is left so.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from seedr.config.loading import from_dict, merge_settings
from seedr.experiments.steps.base import build_step, condition_references
from seedr.modeling.folders import seed_pooling, trained_pooling
from seedr.objectives import OBJECTIVES

#: Steps whose product keeps the pooling of the model they start from: a weight average of a seed's
#: fine-tunings pools as they do; a diagnosis produces no model.
KEEPS_POOLING = ("average", "diagnose")


def _kept(settings: dict[str, Any], pooling: str | None, seed: str | None, departure: str | None
          ) -> tuple[dict[str, Any], bool]:
    """``(settings with the seed's pooling, whether they departed from it)`` for a step that resolves to
    ``pooling`` and starts from a model descending from a seed trained through ``seed``."""
    if pooling is None or seed is None or pooling == seed:  # null: the model folder's own, the seed's
        return settings, False
    kept = seed_pooling(pooling, seed, departure is not None)
    return (settings if kept == pooling else merge_settings(settings, {"pooling": kept})), True


def carry_seed_pooling(conditions: dict[str, Any], where: str) -> dict[str, Any]:
    """``conditions`` with each fine-tuning step of a seed pre-trained in its chain (or in the condition its
    settings name, ``{conditions.NAME}``) and the condition's dense retrieval pooling as the seed's objective
    trained, unless the condition declares ``pooling_departure``. Raises ``ValueError`` for a
    ``pooling_departure`` on a condition that departs from no seed's pooling (a note that says nothing)."""
    carried: dict[str, Any] = {}
    seeds: dict[str, str | None] = {}  # condition → the trained pooling of the seed its last model descends from
    for name, condition in conditions.items():
        departure, departed, seed, steps = condition.pooling_departure, False, None, []
        for index, spec in enumerate(condition.steps):
            if spec.kind == "diagnose":
                steps.append(spec)
                continue
            step = build_step(spec.kind, spec.settings, f"{where}: conditions.{name}.steps[{index}]")
            named = step.given_model()
            if named is not None:  # it starts from the model it names, not from the step before
                references = condition_references(named)
                seed = seeds.get(references[0]) if references else None
            if spec.kind == "pretrain":
                config = step.config()
                options = from_dict(OBJECTIVES.options(config.objective_name), config.objective, step.where)
                seed = trained_pooling(config.objective_name, options)
            elif spec.kind == "finetune":
                settings, departs = _kept(spec.settings, step.config().pooling, seed, departure)
                spec, departed = dataclasses.replace(spec, settings=settings), departed or departs
            elif spec.kind not in KEEPS_POOLING:
                seed = None
            steps.append(spec)
        seeds[name] = seed
        retrieve = condition.retrieve
        if isinstance(retrieve, dict) and "fuse" not in retrieve:
            retrieve, departs = _kept(retrieve, merge_settings(retrieve).get("pooling"), seed, departure)
            departed = departed or departs
        if departure is not None and not departed:
            raise ValueError(f"{where}: conditions.{name}.pooling_departure: the condition fine-tunes and "
                             "retrieves as its seed's objective trained (or has no pre-trained seed): there is "
                             "no departure to explain")
        carried[name] = dataclasses.replace(condition, steps=steps, retrieve=retrieve)
    return carried


__all__ = ["KEEPS_POOLING", "carry_seed_pooling"]
