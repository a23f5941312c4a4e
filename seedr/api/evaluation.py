"""``evaluate`` from Python: runs (files or ``SearchRun``s) scored on one task, with significance tests."""

from __future__ import annotations

import dataclasses
import io
import shutil

from seedr.api.keywords import keywords_of
from seedr.pipeline import evaluate as evaluation
from seedr.pipeline.evaluate import EvaluateConfig, Evaluated


@dataclasses.dataclass(repr=False)
class Evaluation(Evaluated):
    """Runs scored on one task (``evaluate``), with paired significance tests against the baseline
    (``seedr.pipeline.evaluate.Evaluated``: mode, table, components, details, notes, runs; ``metrics``,
    ``to_markdown``, ``to_dict``, ``tables``); printed, it shows what ``seedr evaluate`` prints."""

    def __str__(self) -> str:
        """What ``seedr evaluate`` prints, notes and tables, as plain text: ``print(evaluation)`` shows the
        differences and p-values the command shows, not only the marks of the Markdown table."""
        from rich.console import Console

        console = Console(file=io.StringIO(), width=shutil.get_terminal_size().columns, color_system=None)
        for note in self.notes:
            console.print(note, soft_wrap=True, highlight=False, markup=False)
        for table in self.tables():
            console.print(table)
        return console.file.getvalue()

    __repr__ = __str__  # a notebook shows the result as print does


@keywords_of(EvaluateConfig)
def evaluate(config: EvaluateConfig) -> Evaluation:
    """Score runs (``seedr evaluate``): IR metrics against ``qrels``, QA answer coverage (``qa_answers`` with
    the passage ``corpus``), ``reqa`` or MIND's impressions (``mind``); with several runs, each is tested
    against the ``baseline`` (default: the first). Queries missing from a run score 0; ties are broken by
    document id; metrics deeper than the runs are left out, with a note.

    Example:
        >>> evaluation = seedr.evaluate([dense_run, bm25_run], qrels="scifact/qrels/test.tsv")
        >>> evaluation.metrics["bm25"]["nDCG@10"]
    """
    evaluated = evaluation.run(config)
    return Evaluation(**{field.name: getattr(evaluated, field.name)
                         for field in dataclasses.fields(evaluated)})


__all__ = ["Evaluation", "evaluate"]
