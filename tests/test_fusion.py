"""Hybrid retrieval (`seedr fuse`, ``seedr.retrieval.fusion``): the fusion maths against hand computations
and against ranx's fusion where the two define it the same way, the selection on a development split,
the stage with its record and checks, `seedr evaluate` testing a fused run against its components, and
fusion as an experiment's retrieval kind — on BM25 runs of real SciFact and NQ-open data."""

from __future__ import annotations

import itertools
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from seedr.cli import app
from seedr.data.articles import read_articles
from seedr.data.corpus import load_corpus, write_corpus
from seedr.data.passages import split_passages
from seedr.data.queries import read_qrels, read_queries, write_qrels, write_queries
from seedr.data.runs import rank_documents, read_trec_run, run_fingerprint
from seedr.evaluation.metrics import evaluate_run, rank_scores
from seedr.evaluation.tasks import QrelsTask
from seedr.pipeline.fuse import task_objective
from seedr.retrieval.fusion import (
    FUSIONS,
    Fusion,
    Objective,
    fuse,
    select_fusion,
    weight_grid,
)

# ranx compiles its fusion with numba on first use: minutes on a busy 2-core machine. Its functions run
# as plain Python when numba's JIT is off, which must be decided before ranx is imported (seedr itself
# does not use numba).
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")
if "numba" in sys.modules:
    import numba.core.config

    numba.core.config.reload_config()

runner = CliRunner()


def seedr(*args):
    return runner.invoke(app, [str(a) for a in args])


# ------------------------------------------------------------------ the maths, by hand

#: Two rankings of one query: A ranks d1 > d2 > d3, B ranks d2 > d4 (B never retrieved d1 or d3).
A = {"q1": {"d3": 1.0, "d1": 3.0, "d2": 2.0}}
B = {"q1": {"d4": 0.5, "d2": 0.9}}


def test_reciprocal_rank_fusion_by_hand():
    fused = fuse([A, B], Fusion("rrf", (1, 1), rrf_k=60))["q1"]
    # equal weights are normalised to 1/2 each; a run that does not rank a document adds 0
    assert fused == pytest.approx({"d1": 0.5 / 61, "d2": 0.5 / 62 + 0.5 / 61, "d3": 0.5 / 63, "d4": 0.5 / 62})
    assert [doc for doc, _ in rank_documents(fused)] == ["d2", "d1", "d4", "d3"]
    weighted = fuse([A, B], Fusion("rrf", (3, 1), rrf_k=10))["q1"]
    assert weighted == pytest.approx({"d1": 0.75 / 11, "d2": 0.75 / 12 + 0.25 / 11, "d3": 0.75 / 13,
                                      "d4": 0.25 / 12})


def test_min_max_convex_combination_by_hand():
    fused = fuse([A, B], Fusion("minmax", (0.3, 0.7)))["q1"]
    # A: (3, 2, 1) → (1, 0.5, 0); B: (0.9, 0.5) → (1, 0); a document a run does not rank: its minimum, 0
    assert fused == pytest.approx({"d1": 0.3, "d2": 0.3 * 0.5 + 0.7, "d3": 0.0, "d4": 0.0})
    assert [doc for doc, _ in rank_documents(fused)] == ["d2", "d1", "d3", "d4"]  # the 0-tie by id


def test_z_score_convex_combination_by_hand():
    fused = fuse([A, B], Fusion("zscore", (1, 1)))["q1"]
    z_a = 1 / math.sqrt(2 / 3)  # A: mean 2, population std sqrt(2/3): z = (1.2247, 0, -1.2247)
    # B: mean 0.7, std 0.2: z = (1, -1); absent: the run's lowest z (A: -1.2247 for d4; B: -1 for d1, d3)
    assert fused == pytest.approx({"d1": (z_a - 1) / 2, "d2": (0 + 1) / 2, "d3": (-z_a - 1) / 2,
                                   "d4": (-z_a - 1) / 2})
    assert [doc for doc, _ in rank_documents(fused)] == ["d2", "d1", "d3", "d4"]


def test_equal_sums_tie_exactly_and_are_ordered_by_id():
    """d1 is first in one run and d2 in the other: their RRF sums are equal in exact arithmetic, and
    must tie (then rank by id), whatever order the floating-point sum takes."""
    one, other = {"q": {"d2": 5.0, "d1": 9.0, "x": 1.0}}, {"q": {"d1": 0.4, "d2": 0.8, "y": 0.1}}
    for weights in [(1, 1), (0.5, 0.5), (1 / 3, 1 / 3)]:
        fused = fuse([one, other], Fusion("rrf", weights))["q"]
        assert fused["d1"] == fused["d2"]
        assert [doc for doc, _ in rank_documents(fused)][:2] == ["d1", "d2"]


