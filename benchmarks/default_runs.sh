#!/bin/bash
# Today's default against the native order and against the defaults before it, on LoCoMo (turns
# and extracted facts), BEAM-100K and LongMemEval-S, both native orders, P = 200 (and 50, 100 on
# the hybrid order), scored on each side of the held-out split: the runs behind the README's table
# and docs/results.md's "Round 3" (run in round 3). Embeddings come from the cache; from a cold
# cache LoCoMo takes a few minutes, BEAM-100K about ten and LongMemEval-S (189k turns) over an hour
# on two cores.
#
#   bash benchmarks/default_runs.sh [DATA_DIR]      # default ../shared/data
#
# Writes benchmarks/results/eval/round3/<run>/{summary.json,summary.md,config.json,*.png}, then
# scores BEAM's and LongMemEval-S's sides of benchmarks/results/eval/round3_split.json into
# round3/{beam,lme}_sides.json (LoCoMo's sides are whole runs: turns tune, observations are held
# out); the per-question files (questions.jsonl, several MB each) are removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data}
OUT=benchmarks/results/eval/round3
export MEM0_TELEMETRY=False HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
# today's default, the previous one (round 3's date channel, before speakers and gather), the
# round-2 default (no date channel either), and today's with adjacent turns
PREVIOUS=centered-fusion:speaker=0,named=0,gather=0.3
POLICIES=(native centered-fusion $PREVIOUS centered-fusion:dates=0,speaker=0,named=0,gather=0.3
          centered-fusion:adjacent=0.8)
run() {  # NAME POOL DATASET-ARGS...
  local name=$1 pool=$2; shift 2
  mempursuit eval "$@" --k 5 10 20 50 --pool "$pool" --policies "${POLICIES[@]}" \
    --embed-threads 1 --threads 1 --out "$OUT/$name" --quiet
}
LOCOMO=(--dataset locomo --data "$DATA/locomo/locomo10.json")
BEAM=(--dataset beam --data "$DATA/beam/100K")
LME=(--dataset longmemeval --data "$DATA/longmemeval/longmemeval_s.json.gz")
for order in hybrid dense; do
  run locomo-$order 200 "${LOCOMO[@]}" --native-order $order
  run locomo-obs-$order 200 "${LOCOMO[@]}" --units observations --native-order $order
  run beam-$order 200 "${BEAM[@]}" --native-order $order
  run lme-$order 200 "${LME[@]}" --native-order $order
done
for pool in 50 100; do
  run locomo-hybrid-P$pool $pool "${LOCOMO[@]}" --native-order hybrid --no-plots
  run locomo-obs-hybrid-P$pool $pool "${LOCOMO[@]}" --units observations --native-order hybrid --no-plots
  run beam-hybrid-P$pool $pool "${BEAM[@]}" --native-order hybrid --no-plots
  run lme-hybrid-P$pool $pool "${LME[@]}" --native-order hybrid --no-plots
done
python benchmarks/held_out_halves.py "$OUT"/beam-hybrid "$OUT"/beam-dense "$OUT"/beam-hybrid-P50 \
  "$OUT"/beam-hybrid-P100 --split benchmarks/results/eval/round3_split.json --k 5 10 20 50 \
  --out "$OUT/beam_sides.json" > /dev/null
python benchmarks/held_out_halves.py "$OUT"/lme-hybrid "$OUT"/lme-dense "$OUT"/lme-hybrid-P50 \
  "$OUT"/lme-hybrid-P100 --split benchmarks/results/eval/round3_split.json --k 5 10 20 50 \
  --out "$OUT/lme_sides.json" > /dev/null
rm -f "$OUT"/*/questions.jsonl
