#!/bin/bash
# Documents: the second read (issues 53, 63). The plain store (hybrid native order), P = 200,
# the packaged MiniLM, K = 2, 5, 10, on 2WikiMultihopQA (the 500-question dev half searching
# the 6,119-paragraph corpus), HotpotQA (pooled; the 500 test questions) and MuSiQue (the 100
# shared questions, one store). The default against the default without the second read
# (follow=0), round 5's default and the default before round 5. The options were chosen on
# 2Wiki's first 250 questions, HotpotQA's train + dev and MuSiQue's first 50 (round 6:
# benchmarks/round6_trial.py); benchmarks/documents_report.py reports 2Wiki's other 250 apart.
#
#   bash benchmarks/documents_runs.sh [DATA_DIR]      # default ../shared/data
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data}
OUT=benchmarks/results/eval/documents
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
# round 6's default, it without the second read, round 5's default and the default before it
R5="cased=false,hub_named=0,defer=false,link_once=false"
POLICIES=(centered-fusion "centered-fusion:follow=0" "centered-fusion:$R5"
          "centered-fusion:$R5,bridge=4,follow=0")
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
run musique-hybrid --dataset musique --data "$DATA/musique/train.json"
rm -f "$OUT/musique-hybrid/questions.jsonl"
# the 2Wiki halves (halves.json), then docs/results-documents.md; the 4 MB questions file goes
python benchmarks/documents_report.py
rm -f "$OUT/2wiki-hybrid/questions.jsonl"
