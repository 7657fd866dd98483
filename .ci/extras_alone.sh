#!/usr/bin/env bash
# What a user installs, each in its own fresh venv (issue 47):
#
#   fast    the README's fast subset with exactly `pip install -e ".[eval,test]"` (nothing from
#           .ci/requirements-*.txt): python -m pytest -m "not slow and not framework"
#   EXTRA   `pip install ".[EXTRA]"` alone (the wheel of this checkout; lightmem: + the wheel of
#           the real LightMem from ../shared/wheels or $SHARED_DIR/wheels, --no-deps, when it
#           is there), then the framework, the adapter package and every name it exports must
#           import; then the packages the example's docstring names on its `pip install` line,
#           and examples/EXTRA_quickstart.py runs offline.
#   BASELINE  the harness's baselines, `pip install ".[diversifiers]"` or
#           `".[haystack-rankers]"` alone: every policy the extra adds (pyversity-*, haystack-*)
#           is registered and picks K distinct candidates from a small pool, as
#           `mempursuit eval --policies NAME` would have it do.
#   SERVICE   `pip install ".[serve]"` alone: examples/serve_quickstart.py starts `mempursuit
#           serve` on a loopback port and asks it with the standard library.
#
# Measured on the shared 2-core machine under load (2 lanes; install + imports + example):
# graphiti 96 s, langgraph 87, memorybank 74, langchain 92, haystack 52, llamaindex 138, lightmem 115 (no
# wheel: imports only), mem0 384, simplemem 385 (both install torch), cognee 544, agno 79,
# semantic-kernel 157 (measured alone, later), crewai 138 (alone, later), fast 127
# (36 s install + 91 s tests): about 34 min of lane time, about 17 min of wall time with
# -j 2, beside the ~21 min main pytest of .ci/run. The baselines (one lane, issue 56):
# diversifiers 25 s, haystack-rankers 2-4 min (it installs torch).
#
# Usage:  bash .ci/extras_alone.sh [-j LANES] [fast|EXTRA ...]    (default: fast and every extra)
#         bash .ci/extras_alone.sh graphiti                       (one extra, as a developer)
# Exit status 1 when any check fails; each check's log is printed when it fails
# (EXTRAS_LOG_DIR keeps the logs; KEEP_CI_WORK=1 keeps the venvs).
#
# A torch pulled in by an extra is pinned to torch==2.13.0 by a constraint (an unpinned torch is
# a multi-GB CUDA build); all venvs share one pip cache ($PIP_CACHE_DIR, default pip's own).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"

ALL=(fast mem0 lightmem simplemem memorybank langgraph llamaindex langchain haystack graphiti cognee
     agno semantic-kernel autogen crewai diversifiers haystack-rankers serve)
BASELINES=" diversifiers haystack-rankers "
SERVICES=" serve "
lanes=1
if [ "${1:-}" = "-j" ]; then lanes="$2"; shift 2; fi
checks=("$@")
[ ${#checks[@]} -gt 0 ] || checks=("${ALL[@]}")
for c in "${checks[@]}"; do
  case " ${ALL[*]} " in *" $c "*) ;; *) echo "extras_alone: unknown check $c (known: ${ALL[*]})" >&2; exit 2;; esac
done

export MEM0_TELEMETRY=False HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
export GRAPHITI_TELEMETRY_ENABLED=false HAYSTACK_TELEMETRY_ENABLED=False
export CREWAI_DISABLE_TELEMETRY=true CREWAI_TRACING_ENABLED=false
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PROGRESS_BAR=off

