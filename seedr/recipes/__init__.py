"""The recipes: one YAML file per setting of the papers, for ``seedr pretrain`` (``pretrain/``) and
``seedr finetune`` (``finetune/``), shipped inside the package and found with ``importlib.resources``,
so that ``--config seed`` works wherever seedr is installed, not only from a checkout.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

#: The stages that read recipes, each from the folder of its name.
STAGES = ("pretrain", "finetune")


def recipes_dir(stage: str) -> Path:
    """The folder of ``stage``'s recipes. seedr is installed as files (a wheel unpacks; a checkout is
    files), so the package resource is a folder on disk, which error messages and run folders name."""
    if stage not in STAGES:
        raise ValueError(f"no recipes for {stage!r}; stages with recipes: {', '.join(STAGES)}")
    return Path(str(resources.files(__package__) / stage))


def recipe_names(stage: str) -> list[str]:
    """The names ``--config`` takes for ``stage``, sorted."""
    return sorted(path.stem for path in recipes_dir(stage).glob("*.yaml"))


def recipe_path(recipe: str | Path, stage: str) -> Path:
    """The file of ``recipe``: itself when it is a path (a ``.yaml`` name or an existing file), else the
    recipe of that name shipped with seedr (``seed`` → ``seedr/recipes/pretrain/seed.yaml``)."""
    path = Path(recipe)
    if path.suffix in (".yaml", ".yml") or path.is_file():
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such recipe file")
        return path
    candidate = recipes_dir(stage) / f"{recipe}.yaml"
    if not candidate.is_file():
        raise FileNotFoundError(f"{candidate}: no {stage} recipe {str(recipe)!r}; known: "
                                f"{', '.join(recipe_names(stage)) or '(none)'}")
    return candidate


__all__ = ["STAGES", "recipe_names", "recipe_path", "recipes_dir"]
