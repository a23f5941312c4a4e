"""The summary that opens the claims page (docs/claims.md): one row per central claim of the papers, with
the best evidence seedr recorded for it, chosen by a stated rule from the rows whose experiment file names
the claim (``central:``); rows at chance in an appendix; the committed page matches the committed
records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from seedr.experiments.record.claims_page import (
    APPENDIX_BEGIN,
    APPENDIX_END,
    CENTRAL_CLAIMS,
    CLAIMS_BEGIN,
    CLAIMS_END,
    SUMMARY_BEGIN,
    SUMMARY_END,
    claims_appendix,
    claims_summary,
    claims_table,
    update_claims_page,
)
from seedr.experiments.record.verdicts import AT_CHANCE
from seedr.experiments.spec import experiments_dir, load_experiment

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "claims.md"


def _between(text: str, begin: str, end: str) -> str:
    return text.split(begin, 1)[1].split(end, 1)[0].lstrip("\n")


def test_every_central_key_names_a_central_claim_of_the_papers():
    """A ``central:`` key names one of CENTRAL_CLAIMS, only on the papers' claims (seedr's own targets
    are no claims of the papers); every central claim has rows bearing on it."""
    used = set()
    for path in sorted(experiments_dir().glob("*.yaml")):
        for claim in yaml.safe_load(path.read_text()).get("claims") or []:
            if "central" in claim:
                assert claim["central"] in CENTRAL_CLAIMS, f"{path.name}: {claim['claim']}"
                assert claim.get("source", "paper") == "paper", f"{path.name}: {claim['claim']}"
                used.add(claim["central"])
    assert used == set(CENTRAL_CLAIMS)
    # the key reaches results.json through the claims' results (rerender, or a run)
    experiment = load_experiment("seed_vs_mlm")
    assert {claim.central for claim in experiment.claims} == {"seed_vs_mlm"}


def _row(name, verdict="holds", seeds=1, central="seed_vs_mlm", source="paper", metric="m"):
    return {"claim": name, "paper": "p", "protocol": "x", "source": source, "task": "t", "metric": metric,
            "condition": "a", "against": "b", "expect": "higher", "value": 0.5, "against_value": 0.4,
            "delta": 0.1, "p_value": 0.01, "verdict": verdict, "scale": "cpu", "chance": 0.01, "bm25": 0.9,
            "floor": 0.18, "seeds": {"condition": seeds, "against": seeds}, "central": central}


def _record(root: Path, name: str, claims: list[dict], scale="cpu", variables=None, gpu=None):
    (root / name).mkdir(parents=True)
    (root / name / "results.json").write_text(json.dumps({
        "claims": claims, "scale": scale, "variables": variables or {},
        "machine": {"cpus": 2, "gpu": gpu}}))


def _summary_row(summary: str, statement: str) -> str:
    return next(line for line in summary.splitlines() if line.startswith(f"| {statement} |"))


def test_the_best_evidence_is_judged_then_most_seeds_then_largest_scale(tmp_path):
    """The rule, row by row: a row at chance never wins; more seeds beat a larger scale; at equal seeds a
    gpu run beats a cpu one, encoders continued from the base beat encoders from scratch, more
    pre-training tokens beat fewer; ties go to the first in the table's order. The others are listed,
    those at chance as pointers to the appendix."""
    root = tmp_path / "results"
    small = {"base": "seedr-base", "steps": 100, "batch_size": 32, "max_length": 128}
    large = {"base": "seedr-base", "steps": 400, "batch_size": 32, "max_length": 128}
    _record(root, "a_chance", [_row("at chance, big", AT_CHANCE, seeds=5)], variables=large)
    _record(root, "b_one_seed_gpu", [_row("one seed on a GPU", seeds=1)], scale="gpu", variables=large,
            gpu="NVIDIA H100")
    _record(root, "c_three_seeds", [_row("three seeds", "not significant", seeds=3)], variables=small)
    summary = claims_summary(root, relative_to=tmp_path)
    row = _summary_row(summary, CENTRAL_CLAIMS["seed_vs_mlm"].statement)
    assert "[c_three_seeds](results/c_three_seeds/report.md): three seeds" in row
    assert "3 seeds each" in row and "not significant (3 seeds each)" in row
    assert "b_one_seed_gpu (t m): holds (1 seed)" in row and "at chance (appendix): a_chance" in row
    assert CENTRAL_CLAIMS["seed_vs_mlm"].would_change_cell() in row

    # equal seeds: the gpu scale wins; on one scale, from the base beats from scratch, then tokens
    root = tmp_path / "equal"
    _record(root, "a_scratch", [_row("from scratch, many tokens")], variables={"steps": 10_000, "batch_size": 256,
                                                                              "max_length": 512})
    _record(root, "b_base_small", [_row("from the base, few tokens")], variables=small)
    _record(root, "c_base_large", [_row("from the base, more tokens")], variables=large)
    _record(root, "d_base_large_too", [_row("a tie, later in the table")], variables=large)
    row = _summary_row(claims_summary(root), CENTRAL_CLAIMS["seed_vs_mlm"].statement)
    assert "from the base, more tokens — cpu scale, continued from the seedr base, 400 steps of 32 × 128" in row
    _record(root, "e_gpu_scratch", [_row("on a GPU")], scale="gpu", variables={"steps": 5})
    row = _summary_row(claims_summary(root), CENTRAL_CLAIMS["seed_vs_mlm"].statement)
    assert "on a GPU — gpu scale, from scratch" in row


def test_a_central_claim_without_a_judged_row_is_inconclusive(tmp_path):
    root = tmp_path / "results"
    _record(root, "x", [_row("at chance", AT_CHANCE), _row("learned nothing", "inconclusive: b learned nothing")])
    summary = claims_summary(root)
    row = _summary_row(summary, CENTRAL_CLAIMS["seed_vs_mlm"].statement)
    assert "no row judged above the floor" in row and f"{AT_CHANCE} in every row" in row
    assert "x (t m): inconclusive: b learned nothing" in row and "at chance (appendix): x" in row
    other = _summary_row(summary, CENTRAL_CLAIMS["long_text_similarity"].statement)
    assert "no recorded row" in other
    _record(root, "y", [_row("unknown", central="not_a_claim")])
    with pytest.raises(ValueError, match="unknown central claims"):
        claims_summary(root)


def test_rows_at_chance_go_to_the_appendix(tmp_path):
    root = tmp_path / "results"
    _record(root, "x", [_row("judged"), _row("at chance", AT_CHANCE), _row("a target at chance", AT_CHANCE,
                                                                           source="seedr", central=None)])
    table, appendix = claims_table(root), claims_appendix(root)
    assert "| judged |" in table and "| at chance |" not in table and "| a target at chance |" not in table
    assert "1 of the 3 recorded rows; the 2 whose verdict" in table
    assert "| at chance |" in appendix and "| a target at chance |" in appendix and "| judged |" not in appendix


def test_update_claims_page_puts_the_summary_first_and_the_appendix_last(tmp_path):
    """A page with the claims table's markers only gets the summary after its title and the appendix at
    its end; a second update replaces them in place."""
    root = tmp_path / "results"
    _record(root, "x", [_row("judged"), _row("at chance", AT_CHANCE)])
    page = tmp_path / "claims.md"
    page.write_text(f"# Claims\n\nIntro.\n\n{CLAIMS_BEGIN}\nold\n{CLAIMS_END}\n\nAfter.\n")
    assert update_claims_page(page, root)
    text = page.read_text()
    assert text.index(SUMMARY_BEGIN) < text.index("Intro.") < text.index(CLAIMS_BEGIN) < text.index(APPENDIX_BEGIN)
    assert text.startswith("# Claims\n\n" + SUMMARY_BEGIN) and "## Every claim" in text
    assert _between(text, SUMMARY_BEGIN, SUMMARY_END) == claims_summary(root, relative_to=tmp_path)
    assert _between(text, APPENDIX_BEGIN, APPENDIX_END) == claims_appendix(root, relative_to=tmp_path)
    assert update_claims_page(page, root) and page.read_text() == text
    page.write_text("# Claims\n\nno markers\n")
    assert not update_claims_page(page, root)


def test_the_committed_page_matches_the_committed_records():
    text = PAGE.read_text()
    assert text.index(SUMMARY_BEGIN) < text.index(CLAIMS_BEGIN) < text.index(APPENDIX_BEGIN)
    results, docs = ROOT / "docs" / "results", ROOT / "docs"
    assert _between(text, SUMMARY_BEGIN, SUMMARY_END) == claims_summary(results, relative_to=docs)
    assert _between(text, APPENDIX_BEGIN, APPENDIX_END) == claims_appendix(results, relative_to=docs)
    summary = claims_summary(results, relative_to=docs)
    assert all(f"| {central.statement} |" in summary for central in CENTRAL_CLAIMS.values())
    assert "**The rule:**" in summary


def test_the_page_says_no_more_than_the_runs_show():
    """The claims page tests directions, so it claims no "≫" (ICT+BFS+WLP's +0.045 R@100 over MLM is not
    the paper's 89.85 vs 3.93; the summary says so beside the verdict), and no "collapse" (both decoders
    lower the random-pair cosine against MLM, and it does not grow with length from the base: the summary
    reads it from the records)."""
    text = PAGE.read_text()
    assert "≫" not in text and "collapse" not in text.lower()
    summary = claims_summary(ROOT / "docs" / "results", relative_to=ROOT / "docs")
    ict = _summary_row(summary, CENTRAL_CLAIMS["ict_few_labels"].statement)
    assert "the paper's gap" in ict and "R@100 0.8985 vs 0.0393" in ict and "not the size" in ict
    similarity = _summary_row(summary, CENTRAL_CLAIMS["long_text_similarity"].statement)
    assert "both decoders lower it against mlm" in similarity and "seed 0.770 → 0.754" in similarity
    assert "(not measured)" in similarity


def test_what_would_change_a_central_claim_is_a_queued_job_that_tests_it():
    """Each central claim's "what would change it" names a job of the GPU pack's queue (a job, or the
    leases of one experiment's seeds under their ``combine`` name) whose experiment, at its gpu scale, has
    claims bearing on that central claim, between conditions it runs: not a job without them (the summary
    once sent the strong decoder, CPDAE and ReQA 1% to seed_vs_mlm_at_scale, which runs BM25, MLM and SEED
    on NQ only)."""
    jobs = yaml.safe_load((ROOT / "gpu" / "queue.yaml").read_text())["jobs"]
    experiments = {}
    for job in jobs:
        if "experiment" in job:
            for name in {job["name"], job.get("combine", job["name"])}:
                experiments[name] = job["experiment"]
    for key, central in CENTRAL_CLAIMS.items():
        assert central.job in experiments, f"{key}: {central.job} is no experiment job of gpu/queue.yaml"
        assert f"`{central.job}`" in central.would_change_cell()
        experiment = load_experiment(experiments[central.job], "gpu")
        bearing = [claim for claim in experiment.claims if claim.central == key]
        assert bearing, f"{key}: {central.job} runs {experiment.name}, which has no claim bearing on it"
        systems = set(experiment.conditions) | set(experiment.groups or {})
        for claim in bearing:
            assert {claim.condition, claim.against} <= systems, f"{key}: {claim.claim}"


def test_the_evidence_shows_each_runs_own_steps():
    """A ``flops_budget`` buys each objective its own steps (pretraining_objectives: 32 to 203, MLM 99),
    whatever ``steps`` the experiment's variables inherit (400): every record whose pre-training was
    budgeted keeps each run's steps, and the summary shows their range, not the variable."""
    from seedr.experiments.record.claims_page import _pretraining

    budgeted = 0
    for path in sorted((ROOT / "docs" / "results").glob("*/results.json")):
        results = json.loads(path.read_text())
        if "flops_budget" not in (results.get("variables") or {}):
            continue
        budgeted += 1
        runs = results["pretraining"]
        assert runs, path.parent.name
        steps = sorted({run["steps"] for run in runs.values()})
        assert _pretraining(results)["steps"] == (steps[0], steps[-1])
    assert budgeted >= 1
    text = PAGE.read_text()
    objectives = json.loads((ROOT / "docs" / "results" / "pretraining_objectives" / "results.json")
                            .read_text())
    assert objectives["pretraining"]["mlm-s1"]["steps"] == 99
    assert "pretraining_objectives](results/pretraining_objectives/report.md)" in text
    for row in text.splitlines():
        if "[pretraining_objectives](results/pretraining_objectives/report.md):" in row:
            assert "32–203 steps of 32 × 64 tokens" in row and "400 steps" not in row


def test_a_run_records_the_steps_its_pre_training_took(tmp_path):
    """The runner reads each condition's pre-training from its run's config.yaml (where a budget wrote the
    steps it bought), not from the experiment's variables."""
    from seedr.experiments.record.pretraining import pretraining_record

    class Step:
        def __init__(self, kind):
            self.kind = kind

    run = tmp_path / "pretrain"
    run.mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump(
        {"train": {"max_steps": 43, "batch_size": 32, "global_batch_size": None}, "data": {"max_seq_length": 64}}))
    chains = {"seed-s1": [(Step("pretrain"), run), (Step("finetune"), tmp_path / "finetune")],
              "base-s1": [(Step("finetune"), tmp_path / "finetune")]}
    assert pretraining_record(chains) == {"seed-s1": {"steps": 43, "batch": 32, "length": 64}}
