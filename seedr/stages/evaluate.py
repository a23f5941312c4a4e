"""`seedr evaluate`: score TREC runs — IR metrics, QA answer coverage or ReQA — with significance tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from seedr.evaluation import DEFAULT_METRICS
from seedr.stages.common import clear_errors, console

if TYPE_CHECKING:  # stages import the library inside their commands: `seedr --help` stays instant
    from seedr.evaluation.tasks import EvaluationTask


def _names(paths: list[Path]) -> list[str]:
    """Short system names: file names without suffix, or whole paths when two would collide."""
    stems = [path.stem for path in paths]
    return stems if len(set(stems)) == len(stems) else [str(path) for path in paths]


def _check_questions(runs: list[Path], questions: dict[str, str], given: str, force: bool) -> None:
    """Refuse runs searched with other questions (question ids are line numbers: only the texts tell two
    question files apart), and runs that do not record theirs (``<run>.json``, written by `seedr search`)
    unless ``force`` (a run made by another tool), which then only warns."""
    from rich.markup import escape

    from seedr.data.io import DataError
    from seedr.retrieval.runs import check_run_queries

    for path in runs:
        warning = check_run_queries(path, questions, given)
        if warning and not force:
            raise DataError(path, f"{warning.split(': ', 1)[-1]}: question ids are line numbers, so a run of other "
                                  "questions would be scored silently wrong; pass --force to score it anyway (a "
                                  "run made by another tool)")
        if warning:
            console.print(f"[yellow]warning[/]: {escape(warning)}", soft_wrap=True, highlight=False)


def _evaluation_task(qrels: Path | None, metrics: str, qa_answers: list[Path] | None, ks: str, qa_title: bool,
                     reqa: Path | None) -> EvaluationTask:
    """The library's evaluation task (``seedr.evaluation.tasks``) the options name: the one the
    experiments score with."""
    from seedr.evaluation.tasks import QaCoverageTask, QrelsTask, ReqaTask

    if reqa is not None:
        return ReqaTask(reqa)
    if qa_answers:
        try:
            cutoffs = [int(k) for k in ks.split(",") if k.strip()]
        except ValueError:
            raise ValueError(f"--ks: {ks!r} is not a comma-separated list of integers") from None
        if not cutoffs or min(cutoffs) < 1:
            raise ValueError(f"--ks: every k must be at least 1, got {ks!r}")
        return QaCoverageTask(qa_answers, [f"Top-{k}" for k in cutoffs], include_title=qa_title)
    return QrelsTask(qrels, [name.strip() for name in metrics.split(",") if name.strip()])


@clear_errors
def command(
    runs: Annotated[list[Path], typer.Argument(help="TREC run files (several: a comparison table).")],
    qrels: Annotated[Path | None, typer.Option(
        "--qrels", help="Relevance judgments: TREC qrels or BEIR qrels TSV."
    )] = None,
    metrics: Annotated[str, typer.Option(
        "--metrics", help="Comma-separated ir_measures names: MRR@10, nDCG@10, R@100, MAP, R(rel=2)@1000 ..."
    )] = ",".join(DEFAULT_METRICS),
    qa_answers: Annotated[list[Path] | None, typer.Option(
        "--qa-answers", help="QA coverage: NQ-open / DPR QA JSONL with answers, the questions the runs "
                             "were searched with (repeatable, folders and quoted globs too)."
    )] = None,
    corpus: Annotated[list[Path] | None, typer.Option(
        "--corpus", help="QA coverage: the passage corpus the runs rank: a file, a folder (of shards, or "
                         "made by `seedr prepare`) or a quoted glob; repeatable."
    )] = None,
    ks: Annotated[str, typer.Option("--ks", help="QA coverage: the k of top-k accuracy.")] = "1,5,20,100",
    qa_title: Annotated[bool, typer.Option(
        "--qa-title/--no-qa-title", help="QA coverage: look for answers in passage titles too. Default: text "
                                         "only, DPR's convention (its has_answer reads the passage text), so "
                                         "figures compare with DPR's Table 2; retrieval still reads titles "
                                         "(BM25 indexes them, encoders see 'title [SEP] text')."
    )] = False,
    reqa: Annotated[Path | None, typer.Option(
        "--reqa", help="ReQA: the SQuAD JSON the runs were made from (Recall@k, MRR)."
    )] = None,
    baseline: Annotated[Path | None, typer.Option(
        "--baseline", help="Run to test the others against (default: the first)."
    )] = None,
    test: Annotated[str, typer.Option(
        "--test", help="Paired test: permutation (SEED-Encoder) or ttest (CPDAE)."
    )] = "permutation",
    alpha: Annotated[float, typer.Option("--alpha", min=0, max=1, help="Significance level.")] = 0.05,
    resamples: Annotated[int, typer.Option("--resamples", min=1, help="Permutation test resamples.")] = 10_000,
    ignore_identical_ids: Annotated[bool, typer.Option(
        "--ignore-identical-ids", help="Drop documents whose id is the query's (BEIR's option)."
    )] = False,
    components: Annotated[bool, typer.Option(
        "--components/--no-components", help="Test each fused run (`seedr fuse`) against each run it was fused "
                                             "from, read from its record (unless given among the runs)."
    )] = True,
    force: Annotated[bool, typer.Option(
        "--force", help="QA coverage and ReQA: score a run that does not record the questions it was searched "
                        "with (no RUN.json beside it: a run made by another tool), with a warning; without it, "
                        "such a run is refused."
    )] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results as JSON.")] = None,
    markdown_out: Annotated[Path | None, typer.Option(
        "--markdown", help="Write the table as Markdown."
    )] = None,
) -> None:
    """Evaluate runs (queries missing from a run score 0; ties broken by document id) and compare them.

    Metrics with a cutoff beyond the runs' depth (R@1000 or Top-100 on runs of 100 or 20 documents a query)
    are left out, with a note. QA and ReQA runs must record the questions they were searched with (`seedr
    search` writes RUN.json beside RUN): a run without one is refused unless --force. With several runs, each cell shows the difference to the baseline and its p-value.

    A fused run (`seedr fuse`) is also tested against each run it was fused from, one table each.

    Example: seedr evaluate dense.trec bm25.trec --qrels scifact/qrels/test.tsv --baseline bm25.trec
    """
    from rich.console import Console

    from seedr.data.io import DataError, atomic_write
    from seedr.evaluation.compare import comparison_table
    from seedr.evaluation.metrics import run_depth
    from seedr.evaluation.qa_coverage import ranked_passages
    from seedr.evaluation.tasks import QaCoverageTask, QrelsTask
    from seedr.retrieval.fusion import fused_components
    from seedr.retrieval.runs import ignore_identical_ids as drop_identical_ids
    from seedr.retrieval.runs import read_trec_run

    given = {"qrels": qrels, "qa": qa_answers, "reqa": reqa}
    modes = [mode for mode, path in given.items() if path]
    if len(modes) != 1:
        raise ValueError("give exactly one of --qrels, --qa-answers (with --corpus), --reqa")
    if qa_answers and not corpus:
        raise ValueError("--qa-answers needs --corpus, the passage corpus the runs rank")
    resolved = [path.resolve() for path in runs]
    if baseline is not None and baseline.resolve() not in resolved:
        runs, resolved = [baseline, *runs], [baseline.resolve(), *resolved]
    given = len(runs)
    fused: dict[int, list[int]] = {}  # a fused run's position → its components' positions
    for position, path in enumerate(runs[:given] if components else []):
        found, warnings = fused_components(path)
        for warning in warnings:
            console.print(f"[yellow]warning[/]: {warning}", soft_wrap=True, highlight=False, markup=False)
        for component in found:
            if component.resolve() not in resolved:
                runs, resolved = [*runs, component], [*resolved, component.resolve()]
            fused.setdefault(position, []).append(resolved.index(component.resolve()))
    names = _names(runs)
    baseline_name = names[resolved.index(baseline.resolve())] if baseline is not None else names[0]
    loaded = {name: read_trec_run(path) for name, path in zip(names, runs)}
    for name, path in zip(names, runs):
        if not loaded[name]:  # zeros for every query would read as a result
            raise DataError(path, "the run ranks no documents (an empty run file): nothing to evaluate")
    if ignore_identical_ids:
        loaded = {name: drop_identical_ids(run) for name, run in loaded.items()}

    details: dict[str, object] = {}
    task = _evaluation_task(qrels, metrics, qa_answers, ks, qa_title, reqa)
    depth = min(run_depth(run) for run in loaded.values())
    too_deep = task.deeper_than(depth)
    if too_deep:  # Top-100 or R@1000 of a run 20 deep would be its value at 20
        console.print(f"left out {', '.join(too_deep)}: the runs rank at most {depth} {task.ranked}, "
                      f"so these would equal their value at {depth} (search with a larger --k)")
        details["left_out"] = {"metrics": too_deep, "run_depth": depth}
        if len(too_deep) == len(task.metrics):
            raise ValueError(f"every metric asked for is deeper than the runs ({depth} {task.ranked})")
        task.metrics = [metric for metric in task.metrics if metric not in too_deep]
    if isinstance(task, QrelsTask):
        per_system = {name: task.per_query(run) for name, run in loaded.items()}
        details["queries"] = {name: task.query_counts(run) for name, run in loaded.items()}
    else:  # QA and ReQA runs must have been searched with these questions
        _check_questions(runs, task.queries(), ", ".join(map(str, qa_answers or [reqa])), force)
        if isinstance(task, QaCoverageTask):
            task.passages = ranked_passages(loaded.values(), corpus, show_progress=True)
        per_system = {name: task.per_query(run, show_progress=True) for name, run in loaded.items()}
        details["questions"] = len(task.queries())

    table = comparison_table({name: per_system[name] for name in names[:given]}, baseline_name, test=test,
                             alpha=alpha, n_resamples=resamples, show_progress=True)
    Console().print(table.to_rich(title=f"{modes[0]} evaluation"))
    versus = {names[position]: {names[part]: comparison_table({names[part]: per_system[names[part]],
                                                               names[position]: per_system[names[position]]},
                                                              names[part], test=test, alpha=alpha,
                                                              n_resamples=resamples)
                                for part in parts}
              for position, parts in fused.items()}
    for fused_name, tables in versus.items():
        for component, against in tables.items():
            Console().print(against.to_rich(title=f"fused {fused_name} vs its component {component}"))
    for name, counts in (details.get("queries") or {}).items():
        if counts["missing_from_run"] or counts["unjudged_in_run"]:
            console.print(f"{name}: {counts['missing_from_run']} judged queries missing from the run "
                          f"(scored 0), {counts['unjudged_in_run']} unjudged queries ignored")
    if json_out is not None:
        result = {"mode": modes[0], "runs": {name: str(path) for name, path in zip(names, runs)},
                  "ignore_identical_ids": ignore_identical_ids, **details}
        if given == 1:
            result["metrics"] = {metric: comparison.systems[names[0]].mean
                                 for metric, comparison in table.comparisons.items()}
        else:
            result["comparison"] = table.to_dict()
        if versus:
            result["components"] = {name: {component: against.to_dict() for component, against in tables.items()}
                                    for name, tables in versus.items()}
        with atomic_write(json_out) as stream:
            json.dump(result, stream, indent=2)
    if markdown_out is not None:
        with atomic_write(markdown_out) as stream:
            stream.write(table.to_markdown())
