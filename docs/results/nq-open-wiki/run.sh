#!/usr/bin/env bash
# The README's open-domain QA example, as measured: 100 articles of the shared Wikipedia cut into
# 100-word passages, NQ-open dev questions, BM25 and MiniLM (as shipped) dense retrieval, DPR answer
# coverage with a paired randomisation test. Run from the repository root after `make install`:
#     bash docs/results/nq-open-wiki/run.sh
# Large outputs (passages, embeddings, index, runs) go to runs/nq-open-wiki; the small ones
# (timings, tables, counts) are copied beside this script.
set -euo pipefail
D=../shared/data
R=runs/nq-open-wiki
HERE=docs/results/nq-open-wiki
export PATH="$PWD/.venv/bin:$PATH"
rm -rf "$R" && mkdir -p "$R"
: > "$HERE/times.txt"
load() { echo "$1: load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores" >> "$HERE/times.txt"; }
load start
step() {  # step NAME COMMAND...: run, log its output, record its wall-clock time and peak memory
    local name=$1; shift
    echo "\$ $*" >> "$HERE/log.txt"
    /usr/bin/time -f "$name %e s wall, %M KB peak" -a -o "$HERE/times.txt" "$@" 2>&1 \
        | tr '\r' '\n' | sed '/^\s*$/d' | awk '  # of each progress bar, keep its last state only
            { bar = ($0 ~ /\[[0-9][0-9]:[0-9][0-9].*\]$/); key = bar ? substr($0, 1, index($0, ":")) : ""
              if (held != "" && key != heldkey) { print held; held = "" }
              if (bar) { held = $0; heldkey = key } else print }
            END { if (held != "") print held }' >> "$HERE/log.txt"
}
: > "$HERE/log.txt"
step prepare seedr prepare --corpus "$D/wiki" --max-articles 100 --passage-words 100 --out $R/passages
step search-bm25 seedr search --bm25 --corpus $R/passages --questions "$D/nq-open" --k 100 --out $R/bm25.trec
step encode seedr encode --model minilm --corpus $R/passages --out $R/emb
step index seedr index --embeddings $R/emb --factory Flat --out $R/index
step search-dense seedr search --index $R/index --questions "$D/nq-open" --k 100 --out $R/minilm.trec
step evaluate seedr evaluate $R/bm25.trec $R/minilm.trec --qa-answers "$D/nq-open" --corpus $R/passages \
    --baseline $R/bm25.trec --json $HERE/coverage.json --markdown $HERE/coverage.md
load end
cp $R/passages/prepared.json $R/emb/manifest.json $R/bm25.trec.json "$HERE/"
