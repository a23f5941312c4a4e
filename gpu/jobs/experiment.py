"""GPU pack, experiment jobs: seeds of a shipped experiment at its ``gpu`` scale, one lease at a time.

    python gpu/jobs/experiment.py NAME [--seeds 1] --out OUT [--budget SECONDS] [--set KEY=VALUE ...] [--tiny]

runs ``seedr experiment NAME --scale gpu --set seeds=[1] ...`` in a work folder of its own (models,
embeddings and runs stay there: they do not come back), then writes into ``OUT`` what the recording
session needs to judge the experiment once every seed has run (``python gpu/pack.py combine``:
``seedr.experiments.record.combine``): the run's ``results.json`` and ``report.md``, its plots, and
``per_query.json``, every system's per-query scores on every task. While it runs, ``units.json`` says what
has finished (each step's record, each retrieval's run, gzipped beside it), so that a lease cut short at
``--budget`` still returns every unit it finished. A lease has minutes, so the queue gives
each seed (or pair of seeds) a job of its own.

``--tiny`` runs the same code on the CPU in a minute or two, at the experiment's ``cpu`` scale cut to a
few steps (``TINY``); an experiment that reads the NQ-open data builds a toy open-QA folder for it from a
few hundred passages of Wikipedia shard 00 (``tiny_open_qa``). Its numbers mean nothing.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SEEDR_SHARED_DATA", ROOT / ".." / "shared" / "data"))

#: Each experiment cut to a toy size for ``--tiny`` (its variables), on top of its cpu scale.
TINY = {
    "seed_vs_mlm": ["steps=2", "batch_size=4", "max_documents=20", "wiki_shards='00'", "warmup_steps=0",
                    "finetune_epochs=1", "max_length=64", "passage_length=64"],
    "objectives_from_base": ["steps=2", "batch_size=4", "max_documents=20", "wiki_shards='00'", "warmup_steps=0",
                             "max_length=64"],
    "ict_vs_mlm": ["steps=2", "batch_size=4", "max_documents=20", "wiki_shards='00'", "warmup_steps=0",
                   "max_length=64", "pair_articles=40"],
    "pretraining_objectives": ["flops_budget=9.0e10", "half_flops_budget=4.5e10", "batch_size=4",
                               "max_documents=20", "wiki_shards='00'", "max_length=64", "pair_articles=20",
                               "finetune_steps=2", "reqa_articles=2"],
    "diagnostics_from_base": ["steps=2", "batch_size=4", "max_documents=20", "wiki_shards='00'", "warmup_steps=0",
                              "max_length=64", "texts=40", "reliance_texts=4", "lengths=[32, 64]", "longest=64"],
    # 79 units (each adapt, TSDAE and encoding loads MiniLM): minutes, not one
    "label_free": ["adapt_steps=2", "batch_size=4", "adapt_length=32", "max_length=32", "dev_every=1",
                   "patience=0", "validation=24", "adapt_documents=50", "pretrain_steps=2",
                   "pretraining={model.size: null, data.max_seq_length: 32, train.max_steps: 2, train.batch_size: 4, "
                   "train.global_batch_size: 4, train.save_every: 100000, train.log_every: 1}",
                   "wiki_documents=60", "wiki_queries=20", "foldoc_entries=60", "foldoc_queries=20"],
}
#: How often the watch over a running experiment writes what it has finished (``units.json``).
WATCH_SECONDS = 20
#: What the job keeps of its ``--budget`` after the experiment: copying its report and per-query scores.
FINISHING_SECONDS = 45
#: The experiments that read NQ-open's training data and test pool (``--set open_qa=FOLDER``).
READS_OPEN_QA = {"seed_vs_mlm", "label_free"}
#: The experiments whose tiny run reads a toy ``--set data=FOLDER`` (``tiny_data``): SciFact's task cut.
READS_SCIFACT = {"label_free"}


def seedr(*arguments: str) -> None:
    """A seedr command in a fresh process (its output goes to the job's log)."""
    subprocess.run([sys.executable, "-m", "seedr", *arguments], cwd=ROOT, check=True)


def tiny_open_qa(folder: Path) -> Path:
    """A toy NQ-open folder (``seedr prepare --open-qa``) over 300 passages of shard 00, built in seconds."""
    passages, run = folder / "passages", folder / "bm25.trec"
    seedr("prepare", "--corpus", str(SHARED / "wiki" / "enwiki-2015-00.jsonl.xz"), "--max-articles", "40",
          "--passage-words", "100", "--out", str(passages))
    questions = SHARED / "nq-open" / "NQ-open.dev.jsonl"
    seedr("search", "--bm25", "--corpus", str(passages), "--questions", str(questions), "--k", "100",
          "--out", str(run))
    seedr("prepare", "--open-qa", str(questions), "--corpus", str(passages), "--split",
          str(ROOT / "seedr" / "experiments" / "splits" / "nq-open-dev.json"), "--bm25-run", str(run),
          "--pool-random", "100", "--out", str(folder / "open-qa"))
    return folder / "open-qa"


def tiny_data(folder: Path, documents: int = 150) -> Path:
    """A toy copy of the shared data for a tiny run: SciFact's first ``documents`` abstracts with the test
    queries judged among them, and links to the other folders (read, never written)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("foldoc", "nq-open", "wiki", "squad"):
        if (SHARED / name).exists() and not (folder / name).exists():
            (folder / name).symlink_to((SHARED / name).resolve())
    source, target = SHARED / "scifact", folder / "scifact"
    (target / "qrels").mkdir(parents=True, exist_ok=True)
    lines = (source / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:documents]
    kept = {json.loads(line)["_id"] for line in lines}
    (target / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    shutil.copyfile(source / "queries.jsonl", target / "queries.jsonl")
    for split in ("train", "test"):
        rows = (source / "qrels" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
        judged = [row for row in rows[1:] if row.split("\t")[1] in kept]
        (target / "qrels" / f"{split}.tsv").write_text("\n".join([rows[0], *judged]) + "\n", encoding="utf-8")
    return folder


def finished_units(runs: Path, out: Path) -> dict:
    """What the experiment has finished so far: each step's record (``step.json``: a step folder holds it once
    finished) and each retrieval's run, copied gzipped into ``out/retrieval/`` (the models stay behind)."""
    steps = {folder.name: json.loads((folder / "step.json").read_text(encoding="utf-8"))
             for folder in sorted((runs / "steps").glob("*")) if (folder / "step.json").is_file()}
    retrievals = []
    for run in sorted((runs / "retrieval").glob("*/run.trec")):
        target = out / "retrieval" / run.parent.name / "run.trec.gz"
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(gzip.compress(run.read_bytes()))
        retrievals.append(run.parent.name)
    return {"steps": steps, "retrievals": retrievals}


