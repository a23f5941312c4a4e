"""The GPU pack (gpu/: queue, run.sh, pack.py, jobs) runs here at a toy size on the CPU, so that it cannot
rot between the rare leases of a GPU: ``bash gpu/run.sh --tiny`` runs the next job of the queue and packs
what would come back, and ``gpu/pack.py record`` files it under docs/results/gpu with where it ran."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "gpu"))

import pack  # noqa: E402 (gpu/ on the path first)


def test_the_queue_names_ready_jobs_with_a_command_and_a_tiny_run():
    jobs = pack.load_queue()
    assert [job["name"] for job in jobs][:2] == ["throughput", "stronger_base"]
    for job in jobs:
        assert job["goal"] and "runs" in job and "done" in job
        if not job.get("not_ready"):
            assert "{out}" in job["command"] and "{out}" in job["tiny"] and "--tiny" in job["tiny"]
            for entry in job.get("data", []):
                assert (pack.SHARED / entry.partition(":")[0]).is_file(), entry
            assert set(job.get("derived", [])) <= set(pack.DERIVED)
        if "experiment" in job:  # an experiment job: a shipped experiment with a gpu scale
            from seedr.experiments.spec import load_experiment

            seeds = [f"seeds=[{job['command'].split('--seeds ')[1].split()[0]}]"] if "--seeds" in job["command"] else []
            assert load_experiment(job["experiment"], "gpu", seeds).conditions
    combined = {job["combine"] for job in jobs if "combine" in job}
    assert combined == {"seed_vs_mlm_at_scale", "ict_vs_mlm_1024"}
    for name in combined:  # one seed a lease, every seed of the experiment once
        assert sorted(job["command"].split("--seeds ")[1].split()[0] for job in jobs
                      if job.get("combine") == name) == ["1", "2", "3"]
    assert pack.chosen_job(jobs, None)["name"] == "throughput"


def run_tiny(job: str, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(ROOT / "gpu" / "run.sh"), job, "--tiny", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_run_sh_runs_the_next_job_tiny_and_record_files_it(tmp_path):
    out = tmp_path / "OUT"
    result = run_tiny("throughput", out)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert sorted(path.name for path in out.iterdir()) == ["throughput.log", "throughput.tgz"]
    with tarfile.open(out / "throughput.tgz") as archive:
        results = json.load(archive.extractfile("throughput/results.json"))
    assert results["tiny"] and set(results["systems"]) == set(pack_jobs_throughput_systems())
    assert all(row["tokens_per_second"] > 0 and row["mfu"] > 0 for row in results["systems"].values())

    queue = tmp_path / "queue.yaml"
    shutil.copyfile(pack.QUEUE, queue)
    (target,) = pack.record(out, tmp_path / "results", queue)
    readme = (target / "README.md").read_text()
    assert "run on: cpu" in readme and "tiny" in readme and (target / "results.md").is_file()
    assert (target / "log.txt").is_file() and json.loads((target / "run_on.json").read_text())["exit"] == 0
    recorded = {job["name"]: job for job in pack.load_queue(queue)}["throughput"]
    assert len(recorded["runs"]) == 1 and recorded["runs"][0]["run_on"] == "cpu"
    assert queue.read_text().startswith("# The GPU pack's queue")  # comments kept


def pack_jobs_throughput_systems() -> list[str]:
    sys.path.insert(0, str(ROOT / "gpu" / "jobs"))
    import throughput

    return list(throughput.SYSTEMS)


@pytest.mark.slow
def test_stronger_base_runs_tiny(tmp_path):
    out = tmp_path / "OUT"
    result = run_tiny("stronger_base", out)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    with tarfile.open(out / "stronger_base.tgz") as archive:
        names = archive.getnames()
        results = json.load(archive.extractfile("stronger_base/results.json"))
    assert "stronger_base/encoder/model.safetensors" in names
    assert set(results["heldout"]) == {"seedr-base", "new"} and results["steps_logged"] == 3


@pytest.mark.slow
@pytest.mark.parametrize("job", ["seed_vs_mlm_at_scale_1", "objectives_at_scale", "ict_vs_mlm_1024_1",
                                 "diagnostics_at_scale"])
def test_experiment_jobs_run_tiny(tmp_path, job):
    """Each experiment job at a toy size: its report, and the per-query scores a combination needs."""
    out = tmp_path / "OUT"
    result = run_tiny(job, out)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    with tarfile.open(out / f"{job}.tgz") as archive:
        names = archive.getnames()
        per_query = json.load(archive.extractfile(f"{job}/per_query.json"))
        results = json.load(archive.extractfile(f"{job}/results.json"))
    assert f"{job}/report.md" in names and f"{job}/lease.json" in names
    assert set(per_query) == set(results["tasks"]) and all(per_query.values())