def test_weights_queries_and_depth():
    assert Fusion("minmax", (2, 6)).weights == (0.25, 0.75)
    with pytest.raises(ValueError, match="non-negative"):
        Fusion("minmax", (1, -1))
    with pytest.raises(ValueError, match="all be 0"):
        Fusion("rrf", (0, 0))
    with pytest.raises(KeyError, match="valid names: minmax, rrf, zscore"):
        Fusion("combsum", (1, 1))
    with pytest.raises(ValueError, match="2 runs but 3 weights"):
        fuse([A, B], Fusion("rrf", (1, 1, 1)))
    # a query only one run answers keeps that run's order; the other run adds nothing to it
    only_a = {**A, "q2": {"x": 2.0, "y": 1.0}}
    fused = fuse([only_a, B], Fusion("zscore", (1, 1)), depth=3)
    assert [doc for doc, _ in rank_documents(fused["q2"])] == ["x", "y"]
    assert set(fused["q1"]) == {"d2", "d1", "d3"}  # d3 and d4 tie: the lower id is kept
    # one document alone, or all scores equal: normalised to 0, not divided by 0
    flat = fuse([{"q": {"a": 1.0, "b": 1.0}}, {"q": {"c": 7.0}}], Fusion("minmax", (1, 1)))["q"]
    assert flat == {"a": 0.0, "b": 0.0, "c": 0.0}


def test_weight_grid():
    grid = weight_grid(3, 0.25)
    assert len(grid) == math.comb(4 + 2, 2) == 15
    assert all(math.isclose(sum(point), 1) and min(point) >= 0 for point in grid)
    assert (1.0, 0.0, 0.0) in grid and (0.0, 0.0, 1.0) in grid  # each run alone is a candidate
    assert len(weight_grid(2, 0.1)) == 11
    with pytest.raises(ValueError, match="must divide 1"):
        weight_grid(2, 0.3)
    with pytest.raises(ValueError, match="coarser step"):
        weight_grid(6, 0.01)


def test_method_names_written_into_the_stage_help_match_the_registry():
    import typer

    command = typer.main.get_command(app).commands["fuse"]
    (option,) = [parameter for parameter in command.params if "--method" in parameter.opts]
    assert f"Fusion: {', '.join(FUSIONS.names())} " in option.help


# ------------------------------------------------------------------ real runs: SciFact slices


@pytest.fixture(scope="module")
def scifact(shared_data, tmp_path_factory):
    """A slice of SciFact (30 test queries, 30 training queries as the development split, their judged
    abstracts and 300 others) and three BM25 runs of each split written by `seedr search`: Anserini's
    parameters, BEIR's (k1 1.2, b 0.75) and titles alone."""
    source = shared_data / "scifact"
    folder = tmp_path_factory.mktemp("scifact-fusion")
    corpus = load_corpus(source / "corpus.jsonl")
    queries = read_queries(source / "queries.jsonl")
    test = dict(list(read_qrels(source / "qrels" / "test.tsv").items())[:30])
    dev = dict(list(read_qrels(source / "qrels" / "train.tsv").items())[:30])
    kept = dict.fromkeys([*{doc for judged in [*test.values(), *dev.values()] for doc in judged},
                          *list(corpus)[:300]])
    write_corpus(folder / "corpus.jsonl", [corpus[doc] for doc in kept if doc in corpus])
    write_corpus(folder / "titles.jsonl", [type(corpus[doc])(doc, corpus[doc].title, "")
                                           for doc in kept if doc in corpus])
    for split, judged in (("test", test), ("dev", dev)):
        write_queries(folder / f"{split}.queries.jsonl", {qid: queries[qid] for qid in judged})
        write_qrels(folder / f"{split}.qrels.tsv", judged, format="beir")
        systems = {"bm25": [], "beir": ["--k1", 1.2, "--b", 0.75], "titles": []}
        for system, options in systems.items():
            documents = folder / ("titles.jsonl" if system == "titles" else "corpus.jsonl")
            result = seedr("search", "--bm25", "--corpus", documents, "--queries", folder / f"{split}.queries.jsonl",
                           "--k", 100, "--tag", system, "--out", folder / f"{system}.{split}.trec", *options)
            assert result.exit_code == 0, result.output
    return folder


def _load(folder: Path, *names: str) -> list[dict]:
    return [read_trec_run(folder / name) for name in names]


