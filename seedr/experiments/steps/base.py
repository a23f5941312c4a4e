"""What every experiment step is: the ``ExperimentStep`` interface, the registry of step kinds
(``STEPS``), building a step from its kind and settings, and marking a finished one (``record_step``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, ClassVar

from seedr.config.loading import identity, merge_settings, read_recipe
from seedr.io import atomic_write
from seedr.recipes import recipe_path
from seedr.registry import Registry

#: The step kinds an experiment file names, filled by the modules that define them
#: (``seedr.experiments.steps.training`` and ``.setup``, which the package imports).
STEPS: Registry[type[ExperimentStep]] = Registry("experiment step")

class ExperimentStep:
    """A kind of step: validate its settings, run it into a folder, name the model it produced."""

    #: Its name in ``STEPS`` (the key of the step in an experiment file).
    kind: ClassVar[str]
    #: Setting that names the model a step starts from, filled with the previous step's product.
    model_key: ClassVar[str | None] = None
    #: The stage whose shipped recipes (``seedr.recipes``) the setting ``config`` names, as the stage
    #: command's ``--config`` does (``settings_over_recipe``); steps of other kinds take no ``config``.
    recipe_stage: ClassVar[str] = ""
    #: Whether the report shows this step's run (its training curves and result JSONs); steps that train
    #: nothing of their own (set-up steps, averaging) have none to show.
    reports_run: ClassVar[bool] = True

    def __init__(self, settings: dict[str, Any], where: str) -> None:
        self.settings = settings
        self.where = where

    def with_model(self, model: str | None) -> ExperimentStep:
        """This step starting from ``model`` (the previous step's product) unless it names its own."""
        if model is None or self.model_key is None or self.given_model() is not None:
            return self
        return type(self)(merge_settings(self.settings, {self.model_key: model}), self.where)

    def given_model(self) -> str | None:
        """The model the settings name under ``model_key`` (dotted, or inside a nested mapping), if any."""
        if self.model_key is None:
            return None
        given: Any = merge_settings(self.settings)
        for part in self.model_key.split("."):
            given = given.get(part) if isinstance(given, dict) else None
        return given

    def settings_over_recipe(self) -> dict[str, Any]:
        """The settings, nested, over the recipe their ``config`` names (a recipe's name or a YAML file,
        as ``--config``): the stage's defaults, then the recipe, then the settings, as the stage command
        layers them, so that an experiment names a shipped recipe instead of copying it. The step's
        folder is keyed on the config this builds, not on the recipe's name."""
        settings = merge_settings(self.settings)
        recipe = settings.pop("config", None)
        if recipe is None:
            return settings

        try:
            path = recipe_path(recipe, self.recipe_stage)
        except FileNotFoundError as error:
            raise ValueError(f"{self.where} {self.kind}.config: {error}") from None
        return merge_settings(read_recipe(path), settings)

    def config(self) -> Any:
        """The stage's config built from the settings: defaults applied, validated (``ValueError`` naming
        ``self.where`` and the key for settings the stage does not take)."""
        raise NotImplementedError

    def validate(self) -> None:
        """Raise ``ValueError`` naming ``self.where`` and the key for settings the stage does not take."""
        self.config()

    def resolved(self) -> Any:
        """What this step computes, in JSON-like data (``seedr.config.loading.identity`` of its config): its folder
        is keyed on it, so settings that resolve alike share a step (a default given explicitly, a
        warm-up as a share or in steps) and a changed default gives a new one."""
        return identity(self.config())

    def run(self, out_dir: Path) -> dict[str, Any]:
        """Run into ``out_dir`` (resuming what an interrupted run left there); returns a summary."""
        raise NotImplementedError

    def code(self) -> list[str]:
        """The code this step runs, on which its key rests (``seedr.provenance.code_fingerprint``): its own
        class, whose closure follows the library it calls, and the registry members its settings choose
        (``chosen_code``), which the closure cannot see."""
        return [f"{type(self).__module__}:{type(self).__qualname__}", *self.chosen_code()]

    def chosen_code(self) -> list[str]:
        """The modules of the registered objective, loss or negative strategy the settings name."""
        return []

    def run_folder(self, out_dir: Path) -> Path:
        """The run folder the stage writes for this step in ``out_dir``: ``out_dir`` itself, unless the
        stage nests its run in it."""
        return out_dir

    def product(self, out_dir: Path) -> str | None:
        """The model this step produced (for the next step and for retrieval), if any."""
        return str(self.run_folder(out_dir) / "encoder")

    def history_dirs(self, out_dir: Path) -> list[Path]:
        """Run folders whose training curves (and result JSONs) the report shows."""
        return [self.run_folder(out_dir)] if self.reports_run else []

    def figures(self, out_dir: Path) -> list[Path]:
        """Figures of the step itself that the report shows."""
        return []


#: ``{conditions.NAME}`` in a step's settings: the model condition NAME's steps produced.
_CONDITION_REFERENCE = re.compile(r"\{conditions\.([^{}]+)\}")


def condition_references(value: Any) -> list[str]:
    """The conditions named by ``{conditions.NAME}`` anywhere in ``value`` (strings, lists, mappings)."""
    if isinstance(value, dict):
        return [name for item in value.values() for name in condition_references(item)]
    if isinstance(value, list):
        return [name for item in value for name in condition_references(item)]
    return _CONDITION_REFERENCE.findall(value) if isinstance(value, str) else []


def build_step(kind: str, settings: dict[str, Any], where: str) -> ExperimentStep:
    """The step of ``kind`` with ``settings`` (``where`` names it in errors)."""
    return STEPS.get(kind)(settings, where)


def record_step(out_dir: Path, step: ExperimentStep, summary: dict[str, Any], seconds: float,
                code: dict[str, str]) -> None:
    """Mark a step finished: ``step.json`` holds its settings, the configuration they resolved to (its
    key), the code that computed it (``seedr.provenance.code_fingerprint``: the report says which code
    computed a reused step), its summary and wall time (written last)."""
    with atomic_write(out_dir / "step.json") as stream:
        json.dump({"settings": step.settings, "resolved": step.resolved(), "code": code, "summary": summary,
                   "seconds": seconds}, stream, indent=2, default=str)

