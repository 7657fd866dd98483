#!/bin/bash
# LoCoMo through Graphiti (docs/adapters/graphiti.md): Graphiti on embedded Kuzu, one fact edge
# per turn between the speakers' entities, read through MemPursuitGraphiti.edge_pool (BM25 +
# cosine, P = 200), with the adapter's own signals. The first run is the row of docs/results.md
# (native = Graphiti's default RRF); the others are the named baselines: the pool ordered by
# Graphiti's own mmr, node_distance and episode_mentions rerankers (the run's `native` row).
# Needs pip install -e ".[graphiti]".
#
#   bash benchmarks/graphiti_runs.sh [DATA_DIR] [NATIVE...]   # default ../shared/data, all four
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data}
shift || true
NATIVES=${*:-rrf mmr node_distance episode_mentions}
OUT=benchmarks/results/eval/frameworks
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
export GRAPHITI_TELEMETRY_ENABLED=false
for native in $NATIVES; do
  name=graphiti-locomo
  [ "$native" = rrf ] || name=graphiti-$native  # not a <framework>-locomo row of the tables
  start=$(date +%s)
  mempursuit eval --framework graphiti --backend-opt native="$native" --dataset locomo \
    --data "$DATA/locomo/locomo10.json" --k 5 10 20 50 --pool 200 \
    --policies native mempursuit centered-fusion --embed-threads 1 --threads 1 \
    --out "$OUT/$name" --quiet --no-plots
  rm -f "$OUT/$name/questions.jsonl"
  echo "graphiti native=$native: $(( $(date +%s) - start )) s wall"
done
