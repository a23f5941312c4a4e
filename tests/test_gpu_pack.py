"""The GPU pack (gpu/: queue, run.sh, pack.py, jobs) runs here at a toy size on the CPU, so that it cannot
rot between the rare leases of a GPU: ``bash gpu/run.sh --tiny`` runs the next job of the queue and packs
what would come back, and ``gpu/pack.py record`` files it under docs/results/gpu with where it ran."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "gpu"))

import pack  # noqa: E402 (gpu/ on the path first)
from tests.test_combine import models  # noqa: E402, F401 (the fixture: three tiny encoders, one a seed)


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

            seeds = [f"seeds={job['seeds']}"] if "seeds" in job else []
            assert load_experiment(job["experiment"], "gpu", seeds).conditions
            assert ("{seeds}" in job["command"] and "{seeds}" in job["tiny"]) == ("seeds" in job)
    combined = {job["combine"]: job["seeds"] for job in jobs if "combine" in job}
    assert combined == {"seed_vs_mlm_at_scale": [1, 2, 3], "ict_vs_mlm_1024": [1, 2, 3],
                        "objectives_at_equal_flops": [1, 2, 3]}
    assert pack.chosen_job(jobs, None)["name"] == "throughput"


def run_tiny(job: str, out: Path, environment: dict[str, str] | None = None,
             prefix: tuple[str, ...] = (), timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*prefix, "bash", str(ROOT / "gpu" / "run.sh"), job, "--tiny", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=environment)


#: What run.sh and the jobs call besides Python: no git, no nvidia-smi (the device may lack either).
TOOLS = ("bash", "date", "mkdir", "mktemp", "tar", "xz", "ln", "dirname", "cat", "rm", "env", "unshare")


def bare_path(folder: Path) -> str:
    """A PATH of a folder holding links to ``TOOLS`` only."""
    folder.mkdir(parents=True, exist_ok=True)
    for tool in TOOLS:
        found = shutil.which(tool)
        if found:
            (folder / tool).symlink_to(found)
    assert shutil.which("git", path=str(folder)) is None and shutil.which("nvidia-smi", path=str(folder)) is None
    return str(folder)


def test_run_sh_runs_the_next_job_tiny_and_record_files_it(tmp_path):
    """Without git or nvidia-smi on the PATH (#55: the archive was lost to git's absence), the job runs and
    its archive is written."""
    out = tmp_path / "OUT"
    environment = {**os.environ, "PATH": bare_path(tmp_path / "bin"), "SEEDR_PYTHON": sys.executable}
    result = run_tiny("throughput", out, environment)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "start-up check passed" in result.stdout
    assert sorted(path.name for path in out.iterdir()) == ["throughput.log", "throughput.tgz"]
    with tarfile.open(out / "throughput.tgz") as archive:
        results = json.load(archive.extractfile("throughput/results.json"))
    throughput = throughput_job()
    assert results["tiny"] and set(results["systems"]) == set(throughput.SYSTEMS)
    for row in results["systems"].values():  # MFU against the measured peak (no datasheet rate for a CPU)
        assert row["tokens_per_second"] > 0 and row["mfu"] > 0 and row["mfu_datasheet"] is None
        assert set(row["phases_seconds_per_step"]) == set(throughput.PHASES) and row["timed_steps"] >= 1
    # what `pack.py plan` reads: the seedr base's rates per objective and length
    assert set(results["seedr_base"]) == set(throughput.MINI_OBJECTIVES)
    for by_length in results["seedr_base"].values():
        assert set(by_length) == {"64", "128"}
        assert all(row["flops_per_second"] > 0 and row["phases_seconds_per_step"] for row in by_length.values())
    assert set(results["seed_over_mlm"]) == {"cost_ratio", "flop_ratio"}
    assert results["goal"]["mlm_over_hf_loop"] == 1.0 and results["goal"]["seed_mfu"] == 0.4
    assert throughput.expected_seconds() <= pack.COMMAND_SECONDS - pack.PACKING_SECONDS

    queue = tmp_path / "queue.yaml"
    shutil.copyfile(pack.QUEUE, queue)
    (target,) = pack.record(out, tmp_path / "results", queue)
    readme = (target / "README.md").read_text()
    assert "run on: cpu" in readme and "tiny" in readme and (target / "results.md").is_file()
    run_on = json.loads((target / "run_on.json").read_text())
    assert (target / "log.txt").is_file() and run_on["exit"] == 0 and run_on["commit"] is None  # no git there
    recorded = {job["name"]: job for job in pack.load_queue(queue)}["throughput"]
    assert len(recorded["runs"]) == 1 and recorded["runs"][0]["run_on"] == "cpu"
    assert queue.read_text().startswith("# The GPU pack's queue")  # comments kept


def throughput_job():
    sys.path.insert(0, str(ROOT / "gpu" / "jobs"))
    import throughput

    return throughput


@pytest.fixture(scope="module")
def device_image(tmp_path_factory) -> dict[str, str]:
    """#55: the environment of the device, built once for the slow tier's tiny jobs: only the image's packages
    and the carried site (``prepare``'s), no git and no nvidia-smi on the PATH."""
    folder = tmp_path_factory.mktemp("device")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    carried = folder / "carried"
    pack.wheel_site(pack.carried_distributions(), carried / "site.tar.xz", python_version=version)
    (carried / "imports.json").write_text(json.dumps(pack.import_names()))
    python = image_environment(folder / "image")
    return {**os.environ, "PATH": bare_path(folder / "bin"), "SEEDR_PYTHON": str(python),
            "SEEDR_GPU_CARRIED": str(carried), "PYTHONPATH": ""}


#: Each job of the slow tier runs with no network, as on the device.
OFFLINE = ("unshare", "-n") if shutil.which("unshare") else ()
#: A tiny experiment job takes minutes here, three times as long on the AVX2-only CPU, more on a busy one.
JOB_SECONDS = 1800
#: The experiment jobs of the queue, each run tiny on the device image by a test of its own.
EXPERIMENT_JOBS = ["seed_vs_mlm_at_scale", "objectives_at_scale", "ict_vs_mlm_1024", "diagnostics_at_scale",
                   "objectives_at_equal_flops"]


def run_on_device(job: str, out: Path, device_image: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``job`` tiny through run.sh on the device image; it wrote its archive (split or not)."""
    result = run_tiny(job, out, device_image, OFFLINE, timeout=JOB_SECONDS)
    assert result.returncode == 0, (job, result.stdout[-3000:] + result.stderr[-3000:])
    assert (out / f"{job}.tgz").is_file() or (out / f"{job}.tgz.00").is_file()
    return result


@pytest.mark.slow
@pytest.mark.timeout(JOB_SECONDS + 600)  # the job, and the device image for the worker's first
def test_stronger_base_runs_tiny_on_the_device_image(tmp_path, device_image):
    out = tmp_path / "OUT"
    run_on_device("stronger_base", out, device_image)
    with tarfile.open(out / "stronger_base.tgz") as archive:
        names = archive.getnames()
        results = json.load(archive.extractfile("stronger_base/results.json"))
    assert "stronger_base/encoder/model.safetensors" in names
    assert set(results["heldout"]) == {"seedr-base", "new"} and results["steps_logged"] == 3


@pytest.mark.slow
@pytest.mark.timeout(JOB_SECONDS + 600)  # the job, and the device image for the worker's first
@pytest.mark.parametrize("job", EXPERIMENT_JOBS)
def test_experiment_jobs_run_tiny_on_the_device_image(tmp_path, device_image, job):
    """Each experiment job at a toy size: its report, and the per-query scores a combination needs."""
    out = tmp_path / "OUT"
    run_on_device(job, out, device_image)
    with tarfile.open(out / f"{job}.tgz") as archive:
        names = archive.getnames()
        per_query = json.load(archive.extractfile(f"{job}/per_query.json"))
        results = json.load(archive.extractfile(f"{job}/results.json"))
    assert f"{job}/report.md" in names and f"{job}/lease.json" in names
    assert set(per_query) == set(results["tasks"]) and all(per_query.values())


def test_the_start_up_check_names_what_the_job_would_miss(tmp_path):
    """#55: run.sh checked only seedr.cli and torch; now every module of seedr and of each runtime package,
    and the job's data, in seconds, with one line naming what is missing and exit 4."""
    carried = tmp_path / "carried"
    carried.mkdir()
    imports = pack.import_names()
    assert {"ir-measures", "pytrec-eval-terrier", "faiss-cpu", "bm25s", "blingfire"} <= set(imports)
    assert imports["ir-measures"] == ["ir_measures"] and imports["pystemmer"] == ["Stemmer"]
    imports["ir-measures"] = ["ir_measures_not_there"]
    (carried / "imports.json").write_text(json.dumps(imports))
    environment = {**os.environ, "SEEDR_GPU_CARRIED": str(carried), "SEEDR_PYTHON": sys.executable,
                   "SEEDR_SHARED_DATA": str(tmp_path / "no-data")}
    result = run_tiny("throughput", tmp_path / "OUT", environment)
    assert result.returncode == 4
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and "module ir_measures_not_there of ir-measures" in lines[0]
    assert "data file wiki/enwiki-2015-00.jsonl.xz" in lines[0] and not (tmp_path / "OUT").exists()


def test_prepare_carries_what_the_device_image_lacks():
    """The closure of pyproject.toml's dependencies less gpu/device-image.txt: ir-measures and
    pytrec-eval-terrier (which no job's wheels list named) travel; torch, transformers and the image's
    packages do not; the two data packages no job reads are left out, and said so."""
    carried = pack.carried_distributions()
    assert {"ir-measures", "pytrec-eval-terrier", "faiss-cpu", "bm25s", "blingfire", "pyahocorasick", "pystemmer",
            "docstring-parser"} <= set(carried)
    image = pack.device_image()
    assert {"torch", "transformers", "numpy", "pyarrow", "typer"} <= image
    assert not set(carried) & set(pack.NOT_CARRIED)
    assert all(carried.values())  # pinned to the versions the tests ran


def test_the_libraries_of_the_models_travel_at_the_tested_versions():
    """#66: the device held transformers 5.17 while everything was tested on another version: transformers,
    sentence-transformers and tokenizers travel at the versions installed here wherever the image's differ,
    nothing else the image holds travels, and every carried distribution's requirements are met by the
    versions the image is known to hold (a carried transformers must accept the device's huggingface-hub)."""
    import importlib.metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    versions = pack.device_versions()
    assert versions["transformers"] == "5.17.0" and versions["torch"] == "2.11.0" and versions["pyarrow"] is None
    carried = pack.carried_distributions()
    for name in pack.TRAVEL_AT_TESTED_VERSION:
        travels = versions[name] != importlib.metadata.version(name)
        assert (name in carried) == travels and (not travels or carried[name] == importlib.metadata.version(name))
    assert not (set(carried) - pack.TRAVEL_AT_TESTED_VERSION) & set(versions)
    assert pack.retested({"transformers": importlib.metadata.version("transformers")}) == {}
    for name in carried:
        for requirement in map(Requirement, importlib.metadata.distribution(name).requires or []):
            needed = canonicalize_name(requirement.name)
            if pack._applies(requirement) and needed not in carried and versions.get(needed):
                assert requirement.specifier.contains(versions[needed], prereleases=True), (name, requirement)


def image_environment(folder: Path, with_carried: bool = False) -> Path:
    """A virtual environment holding, of seedr's runtime dependency closure as installed here, only what the
    device image lists (this CPU torch standing for its CUDA torch) — and, ``with_carried``, what ``prepare``
    carries for it — each distribution linked from this machine's site-packages; returns its python. No
    distribution of ``pack.NOT_CARRIED`` can be imported there, as on the device."""
    import importlib.metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    (site,) = folder.glob("lib/python*/site-packages")
    image, closure, pending = pack.device_image(), set(), [r for r in pack.runtime_requirements() if pack._applies(r)]
    while pending:  # the whole closure as installed here: an image package's own needs come with it
        name = canonicalize_name(pending.pop().name)
        if name in closure:
            continue
        closure.add(name)
        pending += [r for r in map(Requirement, importlib.metadata.distribution(name).requires or [])
                    if pack._applies(r)]
    carried = set(pack.carried_distributions())
    kept = (closure if with_carried else closure - carried) - set(pack.NOT_CARRIED)
    assert ("ir-measures" in kept) == with_carried and "torch" in kept
    for name in kept - carried:
        distribution = importlib.metadata.distribution(name)
        for top in {Path(str(file)).parts[0] for file in distribution.files or [] if not str(file).startswith("..")}:
            source = Path(distribution.locate_file(top))
            if source.exists() and not (site / top).exists():
                (site / top).symlink_to(source)
    for name in kept & carried:  # file by file, as the carried site holds them: less what prepare prunes
        distribution = importlib.metadata.distribution(name)
        for file in distribution.files or []:
            source, target = Path(distribution.locate_file(file)), site / str(file)
            if not str(file).startswith("..") and source.is_file() and not pack.pruned().match(str(file)):
                target.parent.mkdir(parents=True, exist_ok=True)
                target.symlink_to(source)
    return folder / "bin" / "python"


def test_every_module_imports_on_the_device_image(tmp_path):
    """#66: the start-up check of every job (``pack.py check``: every seedr module and every runtime
    package imported, no training) passes where only the device image's distributions and the carried ones
    can be imported. A module-level import of a package that never travels (``pack.NOT_CARRIED``, e.g.
    all-MiniLM's weights) killed every job at start-up on the device once; this fast test keeps it from
    coming back between the rare leases (the tiny end-to-end runs are the slow tier's)."""
    python = image_environment(tmp_path / "image", with_carried=True)
    carried = tmp_path / "carried"
    carried.mkdir()
    (carried / "imports.json").write_text(json.dumps(pack.import_names()))
    environment = {**os.environ, "SEEDR_GPU_CARRIED": str(carried), "PYTHONPATH": str(ROOT)}
    for name in pack.NOT_CARRIED:  # the environment is the device's: what never travels is not there
        probe = subprocess.run([str(python), "-c", f"import importlib.metadata as m; m.distribution({name!r})"],
                               capture_output=True, text=True, env=environment)
        assert probe.returncode != 0, name
    result = subprocess.run([str(python), str(ROOT / "gpu" / "pack.py"), "check", "--tiny"], cwd=ROOT,
                            capture_output=True, text=True, env=environment, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "start-up check passed" in result.stdout
    # the jobs' own scripts import there too (their top-level imports are not seedr's: bench/ modules, torch)
    loader = ("import importlib.util, sys\n"
              "for path in sys.argv[1:]:\n"
              "    sys.path.insert(0, path.rsplit('/', 1)[0])  # as when it runs: its folder first\n"
              "    spec = importlib.util.spec_from_file_location('job_' + path.rsplit('/', 1)[-1][:-3], path)\n"
              "    spec.loader.exec_module(importlib.util.module_from_spec(spec))\n")
    scripts = sorted(str(path) for path in (ROOT / "gpu" / "jobs").glob("*.py"))
    result = subprocess.run([str(python), "-c", loader, *scripts], cwd=ROOT, capture_output=True, text=True,
                            env=environment, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    # and the pruned transformers that travels builds, tokenizes and encodes with the seedr base
    encode = ("from seedr.retrieval.encode import encode_texts\n"
              "from seedr.modeling.encoder import load_encoder, load_tokenizer\n"
              "vectors = encode_texts(load_encoder('seedr-base'), load_tokenizer('seedr-base'), ['a short text'],\n"
              "                       max_length=16, batch_size=1)\n"
              "print(tuple(vectors.shape))\n")
    result = subprocess.run([str(python), "-c", encode], cwd=ROOT, capture_output=True, text=True,
                            env=environment, timeout=600)
    assert result.returncode == 0 and result.stdout.strip().endswith(", 256)"), result.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.timeout(JOB_SECONDS + 600)  # the job, and the device image for the worker's first
def test_every_job_runs_on_the_device_image(tmp_path, device_image):
    """#55: with only the image's packages and the carried site, every job's tiny mode runs through run.sh
    with no network (``unshare -n``) and no git (the throughput job here, each other job by its own test
    above); without a carried runtime package the start-up check names it and the job never starts."""
    ready = [job["name"] for job in pack.load_queue() if not job.get("not_ready")]
    assert sorted(ready) == sorted(["throughput", "stronger_base", *EXPERIMENT_JOBS])  # each run on the image
    run_on_device("throughput", tmp_path / "OUT" / "throughput", device_image)

    # the test fails when a runtime dependency is missing from the carried site
    carried = tmp_path / "carried"
    shutil.copytree(device_image["SEEDR_GPU_CARRIED"], carried)
    site = tmp_path / "site"
    site.mkdir()
    subprocess.run(["tar", "xJf", str(carried / "site.tar.xz"), "-C", str(site)], check=True)
    for path in site.glob("ir_measures*"):
        shutil.rmtree(path)
    subprocess.run(["tar", "cJf", str(carried / "site.tar.xz"), "-C", str(site), "."], check=True)
    without = {**device_image, "SEEDR_GPU_CARRIED": str(carried)}
    result = run_tiny("throughput", tmp_path / "OUT" / "without", without, OFFLINE)
    assert result.returncode == 4 and "module ir_measures of ir-measures" in result.stdout + result.stderr


def carried_site(folder: Path, imports: dict[str, list[str]]) -> dict[str, str]:
    """A carried folder whose site holds one module and whose import list is ``imports``, and the environment
    that runs run.sh with it, its temporary folders under ``folder/tmp``."""
    site, carried = folder / "site", folder / "carried"
    site.mkdir(parents=True)
    carried.mkdir()
    (site / "carried_marker.py").write_text("")
    subprocess.run(["tar", "cJf", str(carried / "site.tar.xz"), "-C", str(site), "."], check=True)
    (carried / "imports.json").write_text(json.dumps(imports))
    (folder / "tmp").mkdir()
    return {**os.environ, "SEEDR_PYTHON": sys.executable, "SEEDR_GPU_CARRIED": str(carried),
            "TMPDIR": str(folder / "tmp")}


def test_an_experiment_job_cut_short_returns_the_units_it_finished(tmp_path):
    """#66: a job wrote its results only at its end, so a lease that timed out returned nothing. The watch
    over an experiment lists every finished step and retrieval (its run copied) as it goes, and stops the
    experiment when its budget is spent."""
    sys.path.insert(0, str(ROOT / "gpu" / "jobs"))
    import experiment

    runs, out = tmp_path / "runs", tmp_path / "out"
    out.mkdir()
    script = ("import pathlib, time\n"
              f"runs = pathlib.Path({str(runs)!r})\n"
              "(runs / 'steps' / 'pretrain-ab12').mkdir(parents=True)\n"
              "(runs / 'steps' / 'pretrain-ab12' / 'step.json').write_text('{\"kind\": \"pretrain\"}')\n"
              "(runs / 'steps' / 'finetune-cd34').mkdir(parents=True)  # begun, not finished\n"
              "(runs / 'retrieval' / 'reqa-ef56').mkdir(parents=True)\n"
              "(runs / 'retrieval' / 'reqa-ef56' / 'run.trec').write_text('q1 Q0 d1 1 2.5 seedr\\n')\n"
              "time.sleep(60)\n")
    experiment.WATCH_SECONDS = 0.5
    began = time.monotonic()
    assert not experiment.run_watched([sys.executable, "-c", script], runs, out, budget=2.0)
    assert time.monotonic() - began < 30
    units = json.loads((out / "units.json").read_text())
    assert units["steps"] == {"pretrain-ab12": {"kind": "pretrain"}} and units["retrievals"] == ["reqa-ef56"]
    assert not units["complete"] and units["exit"] not in (0, None)
    import gzip

    assert gzip.decompress((out / "retrieval" / "reqa-ef56" / "run.trec.gz").read_bytes()).startswith(b"q1 Q0 d1")


def test_run_sh_removes_the_site_it_unpacked_when_it_ends(tmp_path):
    """run.sh unpacks the carried site into a temporary folder of its own, and removes it however it ends
    (here: the start-up check refuses, exit 4)."""
    environment = carried_site(tmp_path, {"missing-distribution": []})
    result = run_tiny("throughput", tmp_path / "OUT", environment)
    assert result.returncode == 4 and "package missing-distribution (not installed)" in result.stdout + result.stderr
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_stop_sent_to_run_sh_ends_its_job_and_removes_the_site(tmp_path):
    """The job runs as run.sh's child (not exec'd, so that the site can be removed after it): a SIGTERM
    sent to run.sh alone still ends the job, and the site goes."""
    environment = carried_site(tmp_path, {})
    out = tmp_path / "OUT"
    run_sh = subprocess.Popen(["bash", str(ROOT / "gpu" / "run.sh"), "throughput", "--tiny", "--out", str(out)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=environment)
    deadline = time.monotonic() + 120
    while not (out / "throughput.log").is_file():  # the job has started
        assert run_sh.poll() is None and time.monotonic() < deadline, run_sh.stdout.read().decode()[-3000:]
        time.sleep(0.2)
    assert list((tmp_path / "tmp").glob("gpu-site.*"))
    run_sh.send_signal(signal.SIGTERM)
    assert run_sh.wait(timeout=30) != 0
    job = subprocess.run(["pgrep", "-f", f"pack.py run .*{out}"], capture_output=True, text=True, check=False)
    assert job.stdout == "", "the job outlived run.sh"
    assert list((tmp_path / "tmp").iterdir()) == []


RUN_ON = {"job": "throughput", "device": "NVIDIA H200", "tiny": False, "exit": 0, "seconds": 412.3,
          "date": "2026-11-28T21:00:00+00:00", "commit": "3d8e6d2"}


def returned(files_at: Path, run_on: dict, *extra: tarfile.TarInfo) -> None:
    """``files_at/throughput.tgz`` as a lease would bring it back, with ``run_on`` and ``extra`` members."""
    files_at.mkdir()
    with tarfile.open(files_at / "throughput.tgz", "w:gz") as archive:
        for folder in ("throughput", "throughput/results"):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            archive.addfile(info)
        for name, data in [("throughput/run_on.json", json.dumps(run_on).encode()),
                           ("throughput/results/results.json", b"{}")]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for info in extra:
            data = b"written where the archive says\n" if info.isfile() else b""
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data else None)


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


def files_under(folder: Path) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


def recorded_throughput(results: Path, flops_per_second: float, tiny: bool = False) -> None:
    """A throughput lease's results.json as the job writes it, with the seedr base's rates all at
    ``flops_per_second``."""
    folder = results / "throughput" / "2026-12-01-NVIDIA-H200"
    folder.mkdir(parents=True)
    rates = {objective: {str(length): {"tokens_per_second": 1.0, "flops_per_second": flops_per_second}
                         for length in (64, 128)} for objective in ("mlm", "seed", "cpdae", "ict_bfs_wlp")}
    (folder / "results.json").write_text(json.dumps({"tiny": tiny, "device": "NVIDIA H200", "seedr_base": rates}))


def test_plan_packs_every_seed_that_fits_from_the_recorded_throughput(tmp_path):
    """#55: the seeds of one lease are sized from the newest non-tiny throughput lease: all three at a high
    rate, fewer at a low one (never none: one seed is the least a lease runs), and the line says so."""
    job = pack.chosen_job(pack.load_queue(), "seed_vs_mlm_at_scale")
    recorded_throughput(tmp_path / "fast", 400e12)
    fast = pack.plan(job, tmp_path / "fast")
    assert fast["seeds"] == [1, 2, 3] and fast["seconds"] <= pack.COMMAND_SECONDS - pack.PACKING_SECONDS
    assert "3 seeds (1, 2, 3) in one lease" in fast["line"] and "throughput recorded 2026-12-01" in fast["line"]
    recorded_throughput(tmp_path / "slow", 20e12)
    slow = pack.plan(job, tmp_path / "slow")
    assert slow["seeds"] == [1] and slow["seconds"] > fast["seconds"] and "of the 3 left" in slow["line"]
    recorded_throughput(tmp_path / "tiny", 400e12, tiny=True)  # a tiny run's numbers mean nothing
    assert pack.plan(job, tmp_path / "tiny")["source"].startswith("first guess")


def test_plan_says_when_it_rests_on_the_first_guess(tmp_path):
    job = pack.chosen_job(pack.load_queue(), "seed_vs_mlm_at_scale")
    guessed = pack.plan(job, tmp_path / "none")
    assert guessed["seeds"] and set(guessed["seeds"]) <= {1, 2, 3}
    assert "first guess, no lease recorded yet" in guessed["line"] and "minutes expected" in guessed["line"]
    assert guessed["seconds"] <= pack.COMMAND_SECONDS - pack.PACKING_SECONDS


def test_run_passes_the_planned_seeds_to_the_job(tmp_path, monkeypatch):
    job = pack.chosen_job(pack.load_queue(), "seed_vs_mlm_at_scale")
    monkeypatch.setattr(pack, "JOB_FILE", tmp_path / "job.json")
    assert pack.lease_seeds(job, tiny=False) == [1]  # nothing prepared: the first seed not yet recorded
    (tmp_path / "job.json").write_text(json.dumps({"job": job["name"], "seeds": [1, 2, 3]}))
    assert pack.lease_seeds(job, tiny=False) == [1, 2, 3] and pack.lease_seeds(job, tiny=True) == [1]


@pytest.mark.parametrize(("run_on", "extra", "said"), [
    ({"date": "/elsewhere/Z"}, [], "date"),
    ({"date": "../../../Z"}, [], "date"),
    ({"date": "2026/11/28T21:00:00+00:00"}, [], "date"),
    ({"device": "../../H200"}, [], "device"),
    ({"exit": "0, done: true"}, [], "exit"),
    ({}, [member("/tmp/seedr-58-6-absolute.txt")], "/tmp/seedr-58-6-absolute.txt"),
    ({"commit": "abc"}, [member("throughput/fifo", tarfile.FIFOTYPE)], "special"),
    ({}, [member("throughput/../../escaped.txt")], "throughput/../../escaped.txt"),
    ({}, [member("throughput/results/link", tarfile.SYMTYPE, "results.json")], "link"),
    ({}, [member("throughput/results/outside", tarfile.SYMTYPE, "/etc/passwd")], "link"),
    ({}, [member("throughput/results/hard", tarfile.LNKTYPE, "throughput/results/results.json")], "link"),
    ({}, [member("elsewhere.txt")], "elsewhere.txt"),
], ids=["date-absolute", "date-up", "date-slash", "device-up", "exit-yaml", "member-absolute", "fifo",
        "member-up", "symlink", "symlink-out", "hardlink", "member-beside"])
def test_record_refuses_an_archive_that_says_where_to_write(tmp_path, run_on, extra, said):
    """Issue 58.6: every field of a returned archive that becomes a path or a line of the queue is checked,
    and tar members that are links, absolute, go up or lie outside the job's folder are refused: one line,
    nothing written (no staging folder, the queue as it was), however the archive was made."""
    files_at, results = tmp_path / "files", tmp_path / "repo" / "docs" / "results" / "gpu"
    returned(files_at, {**RUN_ON, **run_on}, *extra)
    (files_at / "throughput.log").write_text("log\n")
    queue = tmp_path / "queue.yaml"
    shutil.copyfile(pack.QUEUE, queue)
    results.mkdir(parents=True)
    before = files_under(tmp_path)
    with pytest.raises(SystemExit) as refused:
        pack.record(files_at, results, queue)
    message = str(refused.value.code)
    assert isinstance(refused.value.code, str) and "\n" not in message and said in message, message
    assert files_under(tmp_path) == before and queue.read_bytes() == pack.QUEUE.read_bytes()
    assert not Path("/tmp/seedr-58-6-absolute.txt").exists() and not list(Path("/").glob("elsewhere*"))


def test_record_files_a_well_formed_archive_and_refuses_it_twice(tmp_path):
    files_at, results, queue = tmp_path / "files", tmp_path / "results", tmp_path / "queue.yaml"
    returned(files_at, RUN_ON)
    shutil.copyfile(pack.QUEUE, queue)
    (target,) = pack.record(files_at, results, queue)
    assert target == results / "throughput" / "2026-11-28-NVIDIA-H200"
    assert (target / "results" / "results.json").read_text() == "{}"
    (job,) = [job for job in pack.load_queue(queue) if job["name"] == "throughput"]
    assert job["runs"][0]["run_on"] == "NVIDIA H200"
    recorded, written = queue.read_bytes(), files_under(results)
    with pytest.raises(SystemExit, match="already recorded"):
        pack.record(files_at, results, queue)
    assert queue.read_bytes() == recorded and files_under(results) == written


def test_a_second_lease_of_a_job_on_the_same_day_is_recorded_beside_the_first(tmp_path):
    """A job whose seeds take several leases may run twice a day on one device: the second lease's folder
    has its time in the name; the same archive recorded twice is still refused."""
    results, queue = tmp_path / "results", tmp_path / "queue.yaml"
    shutil.copyfile(pack.QUEUE, queue)
    returned(tmp_path / "first", RUN_ON)
    returned(tmp_path / "second", {**RUN_ON, "date": "2026-11-28T22:10:00+00:00"})
    (first,) = pack.record(tmp_path / "first", results, queue)
    (second,) = pack.record(tmp_path / "second", results, queue)
    assert first.name == "2026-11-28-NVIDIA-H200" and second.name == "2026-11-28-2210-NVIDIA-H200"
    with pytest.raises(SystemExit, match="already recorded"):
        pack.record(tmp_path / "second", results, queue)


def test_combine_accepts_one_lease_that_ran_every_seed(tmp_path, scifact_slice, models):
    """A job whose plan packed all its seeds into one lease: ``combine`` judges that lease alone as the
    whole run (its claims and seed spread), and refuses while a seed of the job has not run."""
    from seedr.experiments.runner import experiment_scores, run_experiment
    from tests.test_combine import EXPERIMENT, _load

    path = tmp_path / "packed.yaml"
    path.write_text(EXPERIMENT)
    variables = [f"data={scifact_slice}", f"models={models}"]
    experiment = _load(path, scifact_slice, models, "[1, 2]")
    results = run_experiment(experiment, tmp_path / "work").results
    lease = tmp_path / "gpu" / "packed" / "2026-11-28-NVIDIA-H200"
    lease.mkdir(parents=True)
    (lease / "results.json").write_text(json.dumps(results))
    (lease / "per_query.json").write_text(json.dumps(experiment_scores(experiment, tmp_path / "work")))
    (lease / "lease.json").write_text(json.dumps({"experiment": str(path), "scale": "cpu", "seeds": [1, 2],
                                                  "settings": ["seeds=[1, 2]", *variables], "tiny": False}))
    job = (f"  - {{name: packed, goal: g, experiment: {path}, combine: packed, seeds: [1, 2, SEEDS], done: false,\n"
           f"     runs: [{{date: 2026-11-28, run_on: NVIDIA H200, exit: 0, folder: {lease}}}]}}\n")
    (tmp_path / "queue.yaml").write_text("jobs:\n" + job.replace(", SEEDS", ""))
    target = pack.combine("packed", tmp_path / "gpu", tmp_path / "queue.yaml")
    combined = json.loads((target / "results.json").read_text())
    assert combined["claims"] == results["claims"] and combined["seed_spread"] == results["seed_spread"]
    assert "`packed` seeds 1, 2: NVIDIA H200" in (target / "report.md").read_text()
    (tmp_path / "queue.yaml").write_text("jobs:\n" + job.replace("SEEDS", "3"))
    with pytest.raises(SystemExit, match="seed 3 to go"):
        pack.combine("packed", tmp_path / "gpu", tmp_path / "queue.yaml")