def test_matches_ranx_rrf_and_min_max_on_real_runs(scifact):
    """ranx defines RRF and the weighted sum of min-max normalised scores as seedr does (an absent
    document counts 0 in both): the same scores for every query and document."""
    ranx = pytest.importorskip("ranx")
    bm25, titles = _load(scifact, "bm25.test.trec", "titles.test.trec")
    # ranks without ties (each run's scores replaced by n - rank + 1), so that both read the same ranks
    bm25, titles = rank_scores(bm25), rank_scores(titles)
    answered = set(bm25) & set(titles)  # ranx fuses runs of the same queries only
    bm25, titles = ({qid: run[qid] for qid in answered} for run in (bm25, titles))
    theirs = ranx.fuse([ranx.Run(bm25), ranx.Run(titles)], norm=None, method="rrf", params={"k": 60}).to_dict()
    ours = fuse([bm25, titles], Fusion("rrf", (1, 1), 60))
    assert set(ours) == set(theirs) and len(ours) >= 25
    for qid in ours:
        assert set(ours[qid]) == set(theirs[qid])
        # ranx adds 1/(k + r) unweighted; seedr's weights sum to 1: half of it for two runs
        assert np.allclose([2 * ours[qid][d] for d in ours[qid]], [theirs[qid][d] for d in ours[qid]], atol=1e-11)

    raw = [{qid: run[qid] for qid in answered}
           for run in _load(scifact, "bm25.test.trec", "beir.test.trec", "titles.test.trec")]
    theirs = ranx.fuse([ranx.Run(run) for run in raw], norm="min-max", method="wsum",
                       params={"weights": [0.2, 0.3, 0.5]}).to_dict()
    ours = fuse(raw, Fusion("minmax", (0.2, 0.3, 0.5)))
    for qid in ours:
        assert set(ours[qid]) == set(theirs[qid])
        assert np.allclose([ours[qid][d] for d in ours[qid]], [float(theirs[qid][d]) for d in ours[qid]],
                           atol=1e-11)


def test_z_score_matches_ranx_where_every_run_ranks_the_same_documents(scifact):
    """ranx counts a document a run did not retrieve as z = 0 (the run's mean), seedr as the run's lowest
    z: where each run ranks the same documents the two agree; elsewhere seedr never ranks an absent
    document above one the run retrieved."""
    ranx = pytest.importorskip("ranx")
    bm25, titles = _load(scifact, "bm25.test.trec", "titles.test.trec")
    common = {qid: set(bm25[qid]) & set(titles.get(qid, {})) for qid in bm25}
    common = {qid: docs for qid, docs in common.items() if len(docs) >= 3}
    assert len(common) >= 10
    same_a = {qid: {d: bm25[qid][d] for d in docs} for qid, docs in common.items()}
    same_b = {qid: {d: titles[qid][d] for d in docs} for qid, docs in common.items()}
    theirs = ranx.fuse([ranx.Run(same_a), ranx.Run(same_b)], norm="zmuv", method="wsum",
                       params={"weights": [0.6, 0.4]}).to_dict()
    ours = fuse([same_a, same_b], Fusion("zscore", (0.6, 0.4)))
    for qid in ours:
        assert np.allclose([ours[qid][d] for d in ours[qid]], [float(theirs[qid][d]) for d in ours[qid]],
                           atol=1e-9)
    # with absent documents: each run's lowest z, below every document it retrieved
    fused = fuse([bm25, titles], Fusion("zscore", (1, 0)))  # the BM25 run alone, all else absent from it
    for qid, scores in fused.items():
        retrieved = [scores[d] for d in bm25[qid] if d in scores]
        absent = [score for d, score in scores.items() if d not in bm25[qid]]
        assert not absent or max(absent) <= min(retrieved)


