#!/usr/bin/env bash
# The GPU pack's one command (docs/gpu.md): run the next unfinished job of gpu/queue.yaml, or JOB.
#   bash gpu/run.sh [JOB] [--tiny] [--out DIR]
# On the device: `python gpu/pack.py prepare` ran here first and the call carries .gpu/ (data, the site of
# what the device image lacks, the import list); $OUT is the folder that comes back. Here: --tiny runs the
# job at a toy size on the CPU (the tests do). SEEDR_PYTHON names the interpreter (default: the device's
# python3, or this checkout's .venv here); SEEDR_GPU_CARRIED the carried folder (default .gpu).
set -uo pipefail
started=$(date +%s)
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
carried=${SEEDR_GPU_CARRIED:-.gpu}
export SEEDR_GPU_CARRIED=$carried
if [ -f "$carried/site.tar.xz" ]; then  # the distributions the device image lacks
    site=$(mktemp -d "${TMPDIR:-/tmp}/gpu-site.XXXXXX") || exit 3
    trap 'rm -rf "$site"' EXIT  # unpacked for this run alone: 70 MB a run would otherwise stay behind
    tar xJf "$carried/site.tar.xz" -C "$site" || exit 3
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # seedr from this tree, installed or not
for archive in "$carried"/derived-*.tar.xz; do  # data built here (e.g. NQ-open's pool), beside the carried files
    [ -f "$archive" ] && { tar xJf "$archive" -C "$carried/data" || exit 3; }
done
if [ ! -e ../shared/data ] && [ -d "$carried/data" ]; then  # the data that travelled, where seedr looks for it
    mkdir -p ../shared && ln -sfn "$PWD/$carried/data" ../shared/data
fi
python=${SEEDR_PYTHON:-python3}
[ -z "${SEEDR_PYTHON:-}" ] && [ -x .venv/bin/python ] && python=.venv/bin/python
command -v nvidia-smi > /dev/null && nvidia-smi -L
# every module the job's code reaches imports, and its data is there: one line and exit 4 in seconds if not
"$python" gpu/pack.py check "$@" || exit 4
# the job as a child rather than exec'd, so that the site goes when it ends; a stop sent to run.sh reaches it
"$python" gpu/pack.py run --started "$started" "$@" &
job=$!
trap 'kill -TERM "$job" 2> /dev/null' TERM INT HUP
wait "$job"
status=$?
while kill -0 "$job" 2> /dev/null; do wait "$job"; status=$?; done  # a signal ended the wait, not the job
exit "$status"
