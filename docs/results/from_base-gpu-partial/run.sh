#!/usr/bin/env bash
# Re-scores the SciFact runs that came back from the interrupted gpu-scale run of from_base (see README.md)
# and writes evaluation.txt. Run from the repository root, beside ../shared.
set -euo pipefail
here=docs/results/from_base-gpu-partial
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for run in "$here"/runs/*.trec.gz; do gunzip -c "$run" > "$tmp/$(basename "$run" .gz)"; done
cd "$tmp"
seedr evaluate mlm-s1.trec mlm-s2.trec mlm-s3.trec seed-s1.trec seed-s2.trec seed-s3.trec base-s1.trec bm25.trec \
  --qrels "$OLDPWD/../shared/data/scifact/qrels/test.tsv" --metrics nDCG@10,R@100 --baseline mlm-s1.trec \
  2>/dev/null | tee "$OLDPWD/$here/evaluation.txt"
