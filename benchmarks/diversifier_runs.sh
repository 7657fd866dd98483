#!/bin/bash
# The diversifiers a user would pick instead (docs/results.md, "Diversifiers a user would pick
# instead"; issue 45): pyversity 0.2.0's five strategies (pyversity-mmr, -msd, -dpp, -cover, -ssd;
# mempursuit_eval/diversifiers.py, pyversity's defaults, the pool's stored vectors and native
# scores) next to native, mmr and the default on the same pools: the plain store, packaged
# MiniLM, P = 200, K = 10 and 20. Needs pip install -e ".[eval,diversifiers]".
#
#   bash benchmarks/diversifier_runs.sh [DATA_DIR] [RUN...]   # default ../shared/data, every run
#
# RUN is one of locomo-dense locomo-hybrid lme-dense lme-hybrid beam-dense beam-hybrid hotpotqa-dense
# hotpotqa-hybrid (lme: LongMemEval-S, 500 haystacks, ~189k distinct turns embedded once, then cached)
# (HotpotQA: the pooled store, its held-out test split, K = 5 and 10). Each writes config.json,
# summary.json, summary.md and vs_default.json (the default against each policy, question by
# question: benchmarks/diversifier_vs_default.py) to benchmarks/results/eval/diversifiers/<RUN>/;
# docs/results.md's section renders every summary.json under that folder
# (python benchmarks/readme_tables.py).
#
# EMBED_THREADS=2 embeds with two threads (the first LongMemEval-S run: ~189k turns; the
# selection and its timings stay on one thread).
#
# RUN-haystack (e.g. locomo-dense-haystack) runs Haystack's own rankers instead of pyversity's
# (mempursuit_eval/haystack_rankers.py; needs pip install -e ".[eval,haystack-rankers]"):
# haystack-diversity (SentenceTransformersDiversityRanker, greedy_diversity_order, packaged
# MiniLM on the pool's texts) and haystack-lost-in-the-middle (its set is native's) next to native
# and the default, into benchmarks/results/eval/diversifiers/RUN-haystack/. haystack-diversity-mmr
# is left out of these runs: Haystack's MMR loops in Python over the pool for every pick (~0.6 s
# a pool at K = 10, ~2.2 s at K = 20 on these cores), about an hour for LoCoMo alone.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data}
shift || true
RUNS=${*:-locomo-dense locomo-hybrid lme-dense lme-hybrid beam-dense beam-hybrid hotpotqa-dense hotpotqa-hybrid}
export MEM0_TELEMETRY=False HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OMP_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
POLICIES="native mmr centered-fusion pyversity-mmr pyversity-msd pyversity-dpp pyversity-cover pyversity-ssd"
HAYSTACK_POLICIES="native centered-fusion haystack-diversity haystack-lost-in-the-middle"
for run in $RUNS; do
  policies=$POLICIES
  base=$run
  if [[ $run == *-haystack ]]; then base=${run%-haystack}; policies=$HAYSTACK_POLICIES; fi
  dataset=${base%-*}
  order=${base##*-}
  extra=(--k 10 20)
  case $dataset in
    locomo) data="$DATA/locomo/locomo10.json" ;;
    lme) dataset=longmemeval; data="$DATA/longmemeval/longmemeval_s.json.gz" ;;
    beam) data="$DATA/beam/100K" ;;
    hotpotqa) data="$DATA/hotpotqa"; extra=(--k 5 10 --split test) ;;
    *) echo "unknown run $run" >&2; exit 2 ;;
  esac
  out=benchmarks/results/eval/diversifiers/$run
  start=$(date +%s)
  nice -n 10 mempursuit eval --dataset "$dataset" --data "$data" --native-order "$order" \
    "${extra[@]}" --pool 200 --policies $policies \
    --embed-threads "${EMBED_THREADS:-1}" --threads 1 --out "$out" --quiet --no-plots
  python benchmarks/diversifier_vs_default.py "$out"  # the default against each, per question
  rm -f "$out/questions.jsonl"
  echo "$run: $(( $(date +%s) - start )) s wall"
done
