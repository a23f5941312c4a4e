"""Score runs on one task, with paired significance tests against a baseline: ``seedr evaluate``,
``seedr.evaluate`` and every experiment's comparison tables (``seedr.experiments.scoring``) score and compare
runs here.

Tasks (``seedr.evaluation.tasks``): IR metrics against qrels, DPR's answer coverage, ReQA, or MIND's
impression metrics (Wu et al., ACL 2020: AUC, MRR, nDCG@5, nDCG@10, as SEED-Encoder's Table 3 reports them).
A metric deeper than the runs is left out (``left_out``); the tests are SEED-Encoder's permutation test or
CPDAE's t-test.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from seedr.evaluation import DEFAULT_METRICS
from seedr.io import EVALUATION_MARKDOWN_MARKER, DataError, atomic_files, check_output
from seedr.pipeline.common import Source, input_paths, path_strings
from seedr.pipeline.options import AT_LEAST_ONE, Bound, check_options, option


def _cutoffs(text: Any) -> list[int]:
    """``--ks 1,5,20`` as integers (a default given as a list passes as it is)."""
    if not isinstance(text, str):
        return list(text)
    try:
        return [int(k) for k in text.split(",") if k.strip()]
    except ValueError:
        raise ValueError(f"--ks: {text!r} is not a comma-separated list of integers") from None


@dataclasses.dataclass(kw_only=True)
class EvaluateConfig:
    """What ``evaluate`` runs with."""

    runs: Sequence[Any] = option(help="TREC run files (several: a comparison table).", cli_type=list[Path],
                                 positional=True, argument=True)
    qrels: str | os.PathLike | None = option(
        None, help="Relevance judgments: TREC qrels, BEIR qrels TSV, parquet or a Hugging Face save_to_disk "
                   "folder (query-id, corpus-id, score).", cli_type=Path)
    metrics: Sequence[str] | str | None = option(
        ",".join(DEFAULT_METRICS), help="Comma-separated ir_measures names: MRR@10, nDCG@10, R@100, MAP, "
                                        "R(rel=2)@1000 ...", cli_type=str)
    qa_answers: Source | None = option(
        None, help="QA coverage: NQ-open / DPR QA JSONL with answers, the questions the runs were searched "
                   "with (repeatable, folders and quoted globs too).", cli_type=list[Path])
    corpus: Source | None = option(
        None, help="QA coverage: the passage corpus the runs rank: a file, a folder (of shards, or made by "
                   "`seedr prepare`) or a quoted glob; repeatable.", cli_type=list[Path])
    ks: Sequence[int] = option((1, 5, 20, 100), help="QA coverage: the k of top-k accuracy.",
                               bound=Bound(int, 1, many=True), parser=_cutoffs)
    qa_title: bool = option(
        False, help="QA coverage: look for answers in passage titles too. Default: text only, DPR's "
                    "convention (its has_answer reads the passage text), so figures compare with DPR's Table "
                    "2; retrieval still reads titles (BM25 indexes them, encoders see 'title [SEP] text').",
        flag="--qa-title/--no-qa-title")
    reqa: str | os.PathLike | None = option(
        None, help="ReQA: the SQuAD JSON the runs were made from (Recall@k, MRR).", cli_type=Path)
    mind: str | os.PathLike | None = option(
        None, help="MIND: the behaviors.tsv of the impressions the runs rerank (a run's query ids are "
                   "impression ids, its documents their candidate news): AUC, MRR, nDCG@5, nDCG@10 (Wu et "
                   "al., ACL 2020).",
        cli_type=Path)
    baseline: Any = option(None, help="Run to test the others against (default: the first).", cli_type=Path)
    test: str = option("permutation", help="Paired test: permutation (SEED-Encoder) or ttest (CPDAE).")
    alpha: float = option(0.05, help="Significance level.", bound=Bound(float, 0, 1, open=True))
    resamples: int = option(10_000, help="Permutation test resamples.", bound=AT_LEAST_ONE)
    ignore_identical_ids: bool = option(False, help="Drop documents whose id is the query's (BEIR's option).")
    components: bool = option(
        True, help="Test each fused run (`seedr fuse`) against each run it was fused from, read from its "
                   "record (unless given among the runs).", flag="--components/--no-components")
    force: bool = option(
        False, help="QA coverage and ReQA: score a run that does not record the questions it was searched "
                    "with (no RUN.json beside it: a run made by another tool), with a warning; without it, "
                    "such a run is refused.")
    json_out: Path | None = option(None, help="Write the results as JSON.", flag="--json")
    markdown_out: Path | None = option(None, help="Write the table as Markdown.", flag="--markdown")
    overwrite: bool = option(
        False, help="Replace --json / --markdown files seedr evaluate wrote before (nothing else).")
    show_progress: bool = option(True, help="Progress bars where scoring is slow.", command_line=False)

    def __post_init__(self) -> None:
        check_options(self)
        given = {"qrels": self.qrels, "qa": self.qa_answers, "reqa": self.reqa, "mind": self.mind}
        modes = [mode for mode, source in given.items() if source is not None]
        if len(modes) != 1:
            raise ValueError("give exactly one of qrels (--qrels), qa_answers (--qa-answers, with --corpus), "
                             "reqa (--reqa), mind (--mind)")
        self.mode = modes[0]
        if self.qa_answers is not None and self.corpus is None:
            raise ValueError("qa_answers (--qa-answers) needs corpus (--corpus), the passage corpus the runs "
                             "rank")
        if not self.runs:
            raise ValueError("give at least one run to evaluate")
        metrics = DEFAULT_METRICS if self.metrics is None else self.metrics
        self.metrics = [name.strip() for name in metrics.split(",") if name.strip()] \
            if isinstance(metrics, str) else list(metrics)
        self.json_out = None if self.json_out is None else Path(self.json_out)
        self.markdown_out = None if self.markdown_out is None else Path(self.markdown_out)


@dataclasses.dataclass(repr=False)
class Evaluated:
    """Runs scored on one task (``run``), with paired significance tests against the baseline.

    Attributes:
        mode: ``qrels``, ``qa`` (answer coverage), ``reqa`` or ``mind``.
        table: the comparison (``seedr.evaluation.compare.ComparisonTable``): each system's mean per metric,
            its difference to the baseline and the test's p-value.
        components: a fused run's tables against each run it was fused from.
        details: query counts, left-out metrics, questions.
        notes: what the evaluation had to say (metrics left out, runs without a record of their queries).
        runs: each system's name and the run it is.
    """

    mode: str
    table: Any
    components: dict[str, dict[str, Any]]
    details: dict[str, Any]
    notes: list[str]
    runs: dict[str, str]

    @property
    def metrics(self) -> dict[str, dict[str, float]]:
        """``{system: {metric: mean}}``."""
        return {system: {metric: comparison.systems[system].mean
                         for metric, comparison in self.table.comparisons.items()}
                for system in self.table.systems}

    def to_markdown(self) -> str:
        return self.table.to_markdown()

    def tables(self) -> list[Any]:
        """The ``rich`` tables ``seedr evaluate`` prints: the comparison, each value with its difference to
        the baseline and p-value, then each fused run against each run it was fused from."""
        return [self.table.to_rich(title=f"{self.mode} evaluation"),
                *(against.to_rich(title=f"fused {name} vs its component {component}")
                  for name, tables in self.components.items() for component, against in tables.items())]

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``seedr evaluate --json``."""
        result: dict[str, Any] = {"mode": self.mode, "runs": self.runs, **self.details}
        if len(self.table.systems) == 1:
            result["metrics"] = self.metrics[self.table.systems[0]]
        else:
            result["comparison"] = self.table.to_dict()
        if self.components:
            result["components"] = {name: {component: against.to_dict()
                                           for component, against in tables.items()}
                                    for name, tables in self.components.items()}
        return result


