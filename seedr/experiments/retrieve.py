"""How a condition's model retrieves: an experiment's ``retrieve:`` options, each a field of the pipeline's
``seedr encode`` / ``index`` / ``search`` configs, so that a condition's retrieval is those stages run with
those options (``seedr.experiments.tasks.RetrievalTask.dense_run``)."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any

from seedr.pipeline.encode import EncodeConfig
from seedr.pipeline.index import IndexConfig
from seedr.pipeline.options import check_options, default_of
from seedr.pipeline.search import SearchConfig

#: Each ``retrieve:`` key, and the stage configs' fields it sets (its type, default and help are the
#: first's). ``query_max_length`` is ``seedr search``'s ``--max-length``; ``batch_size`` is documents per
#: forward pass and queries per forward pass alike.
OPTIONS: dict[str, tuple[tuple[type, str], ...]] = {
    "model": ((EncodeConfig, "model"),),
    "pooling": ((EncodeConfig, "pooling"),),
    "normalize": ((EncodeConfig, "normalize"),),
    "max_length": ((EncodeConfig, "max_length"),),
    "query_max_length": ((SearchConfig, "max_length"),),
    "compute_dtype": ((EncodeConfig, "compute_dtype"),),
    "batch_size": ((EncodeConfig, "batch_size"), (SearchConfig, "batch_size")),
    "title": ((EncodeConfig, "title"),),
    "document_prefix": ((EncodeConfig, "document_prefix"),),
    "long_documents": ((EncodeConfig, "long_documents"),),
    "query_prefix": ((SearchConfig, "query_prefix"),),
    "factory": ((IndexConfig, "factory"),),
    "metric": ((IndexConfig, "metric"),),
    "train_sample": ((IndexConfig, "train_sample"),),
    "k": ((SearchConfig, "k"),),
    "nprobe": ((SearchConfig, "nprobe"),),
    "ef_search": ((SearchConfig, "ef_search"),),
}

#: Where an experiment's default is not the stage's: ``model``, the last step's product unless a condition
#: without steps names one (``minilm`` zero-shot); ``compute_dtype``, float32 unless asked (``auto``, the
#: stage's, would compute in bf16 on a CPU or GPU with native bf16, and move results recorded in float32).
EXPERIMENT_DEFAULTS: dict[str, Any] = {"model": None, "compute_dtype": None}


def _field(key: str) -> tuple[str, Any, dataclasses.Field]:
    config_class, name = OPTIONS[key][0]
    source = next(field for field in dataclasses.fields(config_class) if field.name == name)
    kind = typing.get_type_hints(config_class)[name]
    if key in EXPERIMENT_DEFAULTS:
        default = EXPERIMENT_DEFAULTS[key]
        kind = kind | None if default is None else kind
    else:
        default = default_of(source)
    return key, kind, dataclasses.field(default=default, metadata=source.metadata)


class _Stages:
    """The stage configs a ``RetrieveConfig`` makes."""

    def __post_init__(self) -> None:
        check_options(self)  # the stage fields' own bounds: ``k: 0`` is refused as ``seedr search --k 0`` is

    def _options(self, config_class: type) -> dict[str, Any]:
        """This config's values of ``config_class``'s fields, by that class's names."""
        return {name: getattr(self, key) for key, fields in OPTIONS.items() if key != "model"
                for owner, name in fields if owner is config_class}

    def encode_config(self, model: str, corpus: Any, out: Path, limit: int | None = None) -> EncodeConfig:
        """``seedr encode --model MODEL --corpus CORPUS --out OUT --limit LIMIT`` with these options."""
        return EncodeConfig(model=model, corpus=corpus, out=out, limit=limit, **self._options(EncodeConfig))

    def index_config(self, embeddings: Path, out: Path) -> IndexConfig:
        """``seedr index --embeddings EMBEDDINGS --out OUT`` with these options."""
        return IndexConfig(embeddings=embeddings, out=out, **self._options(IndexConfig))

    def search_config(self, **sources: Any) -> SearchConfig:
        """``seedr search`` of ``sources`` (``queries=``, ``index=`` ...) with these options."""
        return SearchConfig(**sources, **self._options(SearchConfig))


RetrieveConfig = dataclasses.make_dataclass("RetrieveConfig", [_field(key) for key in OPTIONS], bases=(_Stages,))
RetrieveConfig.__module__ = __name__
RetrieveConfig.__doc__ = """How a condition's model retrieves: the ``retrieve:`` options (``OPTIONS``), each the field of
``seedr encode`` / ``index`` / ``search`` it sets, with that field's type, default and help (but for
``EXPERIMENT_DEFAULTS``)."""

__all__ = ["EXPERIMENT_DEFAULTS", "OPTIONS", "RetrieveConfig"]
