"""Per-query cost of every registered read policy at P = 200 (one thread).

Pools are LoCoMo turns (their real texts, for the policies that read words) with random unit
vectors of dimension ``--dim`` in place of embeddings (the cost does not depend on their
values); every policy gets the same pools, the same query vector and the same lazy signals a
dense-only adapter hands over (``pool_signals``: texts, query text, timestamps, session ids,
speakers).
The default (``centered-fusion``) is timed eight ways: with a framework keyword score handed over as the
``lexical`` signal (Mem0's BM25, SimpleMem's full-text index) fused with BM25 over the pool's
texts (its default) or alone (``lexical=prefer-signal``: no words to read); with BM25 over the
pool's texts only, for memories seen before (``warm``: a live store's memories recur across
queries; a full untimed pass first), also with ``spread=0`` (no session spreading) and with
``dates=0`` (no date channel), as the previous default (``speaker=0, named=0, gather=0.3``:
no speaker channel, one session spread), and with ``aspects=1`` on a question that
sets two things side by side ("which came first, A or B?", A and B the first words of two of the
pool's memories: every query pays for the aspect scores and the greedy picks); and for
memories never seen (``cold``: its term-count and stemming caches cleared before every query).
On documents (``--documents``, a HotpotQA JSONL file; the rows are left out without it), the
default is also timed with the ``titles`` signal a document store hands over (``titled`` and
``bridge`` then run): each pool is a question's 10 paragraphs and 190 others of the file, with
their titles, warm and cold.
Prints a table of median / p95 milliseconds and the ratio to ``mempursuit``, and writes JSON.

    python benchmarks/policy_latency.py --queries 300 --out benchmarks/results/policy_latency.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from mempursuit_core import DEFAULT_POLICY, get_selector, list_selectors  # noqa: E402
from mempursuit_eval.datasets import load_dataset  # noqa: E402
from mempursuit_core.lexical import _stem, _term_counts, tokenize  # noqa: E402
from mempursuit_core.links import _phrase  # noqa: E402
from mempursuit_core.signals import pool_signals  # noqa: E402

SKIP: set[str] = set()  # policies left out of the table


def pools(data: str, n: int, P: int, d: int, seed: int):
    ds = load_dataset("locomo", data, units="turns")
    rng = np.random.default_rng(seed)
    by_group: dict[str, list] = {}
    for u in ds.units:
        by_group.setdefault(u.group, []).append(u)
    questions = [q for q in ds.questions if len(by_group.get(q.group, [])) >= P]
    out = []
    for q in rng.choice(questions, size=min(n, len(questions)), replace=False):
        units = by_group[q.group]
        pick = rng.choice(len(units), size=P, replace=False)
        members = [units[i] for i in pick]
        M = rng.standard_normal((P, d)).astype(np.float32)
        M /= np.linalg.norm(M, axis=1, keepdims=True)
        qv = rng.standard_normal(d)
        out.append((q.text, qv / np.linalg.norm(qv), M, members))
    return out


def document_pools(path: str, n: int, P: int, d: int, seed: int):
    """Pools of HotpotQA paragraphs (``Title: text``) with their titles: a question's own
    paragraphs and others of the file, random unit vectors in place of embeddings."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    paragraphs = list({(t, f"{t}: " + "".join(s).strip()): None for r in rows
                       for t, s in zip(r["context"]["title"], r["context"]["sentences"])})
    rng = np.random.default_rng(seed)
    out = []
    for r in rng.choice(rows, size=min(n, len(rows)), replace=False):
        own = [(t, f"{t}: " + "".join(s).strip())
               for t, s in zip(r["context"]["title"], r["context"]["sentences"])]
        rest = [paragraphs[i] for i in rng.choice(len(paragraphs), size=P, replace=False)
                if paragraphs[i] not in own][:P - len(own)]
        members = own + rest
        M = rng.standard_normal((len(members), d)).astype(np.float32)
        M /= np.linalg.norm(M, axis=1, keepdims=True)
        qv = rng.standard_normal(d)
        out.append((r["question"], qv / np.linalg.norm(qv), M, members))
    return out


def time_select(sel, qv, M, k: int, signals, clear=()) -> float:
    """Milliseconds of one ``sel.select(qv, M, k, signals=signals)``, the caches in ``clear``
    (``functools`` caches) emptied first for a cold read."""
    for cache in clear:
        cache.cache_clear()
    t0 = time.perf_counter()
    sel.select(qv, M, k, signals=signals)
    return 1e3 * (time.perf_counter() - t0)


