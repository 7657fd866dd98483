#!/bin/bash
# Documents: the second read (issue 53). The plain store (hybrid native order), P = 200, the
# packaged MiniLM, K = 2, 5, 10, on 2WikiMultihopQA (the 500-question dev half searching the
# 6,119-paragraph corpus) and HotpotQA (pooled; the 500 test questions). The default against
# the default without the second read (follow=0) and the default before round 5
# (bridge=4, follow=0). The options were chosen on 2Wiki's first 250 questions and HotpotQA's
# train + dev; benchmarks/documents_report.py reports 2Wiki's other 250 apart.
#
#   bash benchmarks/documents_runs.sh [DATA_DIR]      # default ../shared/data
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data}
OUT=benchmarks/results/eval/documents
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
POLICIES=(centered-fusion "centered-fusion:follow=0" "centered-fusion:bridge=4,follow=0")
run() {  # name, dataset arguments...
  local name=$1; shift
  start=$(date +%s)
  mempursuit eval "$@" --native-order hybrid --k 2 5 10 --pool 200 --policies "${POLICIES[@]}" \
    --embed-threads 1 --threads 1 --out "$OUT/$name" --quiet --no-plots
  echo "$name: $(( $(date +%s) - start )) s wall"
}
run 2wiki-hybrid --dataset 2wikimultihopqa --data "$DATA/2wikimultihopqa"
run hotpotqa-test-hybrid --dataset hotpotqa --data "$DATA/hotpotqa" --split test
rm -f "$OUT/hotpotqa-test-hybrid/questions.jsonl"
# the 2Wiki halves (halves.json), then docs/results-documents.md; the 4 MB questions file goes
python benchmarks/documents_report.py
rm -f "$OUT/2wiki-hybrid/questions.jsonl"
