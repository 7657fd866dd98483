"""The orders of the default policy and of every kept selector, frozen (issue 25).

Before a refactor of a read policy, record what it returns; after, check that nothing moved.
The orders come from the harness's own path: the built-in plain store (dense and hybrid native
orders, every signal it hands over: texts, lexical, timestamps, session ids, speakers,
positions) with the packaged int8 ONNX MiniLM, on

* the project's fixture (``tests/fixtures/dialogue.json``, LoCoMo format): every order is
  hashed per (native order, pool size, policy, K), and the kept selectors' orders at K=10 are
  stored as they are (readable in a diff);
* LoCoMo (``../shared/data/locomo/locomo10.json``, turns, pool 200): one hash of all orders
  per (native order, policy, K), computed as the harness does (a nested selector once at the
  largest K). The embeddings go through the harness's cache (``$MEMPURSUIT_CACHE``, else
  ``~/.cache/mempursuit``): about 5 minutes on two cores the first time.

    python tests/frozen_orders.py            # check both against tests/fixtures/frozen_orders.json
    python tests/frozen_orders.py --write    # record them (only before a change, never to pass)

``tests/test_frozen_orders.py`` runs the check (the LoCoMo part skips without ../shared).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "dialogue.json"
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
FROZEN = ROOT / "tests" / "fixtures" / "frozen_orders.json"

#: The selectors a user picks, the default's variants that docs/results.md reports, and the
#: experimental ones (so that moving them is checked too).
KEPT = ("native", "mempursuit", "mempursuit-adaptive", "mmr", "centered-fusion")
VARIANTS = (
    "centered-fusion:speaker=0,named=0,gather=0.3",
    "centered-fusion:dates=0,speaker=0,named=0,gather=0.3",
    "centered-fusion:dates=0,speaker=0,named=0,gather=0.3,spread=0",
    "centered-fusion:dates=0,speaker=0,named=0,gather=0.3,spread=0.5",
    "centered-fusion:dates=0,speaker=0,named=0,gather=0.3,lexical=prefer-signal,stem=false,spread=0",
    "centered-fusion:dates=0,speaker=0,named=0,gather=0.3,lexical=prefer-signal,fusion=minmax,"
    "weight=1,stem=false,spread=0",
    "centered-fusion:aspects=1",
    "centered-fusion:adjacent=0.8",
    "centered-fusion:spread=0.8,adjacent=0.8",
    "centered-fusion:dates=0",
    "centered-fusion:gather=0.8",
    "centered-fusion:gamma=0.5",
    "centered-fusion:lexical=pool,weight=0",
    "centered-fusion:aspects=1,adjacent=0.8,gamma=0.3",
)
EXPERIMENTAL = ("pursuit-rank", "pursuit-anchor", "pursuit-joint", "pursuit-time", "native-dedup")
#: A policy as frozen -> how it is spelled today (issue 25 renamed these).
RENAMED: dict[str, str] = {"mempursuit-adaptive": "mempursuit:adaptive=true",
                           **{n: f"experimental/{n}" for n in EXPERIMENTAL}}

NATIVE = ("dense", "hybrid")
FIXTURE_POOLS = (20, 200)
FIXTURE_KS = (3, 10, 20)
LOCOMO_POOL = 200
LOCOMO_KS = (10, 20, 50)
LOCOMO_POLICIES = KEPT + VARIANTS[:-2]


def build(spec: str):
    """The selector a policy spec (``NAME[:KEY=VALUE,...]``) names, as the harness builds it."""
    from mempursuit_core import get_selector
    from mempursuit_eval.runner import parse_policy

    name, opts = parse_policy(RENAMED.get(spec, spec))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an old name here would hide a renamed policy
        return get_selector(name, **opts)


def _digest(orders) -> str:
    h = hashlib.sha256()
    for o in orders:
        h.update(np.asarray(o, dtype=np.int64).tobytes())
        h.update(b"|")
    return h.hexdigest()[:16]


_EMBEDDERS: dict = {}


def _embedder(cache: Path | None):
    """The packaged int8 MiniLM at one thread (loaded once), behind the harness's cache if given."""
    from mempursuit_core.embed import get_embedder

    if cache not in _EMBEDDERS:
        embedder = _EMBEDDERS.get(None) or get_embedder(threads=1)
        if cache is not None:
            from mempursuit_eval.openai_embed import cached_embedder

            embedder = cached_embedder(embedder, cache)
        _EMBEDDERS[cache] = embedder
    return _EMBEDDERS[cache]


