#!/usr/bin/env bash
# ict_vs_mlm at cpu scale on the lent GPU (session 20): the cpu-scale protocol reads the first 6,000
# documents and the first 3,000 articles of Wikipedia, all in shard 00, so shard 00 and SQuAD v1.1 dev
# travel (.gpu/data, reached as ../shared/data) with the wheels seedr needs that the image lacks.
set -uo pipefail
export PYTHONUNBUFFERED=1
tar xJf .gpu/site.tar.xz -C /tmp || exit 3
export PYTHONPATH=/tmp/gsite:$PWD
mkdir -p ../shared && ln -sfn "$PWD/.gpu/data" ../shared/data
nvidia-smi -L; nproc
python3 -c "import seedr.cli, faiss, blingfire, pytrec_eval, bm25s, Stemmer, ahocorasick, ir_measures, torch; print(blingfire.text_to_sentences('A b c. D e f.'), torch.__version__, torch.cuda.is_available())" || exit 4
start=$SECONDS
timeout "${LIMIT:-470}" python3 -m seedr experiment ict_vs_mlm --out /tmp/w/runs > "$OUT/experiment.log" 2>&1
echo "experiment exit $? after $((SECONDS - start)) s"
grep -a -E '^\[[0-9]+/' "$OUT/experiment.log" | tail -40
tail -c 3000 "$OUT/experiment.log"
# the report whole, and every small file of the steps (logs, configs, metrics); no weights, vectors or
# 100-deep runs (the return takes files of at most 16 MiB)
(cd /tmp/w && { find runs/reports -type f; find runs/steps -type f -size -1500k ! -name '*.safetensors' \
    ! -name '*.bin' ! -name '*.pt' ! -name '*.npy'; } | tar czf "$OUT/ict_vs_mlm.tgz" -T -)
ls -la "$OUT"