def left_out(task: Any, depth: int) -> tuple[list[str], str | None]:
    """The metrics of ``task`` (a ``seedr.evaluation`` task) deeper than runs ``depth`` documents deep, which
    would equal their value at ``depth`` (Top-100 or R@1000 of a run 20 deep), and the note that says so;
    ``task`` keeps the others. Raises ``ValueError`` when every metric is too deep."""
    too_deep = task.deeper_than(depth)
    if not too_deep:
        return [], None
    if len(too_deep) == len(task.metrics):
        raise ValueError(f"every metric asked for is deeper than the runs ({depth} {task.ranked})")
    task.metrics = [metric for metric in task.metrics if metric not in too_deep]
    return too_deep, (f"left out {', '.join(too_deep)}: the runs rank at most {depth} {task.ranked}, so "
                      f"these would equal their value at {depth} (search with a larger k, --k)")


def compare(per_system: Mapping[str, dict[str, dict[str, float]]], baseline: str,
            metrics: Sequence[str] | None, test: str, alpha: float, resamples: int,
            show_progress: bool = False) -> Any:
    """The comparison table of systems scored per query (``{system: {metric: {query: value}}}``), each
    tested against ``baseline`` by the paired ``test`` at ``alpha``
    (``seedr.evaluation.compare.comparison_table``)."""
    from seedr.evaluation.compare import comparison_table  # scipy's tests: once the runs are read

    return comparison_table(dict(per_system), baseline, metrics, test=test, alpha=alpha,
                            n_resamples=resamples, show_progress=show_progress)