def test_selection_on_the_development_split(scifact):
    dev = _load(scifact, "bm25.dev.trec", "titles.dev.trec")
    qrels = read_qrels(scifact / "dev.qrels.tsv")
    objective = task_objective(QrelsTask(scifact / "dev.qrels.tsv", ["nDCG@10"]), "nDCG@10")
    selection = select_fusion(dev, objective, ["minmax", "rrf"], step=0.25, rrf_ks=[20, 60], depth=100)
    assert len(selection.candidates) == 5 * (1 + 2)  # minmax, and rrf with two k, over five weightings
    value = evaluate_run(fuse(dev, selection.best, 100), qrels, ["nDCG@10"])["nDCG@10"]
    assert selection.value == pytest.approx(value) == max(v for _, v in selection.candidates)
    alone = {fusion.weights: v for fusion, v in selection.candidates if fusion.method == "minmax"}
    assert alone[(1.0, 0.0)] == pytest.approx(evaluate_run(dev[0], qrels, ["nDCG@10"])["nDCG@10"])
    assert selection.value >= max(alone[(1.0, 0.0)], alone[(0.0, 1.0)])  # each run alone is a candidate
    record = selection.to_dict()
    assert record["best"] == selection.best.to_dict() and len(record["candidates"]) == 15
    # a tie goes to the weights nearest to equal, then the k nearest to 60, then the first method listed
    flat = select_fusion(dev, Objective("constant", lambda run: 0.5), ["zscore", "rrf"], step=0.1,
                         rrf_ks=[10, 60, 100])
    assert flat.best == Fusion("zscore", (0.5, 0.5))
    flat = select_fusion(dev, Objective("constant", lambda run: 0.5), ["rrf"], step=0.1, rrf_ks=[10, 55, 100])
    assert flat.best == Fusion("rrf", (0.5, 0.5), 55)


# ------------------------------------------------------------------ the stage


def test_fuse_stage_chooses_on_the_development_split_and_evaluate_tests_each_component(scifact, tmp_path):
    d = scifact
    out = tmp_path / "hybrid.trec"
    result = seedr("fuse", d / "bm25.test.trec", d / "titles.test.trec", "--dev-run", d / "bm25.dev.trec",
                   "--dev-run", d / "titles.dev.trec", "--dev-qrels", d / "dev.qrels.tsv", "--method", "minmax",
                   "--method", "rrf", "--rrf-k", 20, "--rrf-k", 60, "--grid-step", 0.25, "--out", out)
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "chosen on the development split" in output and "of 15 candidates" in output
    record = json.loads(Path(f"{out}.json").read_text())
    components = [read_trec_run(d / "bm25.test.trec"), read_trec_run(d / "titles.test.trec")]
    # the queries record of the components, carried over: `seedr evaluate` checks questions against it
    assert record["queries"] == json.loads((d / "bm25.test.trec.json").read_text())["queries"]
    fusion = record["fusion"]
    assert [c["fingerprint"] for c in fusion["components"]] == [run_fingerprint(run) for run in components]
    assert fusion["components"][0]["path"] == str((d / "bm25.test.trec").resolve())
    selection = fusion["selection"]
    assert selection["metric"] == "nDCG@10" and len(selection["candidates"]) == 15
    assert selection["best"] == {key: fusion[key] for key in ("method", "weights", "rrf_k")}
    assert selection["development"]["qrels"] == str(d / "dev.qrels.tsv")
    assert selection["development"]["queries"]["count"] == 30
    chosen = Fusion.from_dict(fusion)
    assert read_trec_run(out) == fuse(components, chosen, 100)
    assert {line.split()[-1] for line in out.read_text().splitlines()} == {"fused"}

    # evaluate: the fused run alone is tested against each component, read from its record
    result = seedr("evaluate", out, "--qrels", d / "test.qrels.tsv", "--metrics", "nDCG@10,R@100",
                   "--resamples", 500, "--json", tmp_path / "e.json")
    assert result.exit_code == 0, result.output
    assert "fused hybrid vs its component bm25.test" in " ".join(result.output.split())
    evaluation = json.loads((tmp_path / "e.json").read_text())
    assert set(evaluation["metrics"]) == {"nDCG@10", "R@100"}  # the fused run's own figures, as for one run
    versus = evaluation["components"]["hybrid"]
    assert set(versus) == {"bm25.test", "titles.test"}
    qrels = read_qrels(d / "test.qrels.tsv")
    for name, run in zip(["bm25.test", "titles.test"], components):
        table = versus[name]
        assert table["baseline"] == name
        fused_ndcg = table["systems"]["hybrid"]["nDCG@10"]
        assert fused_ndcg["mean"] == pytest.approx(evaluation["metrics"]["nDCG@10"])
        assert fused_ndcg["delta"] == pytest.approx(fused_ndcg["mean"] - evaluate_run(run, qrels, ["nDCG@10"])["nDCG@10"])
        assert 0 < fused_ndcg["p_value"] <= 1
    # given among the runs, a component is not added twice; --no-components tests only the runs given
    result = seedr("evaluate", out, d / "bm25.test.trec", "--qrels", d / "test.qrels.tsv", "--metrics", "nDCG@10",
                   "--resamples", 200, "--json", tmp_path / "two.json")
    assert result.exit_code == 0, result.output
    two = json.loads((tmp_path / "two.json").read_text())
    assert set(two["comparison"]["systems"]) == {"hybrid", "bm25.test"}
    assert set(two["components"]["hybrid"]) == {"bm25.test", "titles.test"}
    result = seedr("evaluate", out, "--qrels", d / "test.qrels.tsv", "--metrics", "nDCG@10", "--no-components",
                   "--json", tmp_path / "alone.json")
    assert result.exit_code == 0 and "components" not in json.loads((tmp_path / "alone.json").read_text())


