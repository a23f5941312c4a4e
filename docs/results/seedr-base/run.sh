#!/usr/bin/env bash
# The seedr base (issue 21.3): a small BERT pre-trained with MLM on the shared Wikipedia, committed as
# models/seedr-base with its card and this report. Run from the repository root after `make install`:
#     bash docs/results/seedr-base/run.sh            # about two hours on the 2-core CPU, resumable
# Each step is the command that made the committed model (the recorded run used /work/base for runs/seedr-base;
# a killed pre-training resumes with the same command plus --resume). Shard 07 is never trained on: it
# is the held-out text of the masked-LM curve.
set -euo pipefail
D=../shared/data
R=runs/seedr-base
HERE=docs/results/seedr-base
MODEL=models/seedr-base
export PATH="$PWD/.venv/bin:$PATH"
mkdir -p $R

# 1. An 8,000-token WordPiece vocabulary on shards 00-06 (tokenizers' trainer is not deterministic,
#    huggingface/tokenizers#1794: the committed model carries the vocabulary it was trained with).
seedr prepare $(for i in 0 1 2 3 4 5 6; do echo --corpus $D/wiki/enwiki-2015-0$i.jsonl.xz; done) \
    --tokenizer-vocab 8000 --out $R/prep

# 2. Phase 1: 3,000 steps of 128 × 128 tokens (seedr/recipes/pretrain/seedr_base.yaml), every 300th step kept.
seedr pretrain --config seedr_base --tokenizer $R/prep/tokenizer \
    --corpus "$D/wiki/enwiki-2015-0[0-6].jsonl.xz" --out $R/phase1

# 3. Phase 2: 300 steps of 32 × 512 tokens from phase 1's run (its encoder and MLM head), saving the head.
seedr pretrain --config seedr_base_512 --model $R/phase1 \
    --corpus "$D/wiki/enwiki-2015-0[0-6].jsonl.xz" --out $R/phase2

# 4. Held-out masked-LM loss and accuracy against the unigram plateau: every kept checkpoint of phase 1
#    at 128 tokens, then the final model at 512 (512 articles of shard 07, the same masks for every checkpoint).
seedr diagnose $R/phase1 --corpus $D/wiki/enwiki-2015-07.jsonl.xz --max-documents 512 --mlm-texts 512 \
    --mlm-curve --lengths 128,512 --pairs 128 --out $R/phase1
seedr diagnose $R/phase2 --corpus $D/wiki/enwiki-2015-07.jsonl.xz --max-documents 512 --mlm-texts 256 \
    --lengths 128,512 --pairs 64 --out $R/phase2
# Which phase is the base, on the same held-out texts (256 of them) at 128 and 512 tokens:
python -c "
import json
from seedr.diagnostics.loading import corpus_texts, masked_lm_curve
texts = corpus_texts(['$D/wiki/enwiki-2015-07.jsonl.xz'], max_documents=512)[:256]
json.dump({f'{run}@{length}': masked_lm_curve('$R/' + run, texts, max_length=length, every_checkpoint=False)[-1]
           for run in ('phase1', 'phase2') for length in (128, 512)}, open('$HERE/choice.json', 'w'), indent=1)"

# 5. The model folder: phase 2's product, its card rewritten with the held-out figures, and the report.
rm -rf $MODEL && cp -r $R/phase2/encoder $MODEL
python -c "from seedr.training.run_card import write_run_card; write_run_card('$MODEL', '$R/phase2')"
seedr report $R/phase1 $R/phase2 --out $MODEL/report --title "seedr base: MLM pre-training of BERT-mini on Wikipedia"
for phase in phase1 phase2; do
    cp $R/$phase/diagnostics.json $HERE/$phase-diagnostics.json
    cp $R/$phase/diagnostics.png $HERE/$phase-diagnostics.png
    cp $R/$phase/metrics.jsonl $HERE/$phase-metrics.jsonl
done
