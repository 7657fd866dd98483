"""Counters and a latency histogram in the Prometheus text format (version 0.0.4), for
``GET /metrics``; no client library. The numbers are the answering process's own: with several
workers a scrape sees one of them (scrape each pod or replica, as Kubernetes does)."""

from __future__ import annotations

import threading
from collections import defaultdict

__all__ = ["Metrics"]

#: Upper bounds (seconds) of the request latency histogram's buckets.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """Thread-safe counters of one process."""

    def __init__(self):
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, int], int] = defaultdict(int)
        self.counters = {"documents": 0, "embedded_texts": 0, "cache_hits": 0,
                         "deadline_exceeded": 0}
        self.buckets = [0] * len(BUCKETS)
        self.latency_sum = 0.0
        self.latency_count = 0

    def observe(self, path: str, status: int, seconds: float, **counts: int) -> None:
        """One answered request: its path, status, latency and counts (``documents``,
        ``embedded_texts``, ``cache_hits``, ``deadline_exceeded``)."""
        with self._lock:
            self.requests[(path, status)] += 1
            for key, n in counts.items():
                self.counters[key] += int(n)
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    self.buckets[i] += 1
            self.latency_sum += seconds
            self.latency_count += 1

    def render(self, gauges: dict[str, tuple[float, str]]) -> str:
        """The exposition text; ``gauges``: ``{name: (value, help)}`` read at scrape time."""
        out = []

        def family(name, kind, help_):
            out.append(f"# HELP {name} {help_}")
            out.append(f"# TYPE {name} {kind}")

        with self._lock:
            family("mempursuit_requests_total", "counter", "HTTP requests answered, by path and status.")
            for (path, status), n in sorted(self.requests.items()):
                out.append(f'mempursuit_requests_total{{path="{path}",status="{status}"}} {n}')
            helps = {"documents": "Documents reranked.",
                     "embedded_texts": "Texts embedded (cache misses, query included).",
                     "cache_hits": "Texts whose embedding came from the cache.",
                     "deadline_exceeded": "Requests answered in input order at their deadline."}
            for key, n in self.counters.items():
                family(f"mempursuit_{key}_total", "counter", helps[key])
                out.append(f"mempursuit_{key}_total {n}")
            family("mempursuit_request_seconds", "histogram", "Rerank request latency.")
            for bound, n in zip(BUCKETS, self.buckets):
                out.append(f'mempursuit_request_seconds_bucket{{le="{bound}"}} {n}')
            out.append(f'mempursuit_request_seconds_bucket{{le="+Inf"}} {self.latency_count}')
            out.append(f"mempursuit_request_seconds_sum {self.latency_sum:.6f}")
            out.append(f"mempursuit_request_seconds_count {self.latency_count}")
        for name, (value, help_) in gauges.items():
            family(name, "gauge", help_)
            out.append(f"{name} {value}")
        return "\n".join(out) + "\n"
