#!/bin/bash
# LoCoMo through Haystack (InMemoryDocumentStore, one Document per turn with its stored
# embedding and meta.session_id = the conversation; InMemoryEmbeddingRetriever's top-P, dense
# cosine, filtered to the conversation): the retriever's native order vs the default policy and
# the paper's rule, on that same pool, with only the signals the Haystack adapter
# (MemPursuitRanker.candidate_pool) hands over (texts, the session_id meta). Needs
# pip install -e ".[haystack,eval]"
#
#   bash benchmarks/haystack_runs.sh [DATA_DIR]      # default ../shared/data
#
# Writes benchmarks/results/eval/frameworks/haystack-locomo/{summary.json,summary.md,config.json}.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data}
OUT=benchmarks/results/eval/frameworks/haystack-locomo
export HAYSTACK_TELEMETRY_ENABLED=False MEM0_TELEMETRY=False HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
nice -n 10 mempursuit eval --framework haystack --dataset locomo --data "$DATA/locomo/locomo10.json" \
  --k 5 10 20 50 --pool 200 --policies native centered-fusion mempursuit \
  --embed-threads 1 --threads 1 --out "$OUT" --quiet --no-plots
rm -f "$OUT/questions.jsonl"