def test_fixed_fusion_without_a_development_split(scifact, tmp_path):
    d = scifact
    runs = [d / "bm25.test.trec", d / "beir.test.trec", d / "titles.test.trec"]
    result = seedr("fuse", *runs, "--out", tmp_path / "rrf.trec", "--k", 10, "--tag", "rrf")
    assert result.exit_code == 0, result.output
    fused = read_trec_run(tmp_path / "rrf.trec")
    assert fused == fuse([read_trec_run(path) for path in runs], Fusion("rrf", (1, 1, 1), 60), 10)
    assert max(len(scores) for scores in fused.values()) == 10
    record = json.loads((tmp_path / "rrf.trec.json").read_text())["fusion"]
    assert record["weights"] == pytest.approx([1 / 3] * 3) and record["rrf_k"] == 60 and "selection" not in record
    result = seedr("fuse", *runs[:2], "--method", "zscore", "--weight", 1, "--weight", 3,
                   "--out", tmp_path / "z.trec")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "z.trec.json").read_text())["fusion"]["weights"] == [0.25, 0.75]


@pytest.mark.parametrize(("arguments", "message"), [
    (["bm25.test.trec"], "at least two runs"),
    (["bm25.test.trec", "bm25.dev.trec"], "searched with other queries"),
    (["bm25.test.trec", "titles.test.trec", "--weight", 1], "1 --weight for 2 runs"),
    (["bm25.test.trec", "titles.test.trec", "--dev-run", "bm25.dev.trec"], "a development split is --dev-run"),
    (["bm25.test.trec", "titles.test.trec", "--dev-run", "bm25.dev.trec", "--dev-qrels", "dev.qrels.tsv"],
     "1 --dev-run for 2 runs"),
    (["bm25.test.trec", "titles.test.trec", "--method", "rrf", "--method", "minmax"], "need a development split"),
    (["bm25.test.trec", "titles.test.trec", "--method", "combsum"], "unknown fusion method 'combsum'"),
    (["bm25.test.trec", "titles.test.trec", "--dev-run", "bm25.dev.trec", "--dev-run", "titles.dev.trec",
      "--dev-qrels", "dev.qrels.tsv", "--grid-step", 0.3], "must divide 1"),
    (["bm25.test.trec", "titles.test.trec", "--dev-run", "bm25.dev.trec", "--dev-run", "titles.dev.trec",
      "--dev-qrels", "dev.qrels.tsv", "--metric", "nDCG@ten"], "unknown metric"),
])
def test_fuse_refuses_bad_input_with_one_clear_line(scifact, tmp_path, arguments, message):
    paths = [scifact / a if str(a).endswith((".trec", ".tsv")) else a for a in arguments]
    result = seedr("fuse", *paths, "--out", tmp_path / "out.trec")
    assert result.exit_code == 1, result.output
    assert message in " ".join(result.output.split())
    assert not (tmp_path / "out.trec").exists()


def test_fuse_option_ranges_are_checked_when_parsed(scifact, tmp_path):
    runs = [scifact / "bm25.test.trec", scifact / "titles.test.trec"]
    for option, value in (("--weight", -1), ("--rrf-k", 0), ("--k", 0), ("--grid-step", 0)):
        result = seedr("fuse", *runs, option, value, "--out", tmp_path / "out.trec")
        assert result.exit_code == 2, (option, result.output)
    result = seedr("fuse", *runs, "--out", runs[0])
    assert result.exit_code == 1 and "an input of this command" in result.output