work="$(mktemp -d "${TMPDIR:-/tmp}/extras-alone.XXXXXX")"
[ "${KEEP_CI_WORK:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
logs="${EXTRAS_LOG_DIR:-$work/logs}"
mkdir -p "$logs"
printf 'torch==2.13.0\n' > "$work/constraints.txt"
PY="${PYTHON:-python3}"

# One wheel of this checkout for every extra (a user's `pip install .[X]`; parallel editable
# builds would race on the egg-info in the tree).
if [ "${checks[*]}" != fast ]; then
  "$PY" -m pip wheel -q --no-deps --no-build-isolation . -w "$work/dist" >"$logs/wheel.log" 2>&1 \
    || "$PY" -m pip wheel -q --no-deps . -w "$work/dist" >>"$logs/wheel.log" 2>&1 \
    || { echo "extras_alone: building the wheel failed:"; cat "$logs/wheel.log"; exit 1; }
  wheel="$(ls "$work"/dist/mempursuit-*.whl)"
fi
# ../shared beside the clone, as .ci/run reads it (SHARED_DIR elsewhere)
lightmem_whl=$(ls "${SHARED_DIR:-../shared}"/wheels/lightmem-*.whl 2>/dev/null | tail -n 1 || true)

# The `pip install` lines of an example's docstring, as arguments: ".[X,Y]" (`pip install -e`
# in the checkout, until the first release; or the package's name with extras) becomes the
# wheel with those extras, `-e` is dropped; a git+ URL (LightMem's repository) is left out (the network here
# reaches only the registry): its wheel is installed from ../shared/wheels instead.
example_requirements() {
  "$PY" - "$1" "$2" <<'EOF'
import ast, re, shlex, sys
doc = ast.get_docstring(ast.parse(open(sys.argv[1]).read())) or ""
out = []
for line in doc.splitlines():
    line = line.strip()
    if not line.startswith("pip install "):
        continue
    for arg in shlex.split(line)[2:]:
        m = re.fullmatch(r"(?:mempursuit|\.)(\[[^\]]*\])?", arg)
        if arg == "-e":
            continue
        if m:
            out.append(sys.argv[2] + (m.group(1) or ""))
        elif not arg.startswith("git+"):
            out.append(arg)
print("\n".join(out))
EOF
}

check_fast() {
  local venv="$work/venv-fast"
  "$PY" -m venv "$venv" || return 1
  "$venv/bin/python" -m pip install -q -e ".[eval,test]" || return 1
  MEMPURSUIT_CACHE="$work/cache-fast" NUMBA_CACHE_DIR="$work/numba-fast" \
    "$venv/bin/python" -m pytest -m "not slow and not framework" -q -p no:cacheprovider
}

check_extra() {
  local extra="$1" venv="$work/venv-$1" example="examples/${1//-/_}_quickstart.py"
  "$PY" -m venv "$venv" || return 1
  local pip=("$venv/bin/python" -m pip install -q -c "$work/constraints.txt")
  echo "== pip install .[$extra] alone"
  "${pip[@]}" "${wheel}[$extra]" || return 1
  if [ "$extra" = lightmem ] && [ -n "$lightmem_whl" ]; then
    "${pip[@]}" --no-deps "$lightmem_whl" || return 1
  fi
  echo "== import the framework and every name the adapter exports"
  (cd "$work" && "$venv/bin/python" - "$extra" <<'EOF'
import importlib, sys
from mempursuit_core.plugins import get_adapter_spec, load_adapter
name = sys.argv[1]
spec = get_adapter_spec(name)
if name == "lightmem" and importlib.util.find_spec("lightmem") is None:
    import mempursuit_lightmem  # noqa: F401  (the package imports without LightMem)
    print("lightmem: no LightMem wheel in ../shared/wheels: the adapter package imports; "
          "the framework and the example are not checked")
    sys.exit(0)
importlib.import_module(spec.framework)
mod = load_adapter(name)
names = list(getattr(mod, "__all__", []))
for n in names:
    getattr(mod, n)
print(f"{name}: {spec.framework} and {spec.module} import ({len(names)} exported names)")
EOF
  ) || return 1
  if [ "$extra" = lightmem ] && [ -z "$lightmem_whl" ]; then return 0; fi
  echo "== the example's own install line, then the example"
  mapfile -t reqs < <(example_requirements "$example" "$wheel")
  "${pip[@]}" "${reqs[@]}" || return 1
  if [ "$extra" = lightmem ]; then "${pip[@]}" --no-deps "$lightmem_whl" || return 1; fi
  (cd "$work" && MEMPURSUIT_CACHE="$work/cache-$extra" NUMBA_CACHE_DIR="$work/numba-$extra" \
     timeout 900 "$venv/bin/python" "$ROOT/$example")
}

check_baseline() {
  local extra="$1" venv="$work/venv-$1"
  "$PY" -m venv "$venv" || return 1
  echo "== pip install .[$extra] alone"
  "$venv/bin/python" -m pip install -q -c "$work/constraints.txt" "${wheel}[$extra]" || return 1
  echo "== every policy it adds picks from a small pool"
  (cd "$work" && "$venv/bin/python" - "$extra" <<'EOF'
import sys

import numpy as np

from mempursuit_core.plugins import get_selector, list_selectors
from mempursuit_core.signals import pool_signals

extra = sys.argv[1]
prefix = {"diversifiers": "pyversity-", "haystack-rankers": "haystack-"}[extra]
names = [n for n in list_selectors() if n.startswith(prefix)]
if not names:
    sys.exit(f"{extra}: no {prefix}* policy is registered (mempursuit selectors)")
rng = np.random.default_rng(0)
query, pool = rng.normal(size=16), rng.normal(size=(12, 16))
texts = [f"memory {i} about topic {i % 4}" for i in range(12)]
for name in names:
    order = get_selector(name).select(query, pool, 3, native_scores=pool @ query,
                                      signals=pool_signals(texts, "topic 1")).order
    assert len(order) == 3 and len(set(order.tolist())) == 3, (name, order)
    print(f"{name}: picks {order.tolist()} of 12")
EOF
  )
}

check_service() {
  local extra="$1" venv="$work/venv-$1"
  "$PY" -m venv "$venv" || return 1
  echo "== pip install .[$extra] alone, then examples/${extra}_quickstart.py"
  "$venv/bin/python" -m pip install -q -c "$work/constraints.txt" "${wheel}[$extra]" || return 1
  (cd "$work" && NUMBA_CACHE_DIR="$work/numba-$extra" timeout 300 "$venv/bin/python" \
     "$ROOT/examples/${extra}_quickstart.py")
}

run_one() {
  local c="$1" start=$SECONDS rc
  if [ "$c" = fast ]; then check_fast >"$logs/$c.log" 2>&1
  elif [[ "$BASELINES" == *" $c "* ]]; then check_baseline "$c" >"$logs/$c.log" 2>&1
  elif [[ "$SERVICES" == *" $c "* ]]; then check_service "$c" >"$logs/$c.log" 2>&1
  else check_extra "$c" >"$logs/$c.log" 2>&1; fi
  rc=$?
  echo "$rc $((SECONDS - start))" >"$logs/$c.rc"
  [ "${KEEP_CI_WORK:-0}" = 1 ] || rm -rf "$work/venv-$c"  # ~0.1-2 GB each
  if [ "$rc" = 0 ]; then echo "extras_alone: $c ok ($((SECONDS - start)) s)"
  else echo "extras_alone: $c FAILED (rc $rc, $((SECONDS - start)) s): log follows"
        grep -v "^WARNING: Location" "$logs/$c.log" | tail -n 60; fi
}

# `lanes` checks at a time
for c in "${checks[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$lanes" ]; do wait -n; done
  run_one "$c" &
done
wait

failed=()
for c in "${checks[@]}"; do
  read -r rc _ <"$logs/$c.rc" || rc=1
  [ "$rc" = 0 ] || failed+=("$c")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "extras_alone: FAILED: ${failed[*]} (of ${checks[*]})"
  exit 1
fi
echo "extras_alone: all passed: ${checks[*]}"
