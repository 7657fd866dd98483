#!/bin/bash
# One option of the default against the default, question by question on each side of the
# held-out split (docs/results.md, table "Tried"; round 3's aspects and gather): LoCoMo (turns and
# observations) and BEAM-100K whole, LongMemEval-S on the questions the option can change (every
# other question's order is the default's). Embeddings come from the cache (see default_runs.sh for
# the cold-cache times).
#
#   bash benchmarks/option_runs.sh aspects|gather [DATA_DIR]    # default ../shared/data
#
# aspects: centered-fusion:aspects=1 (questions that set things side by side can change);
# gather: centered-fusion:gather=0.8 (questions that ask for a count, an order or a list).
# Writes benchmarks/results/eval/round3/<option>.json (benchmarks/option_changes.py); the run
# directories go to a temporary folder and are removed.
set -euo pipefail
cd "$(dirname "$0")/.."
OPTION=$1
DATA=${2:-../shared/data}
case $OPTION in
  aspects) POLICY=centered-fusion:aspects=1; TEST=query_aspects ;;
  gather) POLICY=centered-fusion:gather=0.8; TEST=asks_for_several ;;
  *) echo "usage: $0 aspects|gather [DATA_DIR]" >&2; exit 2 ;;
esac
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export MEM0_TELEMETRY=False HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
LME_FILE="$DATA/longmemeval/longmemeval_s.json.gz"
# the scored LongMemEval-S questions whose order the option can change
mapfile -t CAN < <(python - "$LME_FILE" "$TEST" <<'PY'
import gzip, json, sys
from mempursuit_core import aspects
test = getattr(aspects, sys.argv[2])
for q in json.load(gzip.open(sys.argv[1])):
    if not q["question_id"].endswith("_abs") and test(q["question"]):
        print(q["question_id"])
PY
)
run() {  # NAME POOL DATASET-ARGS...
  local name=$1 pool=$2; shift 2
  mempursuit eval "$@" --k 5 10 20 50 --pool "$pool" \
    --policies native centered-fusion "$POLICY" \
    --embed-threads 1 --threads 1 --out "$TMP/$name" --quiet --no-plots > /dev/null
}
LOCOMO=(--dataset locomo --data "$DATA/locomo/locomo10.json")
BEAM=(--dataset beam --data "$DATA/beam/100K")
LME=(--dataset longmemeval --data "$LME_FILE" --groups "${CAN[@]}")
names=()
for order in hybrid dense; do
  for pool in 200 100 50; do
    [ "$order" = dense ] && [ "$pool" != 200 ] && continue
    run locomo-$order-P$pool $pool "${LOCOMO[@]}" --native-order $order
    run locomo-obs-$order-P$pool $pool "${LOCOMO[@]}" --units observations --native-order $order
    run beam-$order-P$pool $pool "${BEAM[@]}" --native-order $order
    run lme-$order-P$pool $pool "${LME[@]}" --native-order $order
    names+=(locomo-$order-P$pool locomo-obs-$order-P$pool beam-$order-P$pool lme-$order-P$pool)
  done
done
python benchmarks/option_changes.py "${names[@]/#/$TMP/}" --policy "$POLICY" \
  --out "benchmarks/results/eval/round3/$OPTION.json"