def test_evaluate_refuses_a_changed_component_and_warns_about_a_missing_one(scifact, tmp_path):
    d = scifact
    for name in ("bm25.test.trec", "titles.test.trec"):
        (tmp_path / name).write_bytes((d / name).read_bytes())
        (tmp_path / f"{name}.json").write_bytes((d / f"{name}.json").read_bytes())
    out = tmp_path / "rrf.trec"
    assert seedr("fuse", tmp_path / "bm25.test.trec", tmp_path / "titles.test.trec", "--out", out).exit_code == 0
    evaluate = ["evaluate", out, "--qrels", d / "test.qrels.tsv", "--metrics", "nDCG@10", "--resamples", 100]
    # the same run written again with another tag: the same fingerprint, still its component
    lines = (tmp_path / "titles.test.trec").read_text().replace(" titles\n", " again\n")
    (tmp_path / "titles.test.trec").write_text(lines)
    assert seedr(*evaluate).exit_code == 0
    # changed: its last line dropped
    (tmp_path / "titles.test.trec").write_text("".join(lines.splitlines(keepends=True)[:-1]))
    result = seedr(*evaluate)
    assert result.exit_code == 1 and "has changed since" in " ".join(result.output.split())
    (tmp_path / "titles.test.trec").unlink()
    result = seedr(*evaluate)
    assert result.exit_code == 0, result.output
    assert "no longer there" in " ".join(result.output.split()) and "vs its component bm25.test" in result.output


def test_fuse_chooses_on_a_qa_development_split(tmp_path, wiki_shard, shared_data):
    """NQ-open questions about 80 Wikipedia articles, their passages, two BM25s; half the questions choose
    the weights by answer coverage, the other half are fused."""
    articles = list(itertools.islice(read_articles(wiki_shard), 80))
    write_corpus(tmp_path / "passages.jsonl", split_passages(articles))
    titles = {article.title.lower() for article in articles if len(article.title) > 6}
    lines = [line for line in (shared_data / "nq-open" / "NQ-open.dev.jsonl").read_text().splitlines()
             if any(title in json.loads(line)["question"].lower() for title in titles)]
    assert len(lines) >= 12
    (tmp_path / "dev.jsonl").write_text("\n".join(lines[::2]) + "\n")
    (tmp_path / "test.jsonl").write_text("\n".join(lines[1::2]) + "\n")
    for split in ("dev", "test"):
        for system, options in (("bm25", []), ("beir", ["--k1", 1.2, "--b", 0.75])):
            result = seedr("search", "--bm25", "--corpus", tmp_path / "passages.jsonl", "--questions",
                           tmp_path / f"{split}.jsonl", "--k", 20, "--out", tmp_path / f"{system}.{split}.trec",
                           *options)
            assert result.exit_code == 0, result.output
    fuse_args = ["fuse", tmp_path / "bm25.test.trec", tmp_path / "beir.test.trec", "--dev-run",
                 tmp_path / "bm25.dev.trec", "--dev-run", tmp_path / "beir.dev.trec", "--corpus",
                 tmp_path / "passages.jsonl", "--method", "minmax", "--grid-step", 0.5, "--out", tmp_path / "h.trec"]
    result = seedr(*fuse_args, "--dev-qa-answers", tmp_path / "dev.jsonl", "--metric", "Top-5")
    assert result.exit_code == 0, result.output
    selection = json.loads((tmp_path / "h.trec.json").read_text())["fusion"]["selection"]
    assert selection["metric"] == "Top-5" and len(selection["candidates"]) == 3
    assert selection["development"]["qa_answers"] == [str(tmp_path / "dev.jsonl")]
    # development runs scored against other questions are refused
    result = seedr(*fuse_args, "--overwrite", "--dev-qa-answers", tmp_path / "test.jsonl")
    assert result.exit_code == 1 and "searched with other questions" in " ".join(result.output.split())
    result = seedr("evaluate", tmp_path / "h.trec", "--qa-answers", tmp_path / "test.jsonl", "--corpus",
                   tmp_path / "passages.jsonl", "--ks", "5,20", "--resamples", 200, "--json", tmp_path / "qa.json")
    assert result.exit_code == 0, result.output
    assert set(json.loads((tmp_path / "qa.json").read_text())["components"]["h"]) == {"bm25.test", "beir.test"}


# ------------------------------------------------------------------ an experiment's retrieval kind

HYBRID = """\
title: Tiny hybrid retrieval
variables: {data: ""}
tasks:
  dev:
    kind: qrels
    corpus: "{data}/corpus.jsonl"
    queries: "{data}/queries.jsonl"
    qrels: "{data}/qrels/train.tsv"
    metrics: [nDCG@10]
  test:
    kind: qrels
    corpus: "{data}/corpus.jsonl"
    queries: "{data}/queries.jsonl"
    qrels: "{data}/qrels/test.tsv"
    metrics: [nDCG@10, R@10]
defaults:
  retrieve: {max_length: 64, pooling: mean}
conditions:
  bm25: {retrieve: bm25}
  minilm: {retrieve: {model: minilm}}
  hybrid: {retrieve: {fuse: [bm25, minilm], method: [minmax, rrf], select_on: dev}}
  rrf: {retrieve: {fuse: [bm25, minilm]}}
  minilm-cls: {tasks: [test], retrieve: {model: minilm, pooling: cls}}
  chosen-by-others: {tasks: [test], retrieve: {fuse: [bm25, minilm-cls], method: [minmax, rrf], select_on: dev,
                                                select_with: [bm25, minilm]}}
baseline: bm25
resamples: 200
"""


