#!/usr/bin/env bash
# The NQ-open training data and test pool over the whole shared Wikipedia (issue 21.2; seedr.data.open_qa),
# as built on the 2-core CPU. Run from the repository root after `make install`. The experiment
# seedr/experiments/from_base.yaml builds the same folder as its set-up step open_qa.
#     bash docs/results/nq-open-pool/run.sh
# Large outputs go to runs/nq-open-pool; open_qa.json (counts and choices) and the BM25 run's record are
# copied beside this script.
set -euo pipefail
D=../shared/data
R=runs/nq-open-pool
HERE=docs/results/nq-open-pool
export PATH="$PWD/.venv/bin:$PATH"
mkdir -p $R
seedr prepare --corpus $D/wiki --passage-words 100 --out $R/passages
seedr search --bm25 --corpus $R/passages --questions $D/nq-open/NQ-open.dev.jsonl --k 100 --out $R/bm25.trec
seedr prepare --open-qa $D/nq-open/NQ-open.dev.jsonl --corpus $R/passages --split seedr/experiments/splits/nq-open-dev.json \
    --bm25-run $R/bm25.trec --out $R/open-qa
cp $R/open-qa/open_qa.json $R/bm25.trec.json "$HERE/"
