"""Tried, not shipped: a vector second hop for stores without titles (issue 53, item 2). On
LoCoMo (turns, the plain store, P = 200, K = 10), after the default's first read a second
search from the question plus its first three picks (the normalised sum of the unit vectors)
adds the F nearest turns the pool lacks, and the default chooses again over the larger pool.
Session complete coverage at K = 10 for F = 0 (no second hop), 2, 5, 10.

    python benchmarks/vector_hop_trial.py [LOCOMO_JSON] [--native dense|hybrid]

Writes benchmarks/results/eval/documents/vector_hop_locomo.json (read by documents_report.py).
"""
import numpy as np, sys, warnings
from mempursuit_core import get_selector
from mempursuit_core.follow import Fetched
from mempursuit_core.readpath import CandidatePool
from mempursuit_eval.datasets import load_dataset, select_questions
from _common import SHARED_DATA, plain_store
import argparse, json
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]
ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("data", nargs="?", default=str(SHARED_DATA / "locomo" / "locomo10.json"))
ap.add_argument("--native", default="hybrid", choices=("dense", "hybrid"))
args = ap.parse_args()
native = args.native
ds = load_dataset("locomo", args.data, units="turns")
qs = select_questions(ds)
units = {u.uid: u for u in ds.units}
store, emb = plain_store(ds.units, native)
qv = emb.encode([q.text for q in qs])
sel = get_selector("centered-fusion")
P, K = 200, 10
res = {f: [] for f in (0, 2, 5, 10)}
for q, v in zip(qs, qv):
    if not q.gold_sessions: continue
    p = store.pool(q.group, q.text, P, query_vector=v)
    g = store._groups[q.group]
    first = sel.select(p.query_vector, p.vectors, K, native_scores=p.native_scores, signals=p.signals)
    top = p.vectors[first.order[:3]].astype(np.float64)
    top /= np.linalg.norm(top, axis=1, keepdims=True)
    u = v / np.linalg.norm(v)
    q2 = u + top.mean(0); q2 /= np.linalg.norm(q2)
    inpool = set(p.items)
    sims = g.vectors @ q2
    cand = [i for i in np.argsort(-sims) if g.uids[i] not in inpool]
    for F in res:
        if F == 0:
            order = first.order; uids = p.items
        else:
            rows = np.asarray(cand[:F])
            from mempursuit_core.follow import extended_signals
            fetched = Fetched([g.uids[i] for i in rows], g.vectors[rows], store._signals(g, rows, q.text, g.vectors @ v, None if native=="dense" else store._lexical(g).bm25(q.text)))
            sig = extended_signals(p.signals, P, fetched)
            M = np.concatenate([p.vectors, g.vectors[rows]])
            order = sel.select(p.query_vector, M, K, signals=sig).order
            uids = p.items + fetched.items
        got = {units[uids[i]].session_id for i in order[:K]}
        res[F].append(set(q.gold_sessions) <= got)
out = {"native": native, "pool": P, "k": K, "n": len(res[0]),
       "session_complete_coverage": {str(F): 100 * float(np.mean(r)) for F, r in res.items()}}
for F, r in res.items():
    print(native, "F", F, "session complete coverage@10", round(100 * np.mean(r), 1), len(r))
path = ROOT / "benchmarks" / "results" / "eval" / "documents" / "vector_hop_locomo.json"
path.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