def run(config: EvaluateConfig) -> Evaluated:
    """Score ``config.runs`` (and each fused run's components) on the task ``config.mode`` names; with several
    runs, test each against the baseline (default: the first). Queries missing from a run score 0; ties are
    broken by document id; metrics deeper than the runs are left out, with a note. Writes ``--json`` and
    ``--markdown`` when asked, both or neither."""
    sources = (config.qrels, config.qa_answers, config.corpus, config.reqa, config.mind)
    read = input_paths(*[run for run in config.runs if _path_of(run) is not None], *sources)
    for path, kind, flag in ((config.json_out, "evaluation JSON", "--json"),
                             (config.markdown_out, "evaluation Markdown", "--markdown")):
        if path is not None:
            check_output(path, kind, overwrite=config.overwrite, inputs=read, option=flag)
    evaluated = _evaluate(config)
    with atomic_files() as files:  # both or neither: a full disk at the Markdown keeps no JSON
        if config.json_out is not None:
            with files.write(config.json_out) as stream:
                json.dump(evaluated.to_dict(), stream, indent=2)
        if config.markdown_out is not None:
            with files.write(config.markdown_out) as stream:
                stream.write(f"{EVALUATION_MARKDOWN_MARKER}\n{evaluated.to_markdown()}")
    return evaluated


def _evaluate(config: EvaluateConfig) -> Evaluated:
    from seedr.data.runs import check_run_queries, ignore_identical_ids, read_trec_run
    from seedr.evaluation.metrics import run_depth
    from seedr.retrieval.fusion import fused_components

    notes: list[str] = []
    systems = [_System.of(run) for run in config.runs]
    keys = [system.key for system in systems]
    if config.baseline is not None and _System.of(config.baseline).key not in keys:
        systems = [_System.of(config.baseline), *systems]
    given = len(systems)
    fused: dict[int, list[int]] = {}  # a fused run's position → its components' positions
    for position, system in enumerate(systems[:given] if config.components else []):
        if system.path is None:
            continue
        found, warnings = fused_components(system.path)
        notes.extend(f"warning: {warning}" for warning in warnings)
        for component in found:
            keys = [each.key for each in systems]
            if str(component.resolve()) not in keys:
                systems.append(_System.of(component))
                keys.append(str(component.resolve()))
            fused.setdefault(position, []).append(keys.index(str(component.resolve())))
    names = _names(systems)
    baseline = names[[system.key for system in systems].index(_System.of(config.baseline).key)] \
        if config.baseline is not None else names[0]
    loaded = {name: system.read(read_trec_run) for name, system in zip(names, systems)}
    for name, system in zip(names, systems):
        if not loaded[name]:  # zeros for every query would read as a result
            raise DataError(system.path or name,
                            "the run ranks no documents (an empty run): nothing to evaluate")
    if config.ignore_identical_ids:
        loaded = {name: ignore_identical_ids(ranking) for name, ranking in loaded.items()}

    details: dict[str, Any] = {}
    task = _task(config)
    depth = min(run_depth(ranking) for ranking in loaded.values())
    too_deep, note = left_out(task, depth)
    if note is not None:
        notes.append(note)
        details["left_out"] = {"metrics": too_deep, "run_depth": depth}
    if config.mode == "qrels":
        per_system = {name: task.per_query(ranking) for name, ranking in loaded.items()}
        details["queries"] = {name: task.query_counts(ranking) for name, ranking in loaded.items()}
        for name, system in zip(names, systems):
            notes.extend(_judged_overlap(details["queries"][name], name, system.label, config.qrels))
    elif config.mode == "mind":
        per_system = {name: task.per_query(ranking) for name, ranking in loaded.items()}
        details["impressions"] = len(task.queries())
    else:  # QA and ReQA runs must have been searched with these questions
        asked = task.queries()
        source = ", ".join(map(str, path_strings(config.qa_answers) if config.qa_answers is not None
                               else [config.reqa]))
        for system in systems:
            warning = system.check_queries(asked, source, check_run_queries)
            if warning and not config.force:
                reason = warning.split(": ", 1)[-1]
                raise DataError(system.path, f"{reason}: question ids are line numbers, so a run of other "
                                             "questions would be scored silently wrong; pass --force "
                                             "(force=True) to score it anyway (a run made by another tool)")
            if warning:
                notes.append(f"warning: {warning}")
        if config.mode == "qa":
            from seedr.evaluation.qa_coverage import ranked_passages

            task.passages = ranked_passages(loaded.values(), config.corpus,
                                            show_progress=config.show_progress)
        per_system = {name: task.per_query(ranking, show_progress=config.show_progress)
                      for name, ranking in loaded.items()}
        details["questions"] = len(asked)

    tests = (config.test, config.alpha, config.resamples)
    table = compare({name: per_system[name] for name in names[:given]}, baseline, None, *tests,
                    config.show_progress)
    versus = {names[position]: {names[part]: compare({names[part]: per_system[names[part]],
                                                      names[position]: per_system[names[position]]},
                                                     names[part], None, *tests)
                                for part in parts}
              for position, parts in fused.items()}
    details["ignore_identical_ids"] = config.ignore_identical_ids
    return Evaluated(config.mode, table, versus, details, notes,
                     {name: system.label for name, system in zip(names, systems)})


