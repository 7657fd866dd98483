#!/bin/bash
# The LoCoMo runs through the frameworks' own stores (docs/results.md, "Through the frameworks'
# own stores"), read through each shipped adapter's read path: the policies get exactly the
# signals the adapter hands over (no --dataset-signals). Needs the frameworks:
# pip install -e ".[all]" (LightMem: docs/adapters/lightmem.md). From a cold embedding cache each
# run embeds LoCoMo in the framework's own text format (minutes).
#
#   bash benchmarks/framework_runs.sh [DATA_DIR] [FRAMEWORK...]   # default ../shared/data, all four
#   bash benchmarks/framework_runs.sh ../shared/data graphiti      # Graphiti on Kuzu (pip install -e ".[graphiti]")
#   bash benchmarks/framework_runs.sh ../shared/data agno          # Agno's LanceDb (pip install -e ".[agno]")
#   bash benchmarks/framework_runs.sh ../shared/data semantic-kernel   # its InMemoryCollection ([semantic-kernel])
#   bash benchmarks/framework_runs.sh ../shared/data autogen       # its ChromaDBVectorMemory ([autogen])
#   bash benchmarks/framework_runs.sh ../shared/data crewai        # its Memory over LanceDBStorage ([crewai])
#
# Writes benchmarks/results/eval/frameworks/<framework>-locomo/{summary.json,summary.md,config.json}
# and prints each run's wall time. Another framework's row drops in the same folder
# (<name>-locomo); benchmarks/readme_tables.py renders every one it finds.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data}
shift || true
FRAMEWORKS=${*:-mem0 lightmem simplemem memorybank}
OUT=benchmarks/results/eval/frameworks
export MEM0_TELEMETRY=False HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
for fw in $FRAMEWORKS; do
  start=$(date +%s)
  mempursuit eval --framework "$fw" --dataset locomo --data "$DATA/locomo/locomo10.json" \
    --k 5 10 20 50 --pool 200 --policies native mempursuit centered-fusion \
    --embed-threads 1 --threads 1 --out "$OUT/$fw-locomo" --quiet --no-plots
  rm -f "$OUT/$fw-locomo/questions.jsonl"
  echo "$fw: $(( $(date +%s) - start )) s wall"
done
