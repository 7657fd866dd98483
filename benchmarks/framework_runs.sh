#!/bin/bash
# The LoCoMo runs through the frameworks' own stores (docs/results.md, "Through the frameworks'
# own stores"), read through each shipped adapter's read path: the policies get exactly the
# signals the adapter hands over (no --dataset-signals). Each run needs its framework's extra:
# pip install -e ".[all]" has most (LightMem: docs/adapters/lightmem.md; LangGraph and LlamaIndex
# also -r .ci/requirements-langgraph.txt / -llamaindex.txt; Semantic Kernel, AutoGen and CrewAI are not in
# [all]: docs/adapters/). From a cold embedding cache each run embeds LoCoMo in the framework's own
# text format (minutes).
#
#   bash benchmarks/framework_runs.sh [DATA_DIR] [RUN...]   # default ../shared/data; the first four
#
# RUN is one of
#   mem0 lightmem simplemem memorybank    the first four (the default)
#   langgraph llamaindex haystack graphiti agno semantic-kernel autogen crewai
#       -> benchmarks/results/eval/frameworks/<RUN>-locomo/{summary.json,summary.md,config.json}
#       (any other registered store works too: its <name>-locomo row drops in the same folder and
#       benchmarks/readme_tables.py renders every one it finds)
#   graphiti-mmr graphiti-node_distance graphiti-episode_mentions
#       the same Graphiti pool ordered by Graphiti's own reranker instead of its default RRF (the
#       run's `native` row; docs/results.md, "Graphiti's own rerankers as the native order")
#       -> frameworks/<RUN>/, not a <framework>-locomo row of the tables
#   round3-mem0 round3-lightmem round3-simplemem round3-memorybank
#       round 3's command, with the previous default (speaker=0, named=0, gather=0.3) beside
#       today's -> benchmarks/results/eval/round3/<framework>-locomo/. Round 3's harness handed
#       these stores the benchmark's session ids (today that is --dataset-signals, which the
#       command never had), so a rerun today measures the adapter's signals.
# LANGGRAPH_STORE=memory|sqlite|postgres picks LangGraph's store (default sqlite, the committed row).
# Prints each run's wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data}
shift || true
RUNS=${*:-mem0 lightmem simplemem memorybank}
export MEM0_TELEMETRY=False HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
export HAYSTACK_TELEMETRY_ENABLED=False GRAPHITI_TELEMETRY_ENABLED=false
for run in $RUNS; do
  fw=$run out=benchmarks/results/eval/frameworks/$run-locomo
  policies=(native mempursuit centered-fusion) options=()
  case $run in
    round3-*) fw=${run#round3-} out=benchmarks/results/eval/round3/${run#round3-}-locomo
              policies+=(centered-fusion:speaker=0,named=0,gather=0.3) ;;
    graphiti-*) fw=graphiti out=benchmarks/results/eval/frameworks/$run
                options=(--backend-opt native="${run#graphiti-}") ;;
  esac
  case $fw in  # the order these rows were run with (config.json's policies)
    haystack|llamaindex|langgraph) policies=(native centered-fusion mempursuit) ;;
  esac
  [ "$fw" = langgraph ] && options=(--backend-opt store="${LANGGRAPH_STORE:-sqlite}")
  start=$(date +%s)
  mempursuit eval --framework "$fw" "${options[@]}" --dataset locomo \
    --data "$DATA/locomo/locomo10.json" --k 5 10 20 50 --pool 200 --policies "${policies[@]}" \
    --embed-threads 1 --threads 1 --out "$out" --quiet --no-plots
  rm -f "$out/questions.jsonl"
  echo "$run: $(( $(date +%s) - start )) s wall"
done