def _pools(dataset_path: Path, native: str, pool_sizes, cache: Path | None) -> dict:
    """``{pool size: [Pool per question]}`` from the plain store with ``native`` order."""
    from mempursuit_eval.datasets import load_dataset, select_questions
    from mempursuit_eval.store import PlainStore

    ds = load_dataset("locomo", dataset_path, units="turns")
    questions = select_questions(ds)
    embedder = _embedder(cache)
    store = PlainStore(native)
    store.build(ds.units, embedder=embedder)
    qvecs = embedder.encode([q.text for q in questions])
    try:
        return {size: [store.pool(q.group, q.text, size, query_vector=v)
                       for q, v in zip(questions, qvecs)] for size in pool_sizes}
    finally:
        store.close()


def orders(pools, spec: str, k: int, sel=None) -> list[list[int]]:
    sel = build(spec) if sel is None else sel
    return [sel.select(p.query_vector, p.vectors, k, native_scores=p.native_scores,
                       signals=p.signals).order.tolist() for p in pools]


def harness_orders(pools, spec: str, ks) -> dict[int, list[list[int]]]:
    """Each K's orders as the harness computes them: a nested selector once at the largest K
    (the smaller ones are its prefixes), any other once per K."""
    sel = build(spec)
    if sel.nested:
        longest = orders(pools, spec, max(ks), sel)
        return {k: [o[:k] for o in longest] for k in ks}
    return {k: orders(pools, spec, k, sel) for k in ks}


def fixture_orders() -> dict:
    """``{"hashes": {key: digest}, "orders": {key: [[...], ...]}}`` on the fixture."""
    out: dict = {"hashes": {}, "orders": {}}
    for native in NATIVE:
        by_size = _pools(FIXTURE, native, FIXTURE_POOLS, None)
        for pool, pools in by_size.items():
            for spec in KEPT + VARIANTS + EXPERIMENTAL:
                for k in FIXTURE_KS:
                    got = orders(pools, spec, k)
                    key = f"{native}|P{pool}|{spec}|K{k}"
                    out["hashes"][key] = _digest(got)
                    if spec in KEPT and k == 10 and pool == 200:
                        out["orders"][key] = [" ".join(map(str, o)) for o in got]
    return out


def locomo_hashes(cache: Path | None = None) -> dict:
    """``{key: digest}`` over LoCoMo's turns, pool 200."""
    out = {}
    for native in NATIVE:
        pools = _pools(LOCOMO, native, (LOCOMO_POOL,), cache)[LOCOMO_POOL]
        for spec in LOCOMO_POLICIES:
            for k, got in harness_orders(pools, spec, LOCOMO_KS).items():
                out[f"{native}|P{LOCOMO_POOL}|{spec}|K{k}"] = _digest(got)
    return out


def compare(frozen: dict, now: dict) -> list[str]:
    """One line per key whose orders moved (or that is missing on either side)."""
    bad = [f"{key}: missing now" for key in frozen if key not in now]
    bad += [f"{key}: not frozen" for key in now if key not in frozen]
    bad += [f"{key}: orders moved" for key in frozen if key in now and frozen[key] != now[key]]
    return bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true", help="record the orders (before a change)")
    args = ap.parse_args(argv)
    now = {"fixture": fixture_orders()}
    if LOCOMO.exists():
        from mempursuit_eval.datasets import default_cache_dir

        now["locomo"] = locomo_hashes(default_cache_dir())
    if args.write:
        FROZEN.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"wrote {FROZEN}")
        return 0
    frozen = json.loads(FROZEN.read_text())
    bad = compare(frozen["fixture"]["hashes"], now["fixture"]["hashes"])
    if "locomo" in now:
        bad += compare(frozen["locomo"], now["locomo"])
    print("\n".join(bad) or "every order as frozen")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
