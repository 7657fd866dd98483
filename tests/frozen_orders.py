"""The orders of the default policy and of every kept selector, frozen (issue 25).

Before a refactor of a read policy, record what it returns; after, check that nothing moved.
The orders come from the harness's own path: the built-in plain store (dense and hybrid native
orders, every signal it hands over: texts, lexical, timestamps, session ids, speakers,
positions), on vectors the packaged int8 ONNX MiniLM gave once and that are kept in
``tests/fixtures/frozen_inputs.npz`` (the model's last bits depend on the CPU; why, in
``tests/test_frozen_orders.py``), on

* the project's fixture (``tests/fixtures/dialogue.json``, LoCoMo format): every order is
  hashed per (native order, pool size, policy, K), and the kept selectors' orders at K=10 are
  stored as they are (readable in a diff);
* two titled document fixtures (``tests/fixtures/twowiki_corpus``, 2WikiMultihopQA's layout
  with a separate corpus, and ``tests/fixtures/hotpotqa_small.jsonl``; paragraphs, pools of 3
  and 200): the default with its second read (the titles it fetched are part of the digest),
  without it, and as it was before round 5; readable orders for the default;
* LoCoMo (``$MEMPURSUIT_DATA/locomo/locomo10.json``, else ``../shared/data/...``; turns, pool
  200): one hash per (native order, policy, K, conversation), computed as the harness does (a
  nested selector once at the largest K). About 4 minutes on two cores.

    python tests/frozen_orders.py                 # check both (tests/fixtures/frozen_orders.json)
    python tests/frozen_orders.py --fixture-only  # the fixture only (seconds)
    python tests/frozen_orders.py --write         # record the orders: only for an intended
                                                  # change of order, never to pass
    python tests/frozen_orders.py --write-inputs  # re-embed (a new embedder or dataset
                                                  # loader), then --write

``tests/test_frozen_orders.py`` runs the check (the LoCoMo part skips without the dataset).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "dialogue.json"
DATA = Path(os.environ.get("MEMPURSUIT_DATA") or ROOT.parent / "shared" / "data")
LOCOMO = DATA / "locomo" / "locomo10.json"
FROZEN = ROOT / "tests" / "fixtures" / "frozen_orders.json"
INPUTS = ROOT / "tests" / "fixtures" / "frozen_inputs.npz"
REGENERATE_INPUTS = ("python tests/frozen_orders.py --write-inputs, then --write, records new "
                     "ones (only for a new embedder or dataset loader)")

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
#: The titled document fixtures: (name in the inputs, dataset, path).
DOCUMENTS = (("twowiki", "2wikimultihopqa", ROOT / "tests" / "fixtures" / "twowiki_corpus"),
             ("hotpotqa", "hotpotqa", ROOT / "tests" / "fixtures" / "hotpotqa_small.jsonl"))
DOCUMENT_POOLS = (3, 200)
DOCUMENT_KS = (2, 5)
#: round 6's default and its variants, and round 5's default spelled by options (its orders are
#: the ones frozen for ``centered-fusion`` before round 6)
DOCUMENT_POLICIES = ("native", "centered-fusion", "centered-fusion:follow=0",
                     "centered-fusion:bridge=4,follow=0",
                     "centered-fusion:cased=false,hub_named=0,defer=false,link_once=false")


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


class FrozenEmbedder:
    """Frozen vectors as an embedder: ``encode`` answers each list of texts it was frozen with
    (the units, then the questions, as the harness embeds them) with the vectors of that list.
    The store, its pools and its signals are the harness's own; only the model run is fixed."""

    def __init__(self, name: str, frozen: dict[str, np.ndarray]):
        self.name = f"frozen-{name}"
        self._frozen = frozen  # digest of the texts -> (n, d) float32
        self.dim = int(next(iter(frozen.values())).shape[1])

    def encode(self, texts, *, batch_size: int = 64) -> np.ndarray:
        digest = _text_digest(texts)
        if digest not in self._frozen:
            raise ValueError(f"{INPUTS.name} holds no vectors for these {len(texts)} texts (the "
                             f"dataset or its loader changed): {REGENERATE_INPUTS}")
        return self._frozen[digest]


