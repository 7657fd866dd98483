#!/bin/bash
# LoCoMo through LangGraph's own store (docs/adapters/langgraph.md): the default read policy and
# the paper's rule against the store's native order, read through mempursuit_langgraph's pool
# (the store's own search at P=200, stored vectors read back from sqlite-vec, the adapter's
# signals). Needs: pip install -e ".[all]" -r .ci/requirements-langgraph.txt
#
#   bash benchmarks/langgraph_runs.sh [DATA_DIR] [STORE]   # defaults ../shared/data, sqlite
#
# Writes benchmarks/results/eval/frameworks/langgraph-locomo/{summary.json,summary.md,config.json}.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data}
STORE=${2:-sqlite}
OUT=benchmarks/results/eval/frameworks/langgraph-locomo
export MEM0_TELEMETRY=False HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
mempursuit eval --framework langgraph --backend-opt store="$STORE" --dataset locomo \
  --data "$DATA/locomo/locomo10.json" --k 5 10 20 50 --pool 200 \
  --policies native centered-fusion mempursuit \
  --embed-threads 1 --threads 1 --out "$OUT" --quiet --no-plots
rm -f "$OUT"/questions.jsonl