def run_watched(command: list[str], runs: Path, out: Path, budget: float | None) -> bool:
    """Run the experiment, writing ``out/units.json`` (what has finished) every ``WATCH_SECONDS`` and at its
    end, so that a lease cut short returns every unit it finished; stop it (SIGTERM: seedr keeps what it
    finished) when ``budget`` seconds are spent. Whether it ran to its end."""
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=ROOT)
    while True:
        try:
            code = process.wait(timeout=WATCH_SECONDS)
        except subprocess.TimeoutExpired:
            code = None
        units = {**finished_units(runs, out), "complete": code == 0, "exit": code}
        partial = out / "units.json.part"
        partial.write_text(json.dumps(units, indent=1))
        partial.replace(out / "units.json")
        if code is not None:
            return code == 0
        if budget is not None and time.monotonic() - started > budget:
            process.terminate()
            process.wait()
            budget = None  # the next pass writes the units as they stand, with its exit code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="a shipped experiment with a gpu scale")
    parser.add_argument("--seeds", help="the training seeds of this lease, e.g. 1 or 2,3 (for an experiment "
                                         "with a seeds variable)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--set", dest="settings", action="append", default=[], help="a variable, KEY=VALUE")
    parser.add_argument("--tiny", action="store_true", help="a toy size on the CPU")
    parser.add_argument("--budget", type=float,
                        help="seconds the job may take: the experiment is stopped FINISHING_SECONDS before, "
                             "what it finished listed in units.json")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"seedr-{args.name}-"))
    seeds = [int(seed) for seed in args.seeds.split(",")] if args.seeds else None
    settings = [*([f"seeds={seeds}"] if seeds else []), *args.settings]
    if args.tiny:
        settings += TINY[args.name]
        if args.name in READS_OPEN_QA:
            settings.append(f"open_qa={tiny_open_qa(work / 'data')}")
        if args.name in READS_SCIFACT:
            settings.append(f"data={tiny_data(work / 'shared')}")
    scale = "cpu" if args.tiny else "gpu"
    command = [sys.executable, "-m", "seedr", "experiment", args.name, "--scale", scale, "--out",
               str(work / "runs"), *(item for setting in settings for item in ("--set", setting))]
    budget = None if args.budget is None else args.budget - FINISHING_SECONDS
    if not run_watched(command, work / "runs", args.out, budget):
        shutil.rmtree(work, ignore_errors=True)
        raise SystemExit(f"{args.name}: stopped before its end; {args.out / 'units.json'} says what finished")

    from seedr.experiments.runner import experiment_scores
    from seedr.experiments.spec import load_experiment

    experiment = load_experiment(args.name, scale, settings)
    report = work / "runs" / "reports" / args.name
    for name in ("results.json", "report.md"):
        shutil.copyfile(report / name, args.out / name)
    if (report / "plots").is_dir():
        shutil.copytree(report / "plots", args.out / "plots", dirs_exist_ok=True)
    (args.out / "per_query.json").write_text(json.dumps(experiment_scores(experiment, work / "runs")))
    (args.out / "lease.json").write_text(json.dumps({"experiment": args.name, "scale": scale, "seeds": seeds,
                                                     "settings": settings, "tiny": args.tiny}, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    print(f"{args.name}{f' seeds {seeds}' if seeds else ''} at the {scale} scale: results in {args.out}")


if __name__ == "__main__":
    main()
