"""``metrics.jsonl``: the training log of a run folder, one JSON object per logged step (``step``,
``loss``, the loss parts, ``dev/<metric>`` ...), appended by ``seedr.engine.trainer.Trainer``.

The one reader of it (the trainer on resume, the model card, reports): a run killed while writing a line
leaves that last line torn, and it is left out; a line that does not parse anywhere else is damage, a
``DataError`` naming the line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from seedr.io import DataError, iter_lines, parse_json

METRICS = "metrics.jsonl"


def read_metrics(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The logged lines of a ``metrics.jsonl`` (a run folder is read as its ``metrics.jsonl``), in order;
    ``[]`` when there is none. A torn last line (the one a kill cut short) is left out.

    Example:
        >>> read_metrics("runs/seed")[-1]["loss"]  # doctest: +SKIP
    """
    path = Path(path)
    if path.is_dir():
        path = path / METRICS
    if not path.exists():
        return []
    lines = [(number, text) for number, text in iter_lines(path) if text.strip()]
    records = []
    for position, (number, text) in enumerate(lines):
        try:
            record = parse_json(text, path, number)
        except DataError:
            if position == len(lines) - 1:
                break  # the torn last line of a killed run
            raise
        if not isinstance(record, dict):
            raise DataError(path, f"expected a JSON object, got {type(record).__name__}", line=number)
        records.append(record)
    return records


def append_metrics(path: str | os.PathLike, line: dict[str, Any]) -> None:
    """Append one logged step to a ``metrics.jsonl``."""
    with open(path, "a", encoding="utf-8") as stream:
        stream.write(json.dumps(line) + "\n")


__all__ = ["METRICS", "append_metrics", "read_metrics"]
