#!/bin/bash
# The databases' own diversity as a named baseline (docs/results.md, "The databases' own
# diversity"): Mem0 on local Qdrant over LoCoMo, read through the adapter, with Qdrant's own MMR
# query (`qdrant-mmr`, Qdrant Edge: pip install qdrant-edge-py) next to native, mmr and the
# default on the same pools.
#
#   bash benchmarks/database_diversity_runs.sh [DATA_DIR]   # default ../shared/data
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data}
OUT=benchmarks/results/eval/database-diversity/mem0-locomo
export MEM0_TELEMETRY=False HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
start=$(date +%s)
mempursuit eval --framework mem0 --dataset locomo --data "$DATA/locomo/locomo10.json" \
  --k 5 10 20 50 --pool 200 --policies native mmr qdrant-mmr centered-fusion \
  --embed-threads 1 --threads 1 --out "$OUT" --quiet --no-plots
rm -f "$OUT/questions.jsonl"
echo "mem0 + qdrant-mmr: $(( $(date +%s) - start )) s wall"
