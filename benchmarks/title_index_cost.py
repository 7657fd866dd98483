"""What the second read's title index costs as the store grows: building it (once per store
version), the check a read makes that it is current (no pass over the store), and a read's
``named`` on a current index, at 10k and 100k documents, in one run; through Haystack's
``InMemoryDocumentStore`` as the ranker reads it (its titles through ``filter_documents``, its
version through ``count_documents`` and the writes counted on the store) and on a plain list of
titles; and a read's fetch of two titles through Haystack's in-memory store: the store's own
filter (``filter_documents`` on ``meta.title``, a scan of every document) beside the ranker's
fetch (by id, from the ids the title index read when it was built). Synthetic titles ("Title
000042 of topic 7") and texts that name three of them.

    python benchmarks/title_index_cost.py --out benchmarks/results/title_index_cost.json

Prints a table (median milliseconds) and writes it as JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from mempursuit_core.follow import TitleIndex, write_version
from mempursuit_core.links import _phrase


def _titles(n: int) -> list[str]:
    return [f"Title {i:06d} of topic {i % 97}" for i in range(n)]


def _median_ms(fn, repeats: int, cold: bool = False) -> float:
    times = []
    for _ in range(repeats):
        if cold:  # a build from scratch: no title's phrase cached from an earlier one
            _phrase.cache_clear()
        t = time.perf_counter()
        fn()
        times.append(1000 * (time.perf_counter() - t))
    return float(np.median(times))


def _haystack_index(n: int):
    from haystack import Document
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = InMemoryDocumentStore()
    vectors = np.random.default_rng(1).standard_normal((n, 8)).astype(np.float32).tolist()
    store.write_documents([Document(id=str(i), content=t, meta={"title": t}, embedding=v)
                           for i, (t, v) in enumerate(zip(_titles(n), vectors))])
    writes = write_version(store, ("write_documents", "delete_documents"))
    index = TitleIndex(lambda: [d.meta.get("title") for d in store.filter_documents()],
                       version=lambda: (store.count_documents(), writes()))
    return store, index


def measure(n: int, repeats: int, haystack: bool) -> dict:
    rng = np.random.default_rng(0)
    titles = _titles(n)
    texts = [" and ".join(titles[j] for j in rng.choice(n, 3, replace=False)) + "."
             for _ in range(20)]
    row: dict = {"documents": n}
    plain = TitleIndex(lambda: titles)
    row["plain build ms"] = _median_ms(lambda: plain._build(None), max(1, repeats // 3), True)
    plain.current()
    row["plain read check ms"] = _median_ms(lambda: plain.current(), repeats * 10)
    row["plain named ms"] = _median_ms(lambda: plain.named(texts[:4], limit=2), repeats)
    if haystack:
        store, index = _haystack_index(n)
        seen = index._seen()
        row["haystack build ms"] = _median_ms(lambda: index._build(seen), max(1, repeats // 3),
                                              True)
        index.current()
        row["haystack read check ms"] = _median_ms(lambda: index.current(), repeats * 10)
        row["haystack named ms"] = _median_ms(lambda: index.named(texts[:4], limit=2), repeats)
        row.update(_haystack_fetch(store, titles[:: max(1, n // 2)][:2], repeats))
    return row


def _haystack_fetch(store, two: list[str], repeats: int) -> dict:
    """A fetch of two titles: Haystack's filter on ``meta.title`` and the ranker's own."""
    from mempursuit_haystack import MemPursuitRanker

    ranker = MemPursuitRanker(top_k=5, document_store=store, whole_store=True)
    lookup = ranker.title_lookup("q")
    lookup.index.current()  # built, as at a read after the first
    by_filter = _median_ms(lambda: store.filter_documents(
        {"field": "meta.title", "operator": "in", "value": two}), repeats)
    fetched = lookup._fetch(two, 2)
    assert sorted(fetched.signals["titles"]) == sorted(two), fetched.signals["titles"]
    return {"haystack filter fetch ms": by_filter,
            "ranker fetch ms": _median_ms(lambda: lookup._fetch(two, 2), repeats)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--no-haystack", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    haystack = not args.no_haystack
    if haystack:
        try:
            import haystack  # noqa: F401
        except ImportError:
            haystack = False
    rows = [measure(n, args.repeats, haystack) for n in args.sizes]
    keys = [k for k in rows[0] if k != "documents"]
    print(f"{'documents':>10}  " + "  ".join(f"{k:>22}" for k in keys))
    for r in rows:
        print(f"{r['documents']:>10}  " + "  ".join(f"{r[k]:>22.3f}" for k in keys))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"rows": rows, "repeats": args.repeats,
                                        "machine": platform.platform()}, indent=1) + "\n",
                            encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
