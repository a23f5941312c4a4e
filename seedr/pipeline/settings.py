"""A training stage's settings resolved, and nothing run: ``seedr config`` and ``seedr.resolve_settings``
(``seedr.pipeline.resolution``: the defaults, the recipe, the stage's setting keywords, the overrides)."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from seedr.pipeline.common import Settings
from seedr.pipeline.finetune import FinetuneStageConfig
from seedr.pipeline.options import check_options, option
from seedr.pipeline.pretrain import PretrainStageConfig, overrides_of
from seedr.pipeline.resolution import given_settings, resolve, setting_keywords

#: The stage configs whose setting keywords ``resolve_settings`` takes.
SETTING_STAGES: dict[str, type] = {"pretrain": PretrainStageConfig, "finetune": FinetuneStageConfig}


@dataclasses.dataclass(kw_only=True)
class SettingsConfig:
    """What ``seedr config`` resolves."""

    stage: str = option(help="The stage whose settings to resolve: pretrain or finetune.", positional=True,
                        argument=True)
    config: str | None = option(
        None, help="Recipe: a name shipped with seedr (seedr/recipes/STAGE/NAME.yaml, e.g. seed) or a YAML "
                   "file.")
    settings: Settings | None = option(
        None, help="Override a setting: key=value, e.g. train.batch_size=8 (repeatable).", flag="--set",
        cli_type=list[str])
    describe: bool = option(False, help="Each key on a line with its description, instead of YAML.")

    def __post_init__(self) -> None:
        check_options(self)
        self.settings = overrides_of(self.settings)


def run(request: SettingsConfig) -> Any:
    """The config ``request.stage`` would run with (``resolve``), as a run on one process records it in its
    ``config.yaml``."""
    return resolve(request.stage, request.config, request.settings, processes=1)


def resolve_settings(stage: str, config: str | os.PathLike | None = None, settings: Settings | None = None, *,
                     processes: int | None = None, **options: Any) -> Any:
    """The resolved config of ``stage`` (``pretrain`` or ``finetune``): its defaults, then the recipe
    ``config`` (a name shipped with seedr, e.g. ``seed``, or a YAML file), then ``options`` (the stage's
    setting keywords: ``model``, ``corpus``, ``objective`` ...), then the overrides ``settings``. Nothing
    runs; unknown keys raise ``ValueError`` listing the valid ones. With ``processes``, the gradient
    accumulation is the one a run on that many processes takes, as its ``config.yaml`` records it (``seedr
    config`` shows one process's); without, it is left to the run, which knows its launcher. A pre-trained
    seed pools as its objective trained (``seedr.pipeline.resolution.resolve``).

    Example:
        >>> seedr.resolve_settings("pretrain", config="seed", settings={"train.batch_size": 8}).train.global_batch_size
        256
    """
    keywords = setting_keywords(SETTING_STAGES[stage]) if stage in SETTING_STAGES else {}
    unknown = sorted(set(options) - set(keywords))
    if unknown:
        raise TypeError(f"{stage}: unknown option(s) {unknown}; options: {', '.join(keywords)} (others go in "
                        "settings)")
    return resolve(stage, config, settings, given_settings(keywords, options), processes=processes)


__all__ = ["SETTING_STAGES", "SettingsConfig", "resolve_settings", "run"]