def _dataset(dataset_path: Path, dataset: str = "locomo"):
    """The dataset's units and its questions, as the harness selects them."""
    from mempursuit_eval.datasets import load_dataset, select_questions

    ds = load_dataset(dataset, dataset_path, units="turns" if dataset == "locomo" else None)
    return ds, select_questions(ds)


def _text_digest(texts) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8") + b"\0")
    return h.hexdigest()[:16]


def _quantise(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows as int8 times a per-row float32 scale: (n, d) int8 and (n, 1) float32."""
    scale = (np.abs(vectors).max(axis=1, keepdims=True) / 127).astype(np.float32)
    return np.round(vectors / scale).astype(np.int8), scale


def write_inputs() -> None:
    """Embed both datasets as the harness does (the units in one call, the questions in
    another) with the packaged int8 MiniLM at one thread, and write them to :data:`INPUTS`:
    the fixture as float32, LoCoMo as int8 with a per-row scale (2.7 MB instead of 11 MB)."""
    from mempursuit_core.embed import get_embedder

    embedder = get_embedder(threads=1)
    out = {}
    for name, path in (("fixture", FIXTURE), ("locomo", LOCOMO)):
        ds, questions = _dataset(path)
        for part, texts in (("units", [u.text for u in ds.units]),
                            ("questions", [q.text for q in questions])):
            vectors = embedder.encode(texts)
            out[f"{name}_{part}_digest"] = np.array(_text_digest(texts))
            if name == "fixture":
                out[f"{name}_{part}"] = vectors.astype(np.float32)
            else:
                out[f"{name}_{part}_int8"], out[f"{name}_{part}_scale"] = _quantise(vectors)
    np.savez_compressed(INPUTS, **out)


def write_document_inputs() -> None:
    """Add the titled document fixtures' vectors to :data:`INPUTS` (float32), the other
    datasets' vectors kept as they are."""
    from mempursuit_core.embed import get_embedder

    embedder = get_embedder(threads=1)
    with np.load(INPUTS) as z:
        out = {key: z[key] for key in z.files}
    for name, dataset, path in DOCUMENTS:
        ds, questions = _dataset(path, dataset)
        for part, texts in (("units", [u.text for u in ds.units]),
                            ("questions", [q.text for q in questions])):
            out[f"{name}_{part}_digest"] = np.array(_text_digest(texts))
            out[f"{name}_{part}"] = embedder.encode(texts).astype(np.float32)
    np.savez_compressed(INPUTS, **out)


def frozen_embedder(name: str) -> FrozenEmbedder:
    """The frozen vectors of dataset ``name`` (``"fixture"`` or ``"locomo"``) as float32."""
    frozen = {}
    with np.load(INPUTS) as z:
        for part in ("units", "questions"):
            key = f"{name}_{part}"
            vectors = (z[key] if key in z.files
                       else z[f"{key}_int8"].astype(np.float32) * z[f"{key}_scale"])
            frozen[str(z[f"{key}_digest"])] = np.ascontiguousarray(vectors, dtype=np.float32)
    return FrozenEmbedder(name, frozen)


def _pools(dataset_path: Path, native: str, pool_sizes, name: str,
           dataset: str = "locomo") -> dict:
    """``{pool size: [Pool per question]}`` from the plain store with ``native`` order, on the
    frozen vectors of dataset ``name``."""
    from mempursuit_eval.store import PlainStore

    ds, questions = _dataset(dataset_path, dataset)
    embedder = frozen_embedder(name)
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
        by_size = _pools(FIXTURE, native, FIXTURE_POOLS, "fixture")
        for pool, pools in by_size.items():
            for spec in KEPT + VARIANTS + EXPERIMENTAL:
                for k in FIXTURE_KS:
                    got = orders(pools, spec, k)
                    key = f"{native}|P{pool}|{spec}|K{k}"
                    out["hashes"][key] = _digest(got)
                    if spec in KEPT and k == 10 and pool == 200:
                        out["orders"][key] = [" ".join(map(str, o)) for o in got]
    return out


def document_orders() -> dict:
    """``{"hashes": {key: digest}, "orders": {key: [...]}}`` on the titled document fixtures:
    each selection's order and, after a ``|``, the unit ids its second read fetched (the read
    path's stages: the policy's choice, then :func:`~mempursuit_core.follow.follow_up`)."""
    from mempursuit_core.follow import follow_up

    out: dict = {"hashes": {}, "orders": {}}
    for name, dataset, path in DOCUMENTS:
        for native in NATIVE:
            for pool, pools in _pools(path, native, DOCUMENT_POOLS, name, dataset).items():
                for spec in DOCUMENT_POLICIES:
                    sel = build(spec)
                    for k in DOCUMENT_KS:
                        got = []
                        for p in pools:
                            chosen = follow_up(
                                sel.select(p.query_vector, p.vectors, k,
                                           native_scores=p.native_scores, signals=p.signals),
                                p.query_vector, p.vectors, k, native_scores=p.native_scores,
                                signals=p.signals, items=p.items)
                            extra = chosen.extra.items if chosen.extra is not None else []
                            got.append(" ".join(map(str, chosen.order.tolist())) + " | "
                                       + "; ".join(extra))
                        key = f"{name}|{native}|P{pool}|{spec}|K{k}"
                        out["hashes"][key] = hashlib.sha256(
                            "\n".join(got).encode("utf-8")).hexdigest()[:16]
                        if spec == "centered-fusion" and pool == 3:
                            out["orders"][key] = got
    return out


def locomo_hashes() -> dict:
    """``{key: digest}`` over LoCoMo's turns, pool 200: one digest per (native order, policy,
    K, conversation), so that a moved order says where."""
    out = {}
    for native in NATIVE:
        pools = _pools(LOCOMO, native, (LOCOMO_POOL,), "locomo")[LOCOMO_POOL]
        groups = [q.group for q in _dataset(LOCOMO)[1]]
        for spec in LOCOMO_POLICIES:
            for k, got in harness_orders(pools, spec, LOCOMO_KS).items():
                for group in dict.fromkeys(groups):
                    mine = [o for o, g in zip(got, groups) if g == group]
                    out[f"{native}|P{LOCOMO_POOL}|{spec}|K{k}|{group}"] = _digest(mine)
    return out


def compare(frozen: dict, now: dict) -> list[str]:
    """One line per key whose orders moved (or that is missing on either side)."""
    bad = [f"{key}: missing now" for key in frozen if key not in now]
    bad += [f"{key}: not frozen" for key in now if key not in frozen]
    bad += [f"{key}: orders moved" for key in frozen if key in now and frozen[key] != now[key]]
    return bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true",
                    help="record the orders (before an intended change of order, never to pass)")
    ap.add_argument("--write-inputs", action="store_true",
                    help="re-embed the fixture and LoCoMo into tests/fixtures/frozen_inputs.npz "
                         "(only when the embedder or a dataset's loader changed; then --write)")
    ap.add_argument("--fixture-only", action="store_true", help="skip LoCoMo")
    ap.add_argument("--write-document-inputs", action="store_true",
                    help="add the titled document fixtures' vectors to the inputs (the others "
                         "kept; then --write)")
    args = ap.parse_args(argv)
    if args.write_inputs:
        write_inputs()
        write_document_inputs()
        print(f"wrote {INPUTS}")
        return 0
    if args.write_document_inputs:
        write_document_inputs()
        print(f"wrote {INPUTS}")
        return 0
    now = {"fixture": fixture_orders(), "documents": document_orders()}
    if LOCOMO.exists() and not args.fixture_only:
        now["locomo"] = locomo_hashes()
    frozen = json.loads(FROZEN.read_text())
    if args.write:
        frozen.update(now)  # --fixture-only keeps the LoCoMo part as it was
        FROZEN.write_text(json.dumps(frozen, indent=1, sort_keys=True) + "\n")
        print(f"wrote {FROZEN}")
        return 0
    bad = compare(frozen["fixture"]["hashes"], now["fixture"]["hashes"])
    bad += compare(frozen.get("documents", {}).get("hashes", {}), now["documents"]["hashes"])
    if "locomo" in now:
        bad += compare(frozen["locomo"], now["locomo"])
    print("\n".join(bad) or "every order as frozen")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