@pytest.fixture(scope="module")
def tiny_scifact(shared_data, tmp_path_factory):
    """SciFact cut small enough to encode twice: 8 test and 8 training queries, their judged abstracts
    and the first 20 others."""
    source = shared_data / "scifact"
    folder = tmp_path_factory.mktemp("scifact-tiny")
    corpus = load_corpus(source / "corpus.jsonl")
    queries = read_queries(source / "queries.jsonl")
    test = dict(list(read_qrels(source / "qrels" / "test.tsv").items())[:8])
    train = dict(list(read_qrels(source / "qrels" / "train.tsv").items())[:8])
    kept = dict.fromkeys([*list(corpus)[:20], *{doc for judged in [*test.values(), *train.values()] for doc in judged}])
    write_corpus(folder / "corpus.jsonl", [corpus[doc] for doc in kept if doc in corpus])
    write_queries(folder / "queries.jsonl", {qid: queries[qid] for qid in [*test, *train]})
    write_qrels(folder / "qrels" / "test.tsv", test, format="beir")
    write_qrels(folder / "qrels" / "train.tsv", train, format="beir")
    return folder


def test_an_experiment_condition_fuses_other_conditions(tmp_path, tiny_scifact):
    from seedr.experiments.runner import run_experiment
    from seedr.experiments.spec import load_experiment

    path = tmp_path / "experiments" / "hybrid.yaml"
    path.parent.mkdir()
    path.write_text(HYBRID)
    experiment = load_experiment(path, "cpu", [f"data={tiny_scifact}"])
    assert experiment.conditions["hybrid"].retrieve["fuse"] == ["bm25", "minilm"]
    assert "max_length" not in experiment.conditions["hybrid"].retrieve  # retrieve defaults are the encoders'
    outcome = run_experiment(experiment, tmp_path / "out")
    systems = outcome.results["tasks"]["test"]["systems"]
    assert set(systems) == {"bm25", "minilm", "hybrid", "rrf", "minilm-cls", "chosen-by-others"}

    settings = {}
    for folder in (tmp_path / "out" / "retrieval").iterdir():
        recorded = json.loads((folder / "settings.json").read_text())
        settings[(recorded["task"], json.dumps(recorded["retrieve"], sort_keys=True))] = (recorded, folder)
    def of(task, retrieve):
        return settings[(task, json.dumps(retrieve, sort_keys=True))]

    hybrid, hybrid_folder = of("test", experiment.conditions["hybrid"].retrieve)
    selection = hybrid["selection"]
    assert selection["metric"] == "nDCG@10" and len(selection["candidates"]) == 11 * 2
    assert hybrid["fusion"] == selection["best"]
    assert of("dev", experiment.conditions["hybrid"].retrieve)[0]["selection"] == selection  # chosen once
    components = [read_trec_run(of("test", experiment.conditions[name].retrieve)[1] / "run.trec")
                  for name in ("bm25", "minilm")]
    chosen = Fusion.from_dict(hybrid["fusion"])
    assert read_trec_run(hybrid_folder / "run.trec") == fuse(components, chosen, 100)
    dev_runs = [read_trec_run(of("dev", experiment.conditions[name].retrieve)[1] / "run.trec")
                for name in ("bm25", "minilm")]
    qrels = read_qrels(tiny_scifact / "qrels" / "train.tsv")
    assert selection["value"] == pytest.approx(evaluate_run(fuse(dev_runs, chosen, 100), qrels, ["nDCG@10"])["nDCG@10"])
    rrf, _ = of("test", experiment.conditions["rrf"].retrieve)
    assert rrf["fusion"] == {"method": "rrf", "weights": [0.5, 0.5], "rrf_k": 60} and rrf["selection"] is None

    # select_with: chosen on bm25's and minilm's dev runs (as hybrid is), applied to bm25 + minilm-cls
    others, others_folder = of("test", experiment.conditions["chosen-by-others"].retrieve)
    assert others["selection"] == selection and others["fusion"] == hybrid["fusion"]
    cls_components = [components[0], read_trec_run(of("test", experiment.conditions["minilm-cls"].retrieve)[1]
                                                    / "run.trec")]
    assert cls_components[1] != components[1]
    assert read_trec_run(others_folder / "run.trec") == fuse(cls_components, chosen, 100)


