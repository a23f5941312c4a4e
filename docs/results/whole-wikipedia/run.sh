#!/usr/bin/env bash
# Issue 24.1: open-domain QA over the whole shared Wikipedia, densely. The eight shards cut into DPR's
# 100-word passages (all 658,860), BM25 and MiniLM (as shipped, one exact Flat index) for NQ-open's 3,610
# dev questions, their reciprocal rank fusion (k 60, equal weights: nothing to choose, so no development
# split is spent), answer coverage Top-1/5/20/100 with paired randomisation tests against BM25 (DPR's
# Table 2 setting at this corpus size), then bench/bench_index_scale.py over the same vectors: Flat, HNSW
# and IVF indexes' build time, peak memory, size on disk, queries/s, R@100 against Flat, and
# memory-mapped search. Run from the repository root after `make install`:
#     nohup bash docs/results/whole-wikipedia/run.sh > runs/whole-wikipedia.log 2>&1 &
# Resumable across interruptions and sessions: run it again and finished steps are skipped (each leaves
# its output, written atomically), while the encoding goes on from its last complete shard of 10,000
# passages (`seedr encode` checks the shards against the corpus and the encoder). The encoding is the
# long part: 67 minutes in bf16 on the 2-core CPU with native bf16 (times.txt), hours in float32 on an
# AVX2 one (bench/bench_int8.py measured 25.8 passages/s there). Large outputs (passages, vectors, indexes, runs) go to $RUNS (runs/whole-wikipedia) and are never
# committed; the tables, timings and counts are written beside this script ($RESULTS elsewhere).
set -euo pipefail
D=${SHARED_DATA:-../shared/data}
R=${RUNS:-runs/whole-wikipedia}
HERE=${RESULTS:-docs/results/whole-wikipedia}
mkdir -p "$HERE"
QUESTIONS=$D/nq-open/NQ-open.dev.jsonl
export PATH="$PWD/.venv/bin:$PATH"
mkdir -p "$R"
# step NAME DONE COMMAND...: unless the file DONE exists, run COMMAND and append its wall time and peak
# memory to times.txt (a resumed step appears once per run that worked on it)
step() {
    local name=$1 done=$2; shift 2
    if [ -e "$done" ]; then echo "== $name: done ($done)"; return; fi
    echo "== $name: $*"
    echo "$name: load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores at $(date -u +%FT%TZ)" >> "$HERE/times.txt"
    /usr/bin/time -f "$name %e s wall, %M KB peak" -a -o "$HERE/times.txt" "$@"
}
step prepare "$R/passages/prepared.json" seedr prepare --corpus "$D/wiki" --passage-words 100 --out "$R/passages"
step bm25 "$R/bm25.trec" seedr search --bm25 --corpus "$R/passages" --questions "$QUESTIONS" --k 100 --out "$R/bm25.trec"
step encode "$R/emb/manifest.json" seedr encode --model minilm --corpus "$R/passages" --shard-size 10000 --out "$R/emb"
step index "$R/flat/index.json" seedr index --embeddings "$R/emb" --factory Flat --out "$R/flat"
step search "$R/minilm.trec" seedr search --index "$R/flat" --questions "$QUESTIONS" --k 100 --tag minilm --out "$R/minilm.trec"
step fuse "$R/bm25+minilm.trec" seedr fuse "$R/bm25.trec" "$R/minilm.trec" --out "$R/bm25+minilm.trec"
step evaluate "$HERE/coverage.json" seedr evaluate "$R/bm25.trec" "$R/minilm.trec" "$R/bm25+minilm.trec" \
    --qa-answers "$QUESTIONS" --corpus "$R/passages" --baseline "$R/bm25.trec" \
    --json "$HERE/coverage.json" --markdown "$HERE/coverage.md"
step bench "$HERE/indexes/results.json" env SEEDR_INDEX_EMBEDDINGS="$R/emb" python bench/run.py --only bench_index_scale \
    --out "$HERE/indexes"
cp "$R/passages/prepared.json" "$R/emb/manifest.json" "$HERE/"
echo "done: $HERE"
