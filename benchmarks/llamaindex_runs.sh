#!/bin/bash
# LoCoMo through LlamaIndex's VectorMemoryBlock (a local Qdrant folder, one user message per
# turn written by the block's own aput): the block's native order (its top-P, dense cosine) vs
# the default policy and the paper's rule, on that same pool, with only the signals the
# LlamaIndex adapter hands over (texts, the block's session_id, the message role). Needs
# pip install -e ".[llamaindex,eval]" -r .ci/requirements-llamaindex.txt
#
#   bash benchmarks/llamaindex_runs.sh [DATA_DIR]      # default ../shared/data
#
# Writes benchmarks/results/eval/frameworks/llamaindex-locomo/{summary.json,summary.md,config.json}.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data}
OUT=benchmarks/results/eval/frameworks/llamaindex-locomo
export MEM0_TELEMETRY=False HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
nice -n 10 mempursuit eval --framework llamaindex --dataset locomo --data "$DATA/locomo/locomo10.json" \
  --k 5 10 20 50 --pool 200 --policies native centered-fusion mempursuit \
  --embed-threads 1 --threads 1 --out "$OUT" --quiet --no-plots
rm -f "$OUT/questions.jsonl"
