#!/usr/bin/env bash
# The GPU pack's one command (docs/gpu.md): run the next unfinished job of gpu/queue.yaml, or JOB.
#   bash gpu/run.sh [JOB] [--tiny] [--out DIR]
# On the device: `python gpu/pack.py prepare` ran here first and the call carries .gpu/ (data, wheels);
# $OUT is the folder that comes back. Here: --tiny runs the job at a toy size on the CPU (the test does).
set -uo pipefail
started=$(date +%s)
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
if [ -f .gpu/site.tar.xz ]; then  # the wheels the device image lacks
    mkdir -p /tmp/gpu-site && tar xJf .gpu/site.tar.xz -C /tmp/gpu-site || exit 3
    export PYTHONPATH="/tmp/gpu-site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # seedr from this tree, installed or not
for archive in .gpu/derived-*.tar.xz; do  # data built here (e.g. NQ-open's pool), beside the carried files
    [ -f "$archive" ] && { tar xJf "$archive" -C .gpu/data || exit 3; }
done
if [ ! -e ../shared/data ] && [ -d .gpu/data ]; then  # the data that travelled, where seedr looks for it
    mkdir -p ../shared && ln -sfn "$PWD/.gpu/data" ../shared/data
fi
python=python3
[ -x .venv/bin/python ] && python=.venv/bin/python
command -v nvidia-smi > /dev/null && nvidia-smi -L
"$python" -c "import seedr.cli, torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" || exit 4
exec "$python" gpu/pack.py run --started "$started" "$@"
