"""A bounded localhost load test of ``mempursuit serve`` against the in-process read (issue 65).

Starts ``mempursuit serve`` on a free loopback port (``--workers``, default 2), then for 8 and
32 concurrent clients (threads, one keep-alive connection each) sends requests of 200 documents:

* ``vectors``: the stored vectors sent (384-d) as JSON numbers, nothing embedded;
* ``vectors, base64``: the same vectors as base64 float32 strings;
* ``texts, warm``: texts only, every text already in the service's cache;
* ``texts, cold``: texts only, every text new (201 texts embedded per request).

Each row: requests answered / errors, throughput (requests/s), latency p50 / p99 (ms, as the
client sees it). The in-process rows read the same pools in this process, one at a time
(``CandidatePool(...).select``; cold: the packaged model embeds first). Prints a table and
writes ``benchmarks/results/serve/load.json``. Bounded: a fixed number of requests per
row (``--requests``) and ``--max-seconds`` per row.

    python benchmarks/serve_load.py                      # about 2-4 minutes on 2 cores
    python benchmarks/serve_load.py --requests 64 --clients 8
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import platform
import sys
import threading
import time
from pathlib import Path

import numpy as np

from mempursuit_core.adapter import (DEFAULT_POLICY, CandidatePool, ReadOptions, get_embedder,
                                     pool_signals)
from mempursuit_serve.local import LocalService

ROOT = Path(__file__).resolve().parents[1]
WORDS = ("alice bob carol paris lyon violin nurse cat garden train museum recipe winter summer "
         "brother sister doctor meeting birthday concert river mountain book coffee project "
         "deadline holiday school office market bicycle letter camera island").split()
P, DIM = 200, 384


def texts_for(rng, tag: str) -> list[str]:
    """200 short memories; ``tag`` makes them unique to one request (a cold cache)."""
    return [" ".join(rng.choice(WORDS, 8)) + f" ({tag}-{i})" for i in range(P)]


def body_bytes(query: str, texts: list[str], vectors=None, *, b64: bool = False) -> bytes:
    body = {"model": "mempursuit", "query": query, "documents": texts, "top_n": 10}
    if vectors is not None and b64:  # little-endian float32, base64 (docs/serve.md)
        body["query_vector"], body["vectors"] = (
            base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode() for v in vectors)
    elif vectors is not None:
        body["query_vector"], body["vectors"] = vectors[0].tolist(), vectors[1].tolist()
    return json.dumps(body).encode()


def run_clients(url: str, bodies: list[bytes], clients: int, max_seconds: float) -> dict:
    """``bodies`` sent by ``clients`` threads, each over its own keep-alive connection."""
    host, port = url.removeprefix("http://").split(":")
    latencies: list[float] = []
    errors: list[str] = []
    flagged = [0]
    embedded = [0]
    lock = threading.Lock()
    todo = list(range(len(bodies)))
    stop_at = time.perf_counter() + max_seconds

    def client():
        conn = http.client.HTTPConnection(host, int(port), timeout=120)
        while time.perf_counter() < stop_at:
            with lock:
                if not todo:
                    break
                i = todo.pop()
            t0 = time.perf_counter()
            try:
                conn.request("POST", "/v1/rerank", bodies[i],
                             {"Content-Type": "application/json"})
                res = conn.getresponse()
                payload = res.read()
                ok = res.status == 200 and len(json.loads(payload)["results"]) == 10
                exceeded = res.getheader("X-Mempursuit-Deadline-Exceeded") == "true"
                n_embedded = int(res.getheader("X-Mempursuit-Embedded") or 0)
            except (OSError, http.client.HTTPException) as exc:
                ok, payload, exceeded, n_embedded = False, repr(exc).encode(), False, 0
                conn.close()
                conn = http.client.HTTPConnection(host, int(port), timeout=120)
            dt = time.perf_counter() - t0
            with lock:
                if ok:
                    latencies.append(dt)
                    flagged[0] += exceeded
                    embedded[0] += n_embedded
                else:
                    errors.append(payload[:200].decode(errors="replace"))
        conn.close()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return summary(latencies, wall, sent=len(bodies) - len(todo), errors=errors,
                   deadline_exceeded=flagged[0], embedded_texts=embedded[0])


def summary(latencies: list[float], wall: float, **extra) -> dict:
    lat = np.asarray(latencies) * 1000
    return {"answered": int(lat.size), "throughput_rps": round(lat.size / wall, 2) if wall else 0,
            "p50_ms": round(float(np.percentile(lat, 50)), 2) if lat.size else None,
            "p99_ms": round(float(np.percentile(lat, 99)), 2) if lat.size else None,
            "wall_s": round(wall, 2), **extra}


def in_process(pools, selector, embedder=None) -> dict:
    """The same reads in this process, one after another (cold: the model embeds first)."""
    latencies = []
    t_all = time.perf_counter()
    for query, texts, vectors in pools:
        t0 = time.perf_counter()
        if embedder is not None:
            both = embedder.encode([query] + texts)
            vectors = both[0], both[1:]
        pool = CandidatePool(list(range(P)), vectors[0], vectors[1],
                             signals=pool_signals(texts, query))
        pool.select(selector, 10)
        latencies.append(time.perf_counter() - t0)
    return summary(latencies, time.perf_counter() - t_all, sent=len(pools), errors=[],
                   embedded_texts=(P + 1) * len(pools) if embedder is not None else 0)


def markdown(result: dict) -> str:
    """The rows of a written result as the Markdown table of docs/serve.md."""
    lines = ["| where | requests | answered | errors | texts embedded | req/s | p50 ms | p99 ms |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        lines.append(f"| {r['where']} | {r['requests']} | {r['answered']} | {len(r['errors'])} "
                     f"| {r.get('embedded_texts', '')} | {r['throughput_rps']} | {r['p50_ms']} "
                     f"| {r['p99_ms']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--markdown", metavar="JSON",
                    help="print a written result as docs/serve.md's table, and run nothing")
    ap.add_argument("--clients", type=int, nargs="+", default=[8, 32])
    ap.add_argument("--requests", type=int, default=128,
                    help="requests per row with vectors or a warm cache (default 128)")
    ap.add_argument("--cold-requests", type=int, default=64,
                    help="requests per cold-cache row (each embeds 201 texts; default 64)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="read threads per worker")
    ap.add_argument("--max-seconds", type=float, default=120, help="per row")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "serve"))
    args = ap.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(Path(args.markdown).read_text())))
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    rng = np.random.default_rng(0)
    query = "what did my sister say about the concert and the train?"
    warm_pools = [(query, texts_for(rng, f"warm{j}"), None) for j in range(8)]
    vec_pools = []
    for j in range(8):
        v = rng.normal(size=(P + 1, DIM)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        vec_pools.append((query, texts_for(rng, f"vec{j}"), (v[0], v[1:])))
    selector = ReadOptions(policy=DEFAULT_POLICY).selector()
    embedder = get_embedder("minilm")
    embedder.encode(["warm up"])

    rows = []
    service_args = ("--threads", str(args.threads), "--deadline", "120", "--cache-size", "100000",
                    "--embed-threads", str(max(1, (os.cpu_count() or 1) // args.workers)))
    with LocalService(*service_args, workers=args.workers, ready_timeout=180) as service:
        # the warm pools go through every worker (each keeps its own cache): fresh connections
        # until three rounds in a row embed nothing (bounded)
        warm_bodies = [body_bytes(q, t) for q, t, _ in warm_pools]
        clean = 0
        for _ in range(60):
            embedded = sum(service.post("/v1/rerank", json.loads(b))[1]["meta"]["mempursuit"][
                "embedded"] for b in warm_bodies)
            clean = clean + 1 if embedded == 0 else 0
            if clean == 3:
                break
        vec_bodies = [body_bytes(q, t, v) for q, t, v in vec_pools]
        b64_bodies = [body_bytes(q, t, v, b64=True) for q, t, v in vec_pools]
        run_clients(service.url, vec_bodies[:2] * 4, 2, 120)  # compile, connect
        for clients in args.clients:
            plan = [("vectors", [vec_bodies[i % 8] for i in range(args.requests)]),
                    ("vectors, base64", [b64_bodies[i % 8] for i in range(args.requests)]),
                    ("texts, warm", [warm_bodies[i % 8] for i in range(args.requests)]),
                    ("texts, cold", [body_bytes(f"{query} (cold{clients}-{i})",
                                                texts_for(rng, f"cold{clients}-{i}"))
                                     for i in range(args.cold_requests)])]
            for name, bodies in plan:
                row = run_clients(service.url, bodies, clients, args.max_seconds)
                rows.append({"where": f"service, {clients} clients", "requests": name, **row})
                print(f"  {rows[-1]['where']:<22} {name:<16} {row['throughput_rps']:>8} req/s",
                      file=sys.stderr)
    cold_pools = [(query, texts_for(rng, f"inproc{i}"), None) for i in range(args.cold_requests)]
    warm_vectors = [(q, t, (lambda b: (b[0], b[1:]))(embedder.encode([q] + t)))
                    for q, t, _ in warm_pools]
    for name, pools, emb in (("vectors", [vec_pools[i % 8] for i in range(args.requests)], None),
                             ("texts, warm", [warm_vectors[i % 8] for i in range(args.requests)],
                              None),
                             ("texts, cold", cold_pools, embedder)):
        rows.append({"where": "in process, 1 thread", "requests": name,
                     **in_process(pools, selector, emb)})

    header = (f"{'where':<22} {'requests':<16} {'answered':>8} {'errors':>6} {'embedded':>8} "
              f"{'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['where']:<22} {r['requests']:<16} {r['answered']:>8} {len(r['errors']):>6} "
              f"{r['embedded_texts']:>8} {r['throughput_rps']:>8} {r['p50_ms']:>8} {r['p99_ms']:>8}")
    lost = sum(r["sent"] - r["answered"] - len(r["errors"]) for r in rows)
    print(f"(200 documents per request, top_n 10, policy {DEFAULT_POLICY}; service: "
          f"{args.workers} workers x {args.threads} read thread; {os.cpu_count()} cores; "
          f"requests lost without an answer or an error: {lost})")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "load.json"
    path.write_text(json.dumps({
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "settings": {**vars(args), "documents": P, "dim": DIM, "top_n": 10,
                     "policy": DEFAULT_POLICY},
        "rows": rows, "lost": lost}, indent=2) + "\n")
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0 if lost == 0 and not any(r["errors"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