@pytest.mark.parametrize(("conditions", "message"), [
    ("  hybrid: {retrieve: {fuse: [bm25, minilm]}}\n  bm25: {retrieve: bm25}\n  minilm: {retrieve: {model: minilm}}\n",
     "defined after 'hybrid'"),
    ("  bm25: {retrieve: bm25}\n  hybrid: {retrieve: {fuse: [bm25, nope]}}\n", "fuse names 'nope'"),
    ("  bm25: {retrieve: bm25}\n  minilm: {retrieve: {model: minilm}}\n"
     "  hybrid: {retrieve: {fuse: [bm25, minilm], select_on: nope}}\n", "select_on 'nope' is not a task"),
    ("  bm25: {retrieve: bm25}\n  minilm: {retrieve: {model: minilm}}\n"
     "  hybrid: {retrieve: {fuse: [bm25, minilm], select_on: test, metric: MAP}}\n", "does not report 'MAP'"),
    ("  bm25: {retrieve: bm25}\n  minilm: {retrieve: {model: minilm}}\n"
     "  hybrid: {retrieve: {fuse: [bm25, minilm], method: [rrf, minmax]}}\n", "need select_on"),
    ("  bm25: {retrieve: bm25}\n  minilm: {retrieve: {model: minilm}}\n"
     "  hybrid: {retrieve: {fuse: [bm25, minilm], method: combsum}}\n", "unknown fusion method"),
    ("  bm25: {retrieve: bm25}\n  minilm: {retrieve: {model: minilm}}\n"
     "  hybrid: {retrieve: {fuse: [bm25, minilm], select_on: dev, select_with: [bm25]}}\n", "one condition per fused"),
    ("  bm25: {retrieve: bm25}\n  minilm: {retrieve: {model: minilm}}\n"
     "  hybrid: {retrieve: {fuse: [bm25, minilm], select_with: [bm25, minilm]}}\n", "one condition per fused"),
    ("  bm25: {retrieve: bm25}\n  minilm: {tasks: [test], retrieve: {model: minilm}}\n"
     "  hybrid: {tasks: [test], retrieve: {fuse: [bm25, minilm], select_on: dev}}\n",
     "'minilm' cannot choose the fusion"),
    ("  bm25: {retrieve: bm25}\n  minilm: {retrieve: {model: minilm}}\n"
     "  hybrid: {retrieve: {fuse: [bm25, minilm], select_on: dev, select_with: [bm25, later]}}\n"
     "  later: {retrieve: {model: minilm}}\n", "'later' cannot choose the fusion"),
    ("  bm25: {retrieve: bm25}\n  minilm: {retrieve: {model: minilm}}\n"
     "  hybrid: {retrieve: {fuse: [bm25, minilm], pooling: mean}}\n", "unknown option(s) ['pooling']"),
])
def test_a_fusing_condition_is_validated(tmp_path, conditions, message):
    from seedr.experiments.spec import load_experiment

    text = HYBRID.split("conditions:\n")[0] + "conditions:\n" + conditions + "baseline: bm25\n"
    path = tmp_path / "experiments" / "bad.yaml"
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(ValueError, match=r"bad\.yaml") as error:
        load_experiment(path, "cpu", ["data=x"])
    assert message in str(error.value)


@pytest.mark.parametrize(("change", "message"), [
    (("[nDCG@10, R@10]", "[nDCG@10, R@1000]"), "tasks.test: left out R@1000: the runs rank at most 100 documents"),
    (("rrf: {retrieve: {fuse: [bm25, minilm]}}", "rrf: {retrieve: {fuse: [bm25, minilm], k: 5}}"),
     "tasks.dev: every metric asked for is deeper than the runs (5 documents a query)"),
])
def test_a_task_metric_deeper_than_its_runs_is_refused(tmp_path, change, message):
    """``seedr evaluate``'s rule (a metric deeper than the runs would be its value at their depth) holds for an
    experiment's tasks too, against the depth each condition retrieves (a fusion's k, else its components'),
    when the file is read."""
    from seedr.experiments.spec import load_experiment

    path = tmp_path / "experiments" / "deep.yaml"
    path.parent.mkdir()
    path.write_text(HYBRID.replace(*change))
    with pytest.raises(ValueError, match=r"deep\.yaml") as error:
        load_experiment(path, "cpu", ["data=x"])
    assert message in str(error.value)
