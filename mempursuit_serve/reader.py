"""The read behind the endpoint: a checked request -> the policy's order, through the core's
public read path (:class:`mempursuit_core.adapter.CandidatePool`), with a bounded cache of
text embeddings and of built selectors. No Starlette here: the app runs :meth:`Reader.read`
in a worker thread under the request's deadline."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from mempursuit_core.adapter import CandidatePool, ReadOptions, get_embedder, pool_signals

from .request import BadRequest, RerankRequest

__all__ = ["EmbeddingCache", "ReadResult", "Reader", "relevance_scores"]


def relevance_scores(n: int) -> list[float]:
    """The ``relevance_score`` of the policy's ``n`` picks: ``1 / (1 + rank)``, rank 0-based,
    so the scores fall strictly with the policy's order (1, 0.5, 0.333...). They are ranks,
    not similarities: compare them within one response only."""
    return [1.0 / (1.0 + r) for r in range(n)]


class EmbeddingCache:
    """A bounded, thread-safe map text -> vector, least recently used out.

    Parameters
    ----------
    size : int
        Texts kept; 0 keeps none.
    """

    def __init__(self, size: int):
        self.size = size
        self._data: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._data)

    def get_many(self, texts: list[str]) -> list[np.ndarray | None]:
        """The cached vector of each text, or None."""
        out = []
        with self._lock:
            for t in texts:
                v = self._data.get(t)
                if v is not None:
                    self._data.move_to_end(t)
                out.append(v)
        return out

    def put_many(self, texts: list[str], vectors: np.ndarray) -> None:
        if not self.size:
            return
        with self._lock:
            for t, v in zip(texts, vectors):
                self._data[t] = v
                self._data.move_to_end(t)
            while len(self._data) > self.size:
                self._data.popitem(last=False)


@dataclass
class ReadResult:
    """What one read did.

    Attributes
    ----------
    order : list of int
        Positions in the request's documents, the policy's order, length ``top_n``.
    policy : str
    embedded : int
        Texts embedded for this request (query included).
    cache_hits : int
        Texts whose vector came from the cache.
    """

    order: list[int]
    policy: str
    embedded: int = 0
    cache_hits: int = 0


class Reader:
    """Reads requests with one embedder, one embedding cache and a bounded selector cache.

    Parameters
    ----------
    default_policy : str
    embedder : str
        A :func:`~mempursuit_core.adapter.get_embedder` name, loaded on first use.
    cache_size, selector_cache : int
    embed_threads : int, optional
        The embedder's threads (default: every core).
    """

    def __init__(self, default_policy: str, embedder: str = "minilm", *, cache_size: int = 20_000,
                 selector_cache: int = 32, embed_threads: int | None = None):
        self.default_policy = default_policy
        self.embedder_name = embedder
        self.embed_options = {} if embed_threads is None else {"threads": embed_threads}
        self.cache = EmbeddingCache(cache_size)
        self._embedder = None
        self._embedder_lock = threading.Lock()
        self._selectors: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._selector_lock = threading.Lock()
        self.selector_cache = selector_cache

    # -- the pieces ----------------------------------------------------------------------
    def embedder(self):
        """The embedder, loaded once (its ONNX session is shared by every thread).

        Raises
        ------
        BadRequest
            503 when it cannot be loaded (``[embed]`` not installed).
        """
        with self._embedder_lock:
            if self._embedder is None:
                try:
                    embedder = get_embedder(self.embedder_name, **self.embed_options)
                    embedder.encode(["warm up"])  # the session, before any other thread
                except (ImportError, OSError, ValueError) as exc:
                    raise BadRequest(503, f"no embedder in this service ({exc}): send "
                                          "query_vector and vectors") from None
                self._embedder = embedder
            return self._embedder

    def selector(self, policy: str | None, options: dict[str, Any],
                 budget_tokens: int | None = None):
        """The built selector for ``(policy, options, budget_tokens)``, resolved once and kept
        (bounded).

        Raises
        ------
        BadRequest
            422 for an unknown policy or options it refuses.
        """
        name = policy or self.default_policy
        try:
            key = (name, json.dumps(options, sort_keys=True), budget_tokens)
        except (TypeError, ValueError):
            raise BadRequest(422, "policy_options must be JSON values") from None
        with self._selector_lock:
            found = self._selectors.get(key)
            if found is not None:
                self._selectors.move_to_end(key)
                return found
        try:
            selector = ReadOptions(policy=name, policy_options=options,
                                   budget_tokens=budget_tokens).selector()
        except KeyError as exc:  # UnknownNameError: the message lists the registered names
            raise BadRequest(422, str(exc)) from None
        except (TypeError, ValueError) as exc:
            raise BadRequest(422, f"policy {name!r}: {exc}") from None
        with self._selector_lock:
            self._selectors[key] = selector
            while len(self._selectors) > self.selector_cache:
                self._selectors.popitem(last=False)
        return selector

    def embed(self, texts: list[str]) -> tuple[np.ndarray, int, int]:
        """``texts`` embedded, cached vectors reused: ``(vectors, embedded, cache hits)``."""
        found = self.cache.get_many(texts)
        hits = sum(v is not None for v in found)
        missing = sorted({t for t, v in zip(texts, found) if v is None})
        if missing:
            fresh = self.embedder().encode(missing)
            self.cache.put_many(missing, fresh)
            new = dict(zip(missing, fresh))
            found = [new[t] if v is None else v for t, v in zip(texts, found)]
        return np.stack(found), len(missing), hits

    # -- the read ------------------------------------------------------------------------
    def read(self, req: RerankRequest, *, on_progress: Callable[[], None] | None = None
             ) -> ReadResult:
        """The policy's ``top_n`` picks from the request's documents.

        Raises
        ------
        BadRequest
            Unknown policy, bad options, vectors the policy refuses.
        """
        selector = self.selector(req.policy, req.policy_options, req.budget_tokens)
        name = req.policy or self.default_policy
        if not req.texts:
            return ReadResult([], name)
        embedded = hits = 0
        if req.vectors is not None:
            query_vector, vectors = req.query_vector, req.vectors
        else:
            both, embedded, hits = self.embed([req.query] + req.texts)
            query_vector, vectors = both[0], both[1:]
        extra = {} if req.titles is None else {"titles": list(req.titles)}
        pool = CandidatePool(list(range(len(req.texts))), query_vector, vectors,
                             signals=pool_signals(req.texts, req.query, **extra))
        try:
            order = pool.select(selector, req.top_n).items
        except ValueError as exc:
            raise BadRequest(422, f"policy {name!r} refused this pool: {exc}") from None
        return ReadResult([int(i) for i in order], name, embedded, hits)