def _task(config: EvaluateConfig) -> Any:
    """The evaluation task ``config.mode`` names, with its metrics."""
    if config.mode == "reqa":
        from seedr.evaluation.reqa import ReqaTask  # faiss, for its candidates' index

        return ReqaTask(config.reqa)
    if config.mode == "mind":
        from seedr.evaluation.mind import MindTask

        return MindTask(config.mind)
    from seedr.evaluation.tasks import QaCoverageTask, QrelsTask

    if config.mode == "qa":
        return QaCoverageTask(config.qa_answers, [f"Top-{k}" for k in config.ks],
                              include_title=config.qa_title)
    return QrelsTask(config.qrels, config.metrics)


#: Under this share of the judged queries in a run, ``evaluate`` warns: its means are mostly zeros.
_FEW_JUDGED = 0.5


def _judged_overlap(counts: Mapping[str, int], name: str, label: str, qrels: str | os.PathLike) -> list[str]:
    """The notes on how many judged queries a run answers (``QrelsTask.query_counts``): a warning naming the
    counts when it is under half of them; a ``DataError`` naming ``qrels`` and the run when it is none, for
    every metric would be 0.0, a figure that reads as a result (query ids prefixed, another collection)."""
    judged, answered, unjudged = counts["judged"], counts["evaluated"], counts["unjudged_in_run"]
    if not answered:
        raise DataError(qrels, f"none of its {judged} judged queries is in the run {label} ({unjudged} "
                               "queries there are unjudged): score the run against the judgements of its "
                               "own queries")
    missing = (f"{counts['missing_from_run']} judged queries missing from the run (scored 0), {unjudged} "
               "unjudged queries ignored")
    if answered < _FEW_JUDGED * judged:
        return [f"warning: {name}: only {answered} of the {judged} judged queries of {qrels} are in the run, "
                f"so its means are mostly zeros ({missing}): are the run and the judgements of the same "
                "queries?"]
    return [f"{name}: {missing}"] if counts["missing_from_run"] or unjudged else []


def _held(run: Any) -> bool:
    """A run held in memory (the API's ``SearchRun``: its ranking and the queries it answers), not a path."""
    return hasattr(run, "run") and hasattr(run, "queries")


def _path_of(run: Any) -> Path | None:
    if _held(run) and run.path is None:
        return None
    return Path(os.fspath(run))


@dataclasses.dataclass(frozen=True)
class _System:
    """A run given to ``evaluate``: a TREC file, or a run held in memory."""

    key: str
    label: str
    stem: str
    path: Path | None
    held: Any

    @classmethod
    def of(cls, run: Any) -> _System:
        path = _path_of(run)
        if path is None:
            return cls(f"<{run.tag}>", run.tag, run.tag, None, run)
        return cls(str(path.resolve()), str(path), path.stem, path, run if _held(run) else None)

    def read(self, reader: Any) -> dict[str, dict[str, float]]:
        return self.held.run if self.held is not None else reader(self.path)

    def check_queries(self, asked: Mapping[str, str], source: str, check: Any) -> str | None:
        """A warning when the run does not record its questions; an error when it records others."""
        if self.path is not None:
            return check(self.path, asked, source)
        if self.held is not None and self.held.queries != dict(asked):
            raise ValueError(f"the run {self.label!r} was searched with other questions than {source}")
        return None


def _names(systems: Sequence[_System]) -> list[str]:
    """Short system names: file names without suffix, or whole labels when two would collide."""
    stems = [system.stem for system in systems]
    return stems if len(set(stems)) == len(stems) else [system.label for system in systems]


__all__ = ["EvaluateConfig", "Evaluated", "compare", "left_out", "run"]
