#!/bin/bash
# Round 3's runs through the four frameworks' own stores on LoCoMo (docs/results.md, "Through the
# frameworks' own stores"): today's default, the previous one (speaker=0, named=0, gather=0.3) and the paper's rule
# against each framework's native order. Needs the frameworks: pip install -e ".[all]".
# From a cold embedding cache each run embeds LoCoMo in the framework's own text format (minutes).
#
#   bash benchmarks/round3_framework_runs.sh [DATA_DIR]      # default ../shared/data
#
# Writes benchmarks/results/eval/round3/<framework>-locomo/{summary.json,summary.md,config.json}.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data}
OUT=benchmarks/results/eval/round3
export MEM0_TELEMETRY=False HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
for fw in mem0 lightmem simplemem memorybank; do
  mempursuit eval --framework $fw --dataset locomo --data "$DATA/locomo/locomo10.json" \
    --k 5 10 20 50 --pool 200 --policies native mempursuit centered-fusion \
    centered-fusion:speaker=0,named=0,gather=0.3 \
    --embed-threads 1 --threads 1 --out "$OUT/$fw-locomo" --quiet --no-plots
done
rm -f "$OUT"/*-locomo/questions.jsonl