def measure_documents(sel, work, k: int, cold: bool = False) -> list[float]:
    clear = (_term_counts, _stem, _phrase) if cold else ()
    times = []
    for text, qv, M, members in work:
        signals = pool_signals([m[1] for m in members], text, titles=[m[0] for m in members])
        times.append(time_select(sel, qv, M, k, signals, clear))
    return times


def two_things(text: str, members) -> str:
    """A question about two of the pool's memories: "Which came first, A or B?"."""
    a, b = (" ".join(tokenize(m.text.split(":", 1)[-1])[:3]) for m in members[:2])
    return f"Which came first, {a} or {b}?"


def measure(sel, work, k: int, cold: bool = False, lexical: bool = False,
            ask=None) -> list[float]:
    times = []
    rng = np.random.default_rng(1)
    for text, qv, M, members in work:
        if ask is not None:
            text = ask(text, members)
        extra = {"lexical": rng.random(len(members))} if lexical else {}
        signals = pool_signals([u.text for u in members], text,
                               timestamps=[u.timestamp for u in members],
                               session_ids=[u.session_id for u in members],
                               speakers=[u.speaker for u in members], **extra)
        times.append(time_select(sel, qv, M, k, signals, (_term_counts, _stem) if cold else ()))
    return times


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"
                                          / "locomo" / "locomo10.json"))
    ap.add_argument("--documents", default=str(Path(__file__).resolve().parents[2] / "shared"
                                               / "data" / "hotpotqa" / "test.jsonl"),
                    help="HotpotQA JSONL for the documents rows (left out when missing)")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--pool", type=int, default=200)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)

    work = pools(args.data, args.queries, args.pool, args.dim, args.seed)
    rows = []
    names = [n for n in list_selectors() if n not in SKIP]
    for name in names:
        sel = get_selector(name)
        measure(sel, work, args.k)  # compile, warm up, every text seen once
        variants = [(name, sel, False, False, None)]
        if name == DEFAULT_POLICY:
            alone = get_selector(name, lexical="prefer-signal")
            aspects = get_selector(name, aspects=1)
            measure(aspects, work, args.k, ask=two_things)
            variants = [(f"{name} (signal + pool BM25)", sel, False, True, None),
                        (f"{name} (signal alone)", alone, False, True, None),
                        (f"{name} (pool BM25, warm)", sel, False, False, None),
                        (f"{name} (spread=0, warm)", get_selector(name, spread=0), False, False,
                         None),
                        (f"{name} (dates=0, warm)", get_selector(name, dates=0), False, False,
                         None),
                        (f"{name} (previous default, warm)",
                         get_selector(name, speaker=0, named=0, gather=0.3), False, False, None),
                        (f"{name} (aspects=1, A or B, warm)", aspects, False, False, two_things),
                        (f"{name} (pool BM25, cold)", sel, True, False, None)]
        for label, selector, cold, lexical, ask in variants:
            t = np.asarray(measure(selector, work, args.k, cold, lexical, ask))
            rows.append({"policy": label, "median_ms": float(np.median(t)),
                         "p95_ms": float(np.percentile(t, 95))})
    if Path(args.documents).exists():
        docs = document_pools(args.documents, args.queries, args.pool, args.dim, args.seed)
        sel, before = get_selector(DEFAULT_POLICY), get_selector(DEFAULT_POLICY, bridge=0, titled=0)
        measure_documents(sel, docs, args.k)  # warm up
        measure_documents(before, docs, args.k)
        for label, selector, cold in [
                (f"{DEFAULT_POLICY} (documents: titles, warm)", sel, False),
                (f"{DEFAULT_POLICY} (documents: bridge=0, titled=0, warm)", before, False),
                (f"{DEFAULT_POLICY} (documents: titles, cold)", sel, True)]:
            t = np.asarray(measure_documents(selector, docs, args.k, cold))
            rows.append({"policy": label, "median_ms": float(np.median(t)),
                         "p95_ms": float(np.percentile(t, 95))})
    ref = next(r["median_ms"] for r in rows if r["policy"] == "mempursuit")
    print(f"P={args.pool}, d={args.dim}, K={args.k}, {len(work)} LoCoMo queries, one thread")
    print(f"{'policy':54s} {'median ms':>10s} {'p95 ms':>8s} {'x mempursuit':>13s}")
    for r in rows:
        r["ratio"] = r["median_ms"] / ref
        print(f"{r['policy']:54s} {r['median_ms']:10.3f} {r['p95_ms']:8.3f} {r['ratio']:13.2f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"pool": args.pool, "dim": args.dim, "k": args.k,
                                        "queries": len(work), "machine": platform.platform(),
                                        "python": sys.version.split()[0], "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
