"""The step ``tsdae_st``: TSDAE (Wang, Reimers and Gurevych, Findings of EMNLP 2021) through
sentence-transformers' own implementation at ``adapt``'s training compute, a baseline of the label-free
experiment. A step of the experiments alone (no command runs it), so it calls its one library function,
``seedr.training.tsdae_sentence_transformers.train_tsdae``, whose module says how it trains and counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seedr.config.loading import from_dict, merge_settings
from seedr.experiments.steps.base import STEPS, ExperimentStep
from seedr.training.tsdae_sentence_transformers import TsdaeStConfig, matched_steps, train_tsdae


@STEPS.register("tsdae_st")
class TsdaeStStep(ExperimentStep):
    """TSDAE through sentence-transformers (the module docstring): settings are ``TsdaeStConfig`` keys; the
    product is the trained encoder."""

    kind = "tsdae_st"
    model_key = "model"

    def config(self) -> TsdaeStConfig:
        settings = merge_settings(self.settings)
        if isinstance(settings.get("corpus"), str):
            settings["corpus"] = [settings["corpus"]]
        try:
            return from_dict(TsdaeStConfig, settings, f"{self.where} tsdae_st")
        except ValueError as error:  # the config's own checks name no place
            message = str(error)
            raise ValueError(message if message.startswith(self.where) else f"{self.where} tsdae_st: {message}") from None

    def steps(self, shape: Any) -> int:
        """The steps it trains for an encoder of ``shape`` (``matched_steps``)."""
        return matched_steps(self.config(), shape)

    def run(self, out_dir: Path) -> dict[str, Any]:
        return train_tsdae(self.config(), out_dir)


__all__ = ["TsdaeStStep"]
