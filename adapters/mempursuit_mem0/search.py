"""Bind a read policy to a Mem0 ``Memory`` / ``AsyncMemory``: the search path of the adapter.

How a bound search runs (``Memory.search`` itself is untouched; only the retrieval step it
calls, ``_search_vector_store``, is wrapped on the instance):

1. Mem0's own ``_search_vector_store`` runs with ``limit = P`` (the pool size) and
   ``explain=True``: Mem0 embeds the query, applies filters, user / agent / run scoping,
   expiry and the threshold, adds its BM25 and entity signals where it has them, and returns
   its combined-score order. That list is the pool, in Mem0's native order.
2. The query embedding is the one Mem0 computed: the embedder's ``embed`` is wrapped once on
   the instance and hands the vector of the ``embed(query, "search")`` call back to the
   search that triggered it (a context variable, so threads and asyncio tasks don't mix).
3. The pool's **stored** vectors are read back from the vector store by memory id
   (:mod:`mempursuit_mem0.stores`). Nothing stored is ever re-embedded.
4. The selector (the settings' policy, resolved once: ``settings.selector()``) picks ``K``
   pool positions; the result is those pool items in that order, in Mem0's result format,
   each with ``metadata["mempursuit"] = {"policy", "step", "weight", "native_rank", "pool_size"}``.

Anything that fails in steps 2-4 (a missing vector, a store without vector access, a changed
Mem0 internal, a selector error) logs a warning with the reason and returns what Mem0's
native search returns for the caller's own arguments.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MethodType
from typing import Any, Callable

import numpy as np

from mempursuit_core.adapter import (CandidatePool, DEFAULT_FOLLOW_TIMEOUT, Fetched, PoolSignals,
                                     ReadTrace, ScopedTitleIndexes, TitleLookup, TraceSlot,
                                     aread_or_native, plain_match, read_or_native)

from .ann import full_pool  # ANN indexes: a full pool of P
from .settings import MEM0_FIELDS, MEM0_PROMOTED, TITLE_KEY, MemPursuitSettings
from .settings import title_key as _title_key
from .stores import (StoredVectors, VectorAccessError, _reader_for, fetch_stored_vectors,
                     is_qdrant)

__all__ = [
    "AdapterError",
    "PursuitBinding",
    "SearchTrace",
    "bind",
    "unbind",
    "get_binding",
    "wrap",
    "candidate_pool",
    "collect_pool",
    "PreparedPool",
    "META_KEY",
]

logger = logging.getLogger("mempursuit_mem0")

#: Key of the per-item annotation in a result's ``metadata``.
META_KEY = "mempursuit"

_BINDING_ATTR = "_mempursuit_binding"
_EMBED_MARK = "_mempursuit_capturing_embed"
_EMBED_ORIGINAL = "_mempursuit_original_embed"
_CLASS_ATTR = object()


class AdapterError(RuntimeError):
    """Something the adapter needs from Mem0 is missing or malformed."""


# ------------------------------------------------------------------ query-embedding capture


class _Capture:
    __slots__ = ("query", "vector", "calls", "seconds")

    def __init__(self, query: str):
        self.query = query
        self.vector: Any = None
        self.calls = 0
        self.seconds = 0.0


_CAPTURE: contextvars.ContextVar[_Capture | None] = contextvars.ContextVar(
    "mempursuit_mem0_capture", default=None
)


def _ensure_capturing(embedder: Any) -> None:
    """Wrap ``embedder.embed`` (on the instance, once) so a bound search sees the query vector.

    The wrapper calls the original and returns its result unchanged; inside a bound search it
    also keeps the vector of ``embed(query, "search")``. ``asyncio.to_thread`` copies the
    context, so Mem0's async path is covered too.
    """
    if getattr(embedder, _EMBED_MARK, False):
        return
    original = embedder.embed

    @functools.wraps(original)
    def embed(text, memory_action=None, *args, **kwargs):
        cap = _CAPTURE.get()
        if cap is None or memory_action != "search" or text != cap.query:
            return original(text, memory_action, *args, **kwargs)
        t0 = time.perf_counter()
        out = original(text, memory_action, *args, **kwargs)
        cap.seconds += time.perf_counter() - t0
        cap.calls += 1
        if cap.vector is None:
            cap.vector = out
        return out

    # what unbind() puts back: the instance's own attribute if it had one, else the class's
    setattr(embedder, _EMBED_ORIGINAL, vars(embedder).get("embed", _CLASS_ATTR))
    embedder.embed = embed
    setattr(embedder, _EMBED_MARK, True)


def _restore_embed(embedder: Any) -> None:
    if embedder is None or not getattr(embedder, _EMBED_MARK, False):
        return
    original = vars(embedder).pop(_EMBED_ORIGINAL, _CLASS_ATTR)
    if original is _CLASS_ATTR:
        vars(embedder).pop("embed", None)
    else:
        embedder.embed = original
    vars(embedder).pop(_EMBED_MARK, None)


# ------------------------------------------------------------------ signals


def _sparse_features(stored: StoredVectors, query_sparse) -> dict[str, np.ndarray]:
    """Dense ``(P, m)`` BM25 features over the pool's vocabulary, plus the query's ``(m,)``."""
    pairs = stored.sparse or []
    vocab_parts = [p[0] for p in pairs if p is not None]
    if query_sparse is not None:
        vocab_parts.append(query_sparse[0])
    vocab = np.unique(np.concatenate(vocab_parts)) if vocab_parts else np.zeros(0, np.int64)
    X = np.zeros((len(pairs), vocab.size), dtype=np.float32)
    for row, pair in enumerate(pairs):
        if pair is not None and pair[0].size:
            X[row, np.searchsorted(vocab, pair[0])] = pair[1]
    qv = np.zeros(vocab.size, dtype=np.float32)
    if query_sparse is not None and query_sparse[0].size:
        qv[np.searchsorted(vocab, query_sparse[0])] = query_sparse[1]
    return {"sparse": X, "query_sparse": qv, "sparse_terms": vocab}


def _query_sparse(vector_store: Any, query: str):
    """The query's BM25 sparse vector as Mem0's Qdrant store encodes it (or None)."""
    encode = getattr(vector_store, "_encode_bm25", None)
    if encode is None:
        return None
    from mem0.utils.lemmatization import lemmatize_for_bm25

    vec = encode(lemmatize_for_bm25(query))
    if vec is None:
        return None
    return (np.asarray(vec.indices, dtype=np.int64), np.asarray(vec.values, dtype=np.float32))


# ------------------------------------------------------------------ trace


@dataclass
class SearchTrace:
    """The timings and sizes of the last bound search on this thread (for benchmarks;
    :attr:`PursuitBinding.last_search`). What the read did, in every adapter's shape, is
    :attr:`PursuitBinding.last_trace`.

    ``timings`` (seconds): ``pool`` = Mem0's own retrieval of P candidates (query embedding,
    vector search, scoring), ``embed`` = the query-embedding part of it, ``fetch`` = reading the
    pool's stored vectors, ``select`` = the policy. ``fallback`` holds the reason when the native result was returned instead.
    """

    policy: str
    k: int
    pool_size: int = 0
    pool_ids: list[str] = field(default_factory=list)
    order: list[int] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    fallback: str | None = None
    query_embed_calls: int = 0


# ------------------------------------------------------------------ the binding


_REQUIRED_PARAMS = ("query", "filters", "limit")


def _memory_id(item: Any) -> str:
    """A memory's short id in a trace: Mem0's memory id."""
    return str(item["id"])


class PursuitBinding:
    """A read policy bound to one Mem0 memory instance (created by :func:`bind`)."""

    def __init__(self, settings: MemPursuitSettings):
        self.settings = settings
        # Built now so that a bad policy name or option fails at configuration time.
        self.selector = settings.selector()  # with budget_tokens: filled in the policy's order
        self.policy = settings.policy
        self.active = True
        self.inactive_reason: str | None = None
        self._local = threading.local()
        self._traces = TraceSlot()
        self._signatures: dict[Any, inspect.Signature] = {}
        self.is_async = False

    def __repr__(self) -> str:
        s = self.settings
        state = "active" if self.active else f"inactive: {self.inactive_reason}"
        return f"<PursuitBinding policy={s.policy!r} k={s.k} pool={s.pool} ({state})>"

    @property
    def last_trace(self) -> ReadTrace | None:
        """What the last bound search on the calling thread did (a
        :class:`~mempursuit_core.trace.ReadTrace`, as every adapter keeps it: memories by
        id), or None."""
        return self._traces.last

    @property
    def last_search(self) -> SearchTrace | None:
        """The timings and sizes of the last bound search on the calling thread."""
        return getattr(self._local, "trace", None)

    # -------------------------------------------------------------- installation

    def _install(self, memory: Any) -> None:
        try:
            self._try_install(memory)
        except AdapterError:
            raise
        except Exception as exc:  # e.g. a Mem0 that builds its parts in another order
            _restore_embed(getattr(memory, "embedding_model", None))
            vars(memory).pop("_search_vector_store", None)
            self._deactivate(f"cannot bind to this memory ({type(exc).__name__}: {exc}; a "
                             "changed Mem0 internal or construction order)")

    def _try_install(self, memory: Any) -> None:
        cls_method = getattr(type(memory), "_search_vector_store", None)
        if cls_method is None or not callable(cls_method):
            self._deactivate(
                "this Mem0 version has no Memory._search_vector_store (a changed internal)"
            )
            return
        try:
            sig = inspect.signature(cls_method)
        except (TypeError, ValueError) as exc:
            self._deactivate(f"cannot read the signature of _search_vector_store: {exc}")
            return
        missing = [p for p in _REQUIRED_PARAMS if p not in sig.parameters]
        if missing:
            self._deactivate(
                f"Memory._search_vector_store no longer takes {missing} (a changed internal)"
            )
            return
        vector_store = getattr(memory, "vector_store", None)
        if vector_store is None:
            self._deactivate("the memory has no vector_store yet (a changed Mem0 construction "
                             "order)")
            return
        try:
            _reader_for(vector_store)
        except VectorAccessError as exc:
            self._deactivate(str(exc))
            return
        if not hasattr(memory, "embedding_model") or not callable(
            getattr(memory.embedding_model, "embed", None)
        ):
            self._deactivate("the memory has no embedding_model.embed (a changed internal)")
            return
        self._signatures = {cls_method: sig}
        self.is_async = inspect.iscoroutinefunction(cls_method)
        _ensure_capturing(memory.embedding_model)
        impl = _search_async if self.is_async else _search_sync
        memory._search_vector_store = MethodType(impl, memory)

    def _deactivate(self, reason: str) -> None:
        if self.settings.strict:
            raise AdapterError(f"mempursuit cannot read this memory: {reason} (strict=True; "
                               "strict=False keeps Mem0's native results with a warning)")
        self.active = False
        self.inactive_reason = reason
        logger.warning(
            "mempursuit: %s; searches on this memory keep Mem0's native results", reason
        )

    # -------------------------------------------------------------- per search

    @staticmethod
    def _original(memory):
        """Mem0's retrieval step, looked up on the class at call time (so instrumentation that
        patches Mem0's class is honoured)."""
        return type(memory)._search_vector_store

    def _signature(self, fn) -> inspect.Signature:
        sig = self._signatures.get(fn)
        if sig is None:
            sig = inspect.signature(fn)
            missing = [p for p in _REQUIRED_PARAMS if p not in sig.parameters]
            if missing:
                raise AdapterError(f"Memory._search_vector_store no longer takes {missing}")
            self._signatures[fn] = sig
        return sig

    def _plan(self, memory, query, filters, limit, args, kwargs):
        """Bound arguments for the pool call, the caller's explain flag, K and P."""
        ba = self._signature(self._original(memory)).bind(memory, query, filters, limit, *args, **kwargs)
        ba.apply_defaults()
        explain = bool(ba.arguments.get("explain", False))
        k = self.settings.budget(int(limit))
        p = self.settings.pool_size(k)
        ba.arguments["limit"] = p
        if "explain" in ba.arguments:
            ba.arguments["explain"] = True  # per-item semantic / BM25 / entity scores
        return ba, explain, k, p

    def _read(self, ours: Callable[[], Any], native: Callable[[], Any], trace: SearchTrace):
        """``ours()``, or Mem0's own result with one warning (:func:`read_or_native`)."""
        def noted(reason: str) -> None:
            trace.fallback = reason

        return read_or_native(ours, native, strict=self.settings.strict, framework="Mem0",
                              log=logger, on_fallback=noted, strict_error=AdapterError,
                              trace=self._traces, ids=_memory_id, result_items=list)

    async def _aread(self, ours: Callable[[], Any], native: Callable[[], Any],
                     trace: SearchTrace):
        """:meth:`_read` for ``AsyncMemory`` (:func:`aread_or_native`)."""
        def noted(reason: str) -> None:
            trace.fallback = reason

        return await aread_or_native(ours, native, strict=self.settings.strict,
                                     framework="Mem0", log=logger, on_fallback=noted,
                                     strict_error=AdapterError, trace=self._traces,
                                     ids=_memory_id, result_items=list)

    def _reorder(
        self, memory, query: str, pool: list, k: int, p: int, cap: _Capture, explain: bool,
        trace: SearchTrace, scope: Mapping[str, Any] | None = None,
    ) -> list:
        trace.pool_size = len(pool) if isinstance(pool, list) else 0
        if cap.vector is None:
            raise AdapterError(
                "the query embedding Mem0 computed was not seen (embedding_model.embed(query, "
                "'search') was not called on the wrapped embedder)"
            )
        prepared = candidate_pool(memory, query, pool, cap.vector, trace=trace, scope=scope,
                                  follow_timeout=self.settings.follow_timeout,
                                  metadata_keys=self.settings.metadata_keys)
        if prepared is None:
            return []
        t0 = time.perf_counter()
        chosen = prepared.select(self.selector, k)
        trace.timings["select"] = time.perf_counter() - t0
        sel, order = chosen.selection, chosen.order
        weights = None if sel.weights is None else np.asarray(sel.weights, dtype=np.float64)
        trace.order = order.tolist()

        out = []
        for step, (pos, item) in enumerate(zip(order.tolist(), chosen.items)):
            meta = dict(item.get("metadata") or {})
            meta[META_KEY] = {
                "policy": self.policy,
                "step": step + 1,
                "weight": None if weights is None else float(weights[step]),
                "native_rank": pos + 1 if pos < len(pool) else None,  # None: a second read's
                "pool_size": len(pool),
            }
            item["metadata"] = meta
            if not explain:
                item.pop("score_details", None)
            out.append(item)
        return out

class PreparedPool(CandidatePool):
    """Mem0's pool for one query, ready for a selector (a :class:`CandidatePool`).

    Attributes
    ----------
    items : list of dict, length P
        Mem0's result dicts in Mem0's native (combined-score) order.
    ids : list of str, length P
        Their memory ids.
    vectors : ndarray of float32, shape (P, d)
        The stored vectors of ``ids``, read from the vector store.
    query_vector : ndarray of float64, shape (d,)
        The query embedding Mem0 computed.
    native_scores : ndarray of float64, shape (P,)
        Mem0's combined scores.
    signals : Mapping
        What Mem0 keeps about each memory: ``dense`` (semantic score), ``bm25`` and ``entity``
        (Mem0's normalised keyword score and entity boost; zeros where Mem0 has none),
        ``lexical`` (= ``bm25`` when Mem0's keyword channel ran), ``timestamps``
        (``created_at``), ``texts``, ``query_text``, ``speakers`` (the ``speaker`` metadata,
        else ``actor_id``, else ``role``), ``session_ids`` (``run_id``, else the
        ``session_id`` metadata; absent when no memory of the pool has either), ``titles``
        (the title metadata: ``title`` unless ``metadata_keys`` names another key; absent when
        no memory of the pool has one), and lexical features: ``sparse`` (P, m),
        ``query_sparse`` (m,), ``sparse_terms`` (m,) from the BM25 sparse vectors Mem0's Qdrant
        store keeps, else tf-idf over the pool's texts.
    """

    @property
    def ids(self) -> list[str]:
        return [str(item["id"]) for item in self.items]


def candidate_pool(memory: Any, query: str, pool: list, query_vector: Any, *,
                   trace: SearchTrace | None = None, scope: Mapping[str, Any] | None = None,
                   follow_timeout: float | None = DEFAULT_FOLLOW_TIMEOUT,
                   metadata_keys: Mapping[str, str] | None = None) -> PreparedPool | None:
    """Mem0's pool for ``query`` as a :class:`~mempursuit_core.readpath.CandidatePool`.

    The one read path of this adapter: a bound search and the evaluation harness
    (:func:`collect_pool`) both turn Mem0's retrieval result into a pool here.

    Parameters
    ----------
    memory : mem0.Memory or mem0.AsyncMemory
    query : str
    pool : list of dict, length P
        What Mem0's ``_search_vector_store`` returned (``explain=True``), native order.
    query_vector : sequence of float, shape (d,)
        The query embedding Mem0 computed for it.
    scope : mapping, optional
        The retrieval step's ``filters`` (user / agent / run ids and metadata filters, as the
        vector store takes them), ``threshold`` and ``show_expired``: the second read's scope
        (None: no second read).
    follow_timeout : float or None
        Seconds the second read may take.
    metadata_keys : mapping, optional
        ``{"titles": key}``: the metadata key that holds a memory's title, read for the
        ``titles`` signal and used by the second read (default ``title``; the settings'
        ``metadata_keys``).

    Returns
    -------
    PreparedPool or None
        None when the pool is empty. Stored vectors are read from the vector store by memory
        id (never re-embedded); signals as :class:`PreparedPool` lists.

    Raises
    ------
    AdapterError
        When the pool is not Mem0's result dicts, holds an id twice, or the stored vectors'
        dimension differs from the query's.
    TypeError, ValueError
        When ``metadata_keys`` is not ``{"titles": key}`` with a non-empty key.
    """
    key = _title_key(metadata_keys)
    if not isinstance(pool, list):
        raise AdapterError(f"Mem0 returned a {type(pool).__name__} pool, expected a list")
    if not pool:
        return None
    ids = []
    for item in pool:
        if not isinstance(item, dict) or "id" not in item:
            raise AdapterError("a pool item is not a Mem0 result dict with an 'id'")
        ids.append(str(item["id"]))
    if trace is not None:
        trace.pool_ids = ids
    if len(set(ids)) != len(ids):
        raise AdapterError("Mem0's pool holds the same memory id twice")
    q = np.asarray(query_vector, dtype=np.float64).reshape(-1)
    t0 = time.perf_counter()
    stored = fetch_stored_vectors(memory.vector_store, ids)
    if trace is not None:
        trace.timings["fetch"] = time.perf_counter() - t0
    if stored.dense.shape[1] != q.shape[0]:
        raise AdapterError(
            f"stored vectors have d={stored.dense.shape[1]} but the query embedding has "
            f"d={q.shape[0]}"
        )
    native_scores = np.array([float(item.get("score") or 0.0) for item in pool], dtype=np.float64)
    signals = _pool_signals(memory, query, pool, stored, key)
    if "titles" in signals and scope is not None:
        lookup = _title_lookup(memory, query, q, scope, follow_timeout, key)
        if lookup is not None:
            signals = signals.overlay({"title_lookup": lookup})
    return PreparedPool(pool, q, stored.dense, native_scores=native_scores, signals=signals)


# ------------------------------------------------------------------ the second read

# TITLE_KEY (settings): the metadata key that holds a memory's title unless the settings'
# metadata_keys={"titles": ...} names another (metadata is kept at the top of Mem0's payload)
#: the vector store methods that write (the title indexes follow them)
_WRITES = ("insert", "update", "delete", "reset", "delete_col")
_LISTED = 100_000  # titles read per scope at most
_NOTED: set = set()


def _result(record: Any, score: float | None) -> dict:
    """A vector store record as Mem0's search returns it (``_search_vector_store``'s format)."""
    payload = dict(getattr(record, "payload", None) or {})
    item = {"id": str(record.id), "memory": payload.get("data", ""), "hash": payload.get("hash"),
            "metadata": None, "score": score, "created_at": payload.get("created_at"),
            "updated_at": payload.get("updated_at")}
    item.update({key: payload[key] for key in MEM0_PROMOTED if key in payload})
    extra = {k: v for k, v in payload.items() if k not in MEM0_FIELDS}
    if extra:
        item["metadata"] = extra
    return item


def _expired(payload: Mapping) -> bool:
    try:
        from mem0.memory.main import _payload_is_expired
    except ImportError:  # an older Mem0: no expiry
        return False
    return bool(_payload_is_expired(payload))


def _listed(found: Any) -> list:
    """The records of a vector store's ``list`` (some wrap them in a tuple, as Mem0 unwraps)."""
    if isinstance(found, (tuple, list)) and found and isinstance(found[0], (list, tuple)):
        return list(found[0])
    return list(found or [])


def _by_title(store: Any, query: str, q: np.ndarray, filters: Mapping[str, Any],
              title_key: str, names: list, limit: int, *, batched: bool | None = None) -> list:
    """The vector store's ``search`` records for each title of ``names`` (its best ``limit``,
    title by title, in ``names`` order): what one ``{title_key: t}`` search per title returns.

    On Qdrant (``batched=None`` picks it; Mem0's default store, whose local mode scans every
    point's payload per filtered search) one search with ``{title_key: {"in": names}}`` and
    ``top_k = limit * len(names)`` gives the same records when it comes back short of that
    ``top_k`` (every match is in it); a full answer, where a title may have been cut off, falls
    back to one search per title."""
    def one(filt: Mapping[str, Any], top_k: int) -> list:
        return list(store.search(query=query, vectors=q.tolist(), top_k=top_k,
                                 filters={**filters, **filt}))

    if batched is None:
        batched = is_qdrant(store)
    if batched and len(names) > 1:
        top_k = limit * len(names)
        found = one({title_key: {"in": list(names)}}, top_k)
        if len(found) < top_k:
            per: dict = {t: [] for t in names}
            for r in found:
                value = (getattr(r, "payload", None) or {}).get(title_key)
                for t in (value if isinstance(value, list) else [value]):
                    if t in per and len(per[t]) < limit:
                        per[t].append(r)
            return [r for t in names for r in per[t]]
    return [r for t in names for r in one({title_key: t}, limit)]


def _title_lookup(memory: Any, query: str, q: np.ndarray, scope: Mapping[str, Any],
                  follow_timeout: float | None, title_key: str = TITLE_KEY
                  ) -> TitleLookup | None:
    """The second read of a search inside its scope: the vector store's own ``search`` with
    the retrieval step's filters (user / agent / run ids, metadata filters) plus
    ``{title_key: t}`` for each title (one call for them all on Qdrant: :func:`_by_title`),
    Mem0's threshold on the similarity and its expiry kept; the stored vectors read back by
    id. None (said once per store) where the filters already fix the title."""
    store = memory.vector_store
    filters = dict(scope.get("filters") or {})
    if title_key in filters:
        if id(store) not in _NOTED:
            _NOTED.add(id(store))
            logger.info("mempursuit: the second read through Mem0 is off: the search's "
                        "filters already fix %r", title_key)
        return None
    threshold = float(scope.get("threshold") or 0.0)
    show_expired = bool(scope.get("show_expired", False))
    indexes = getattr(store, "_mempursuit_titles", None)
    if not isinstance(indexes, ScopedTitleIndexes):
        indexes = ScopedTitleIndexes(store, _WRITES, framework=f"Mem0 ({type(store).__name__})")
        try:
            store._mempursuit_titles = indexes
        except AttributeError:
            pass

    def titles() -> list:
        return [(getattr(r, "payload", None) or {}).get(title_key)
                for r in _listed(store.list(filters=filters, top_k=_LISTED))]

    def fetch(names: list, limit: int) -> Fetched:
        found = _by_title(store, query, q, filters, title_key, names, limit)
        items = [_result(r, r.score) for r in found
                 if (r.score is None or r.score >= threshold)
                 and (show_expired or not _expired(r.payload or {}))]
        if not items:
            return Fetched([], np.zeros((0, q.shape[0])))
        stored = fetch_stored_vectors(store, [i["id"] for i in items])
        return Fetched.of(items, stored.dense,
                          _pool_signals(memory, query, items, stored, title_key),
                          native_scores=np.array([float(i["score"] or 0.0) for i in items]))
    agrees = plain_match(filters)
    # one index per scope and title key (the indexes are the store's, shared by its bindings)
    scoped = repr(sorted(filters.items(), key=str))
    return TitleLookup(indexes.index(scoped if title_key == TITLE_KEY else (title_key, scoped),
                                     titles), fetch,
                       key=lambda item: str(item["id"]),
                       in_scope=None if agrees is None else (
                           lambda item: agrees({**(item.get("metadata") or {}), **item})),
                       timeout=follow_timeout)


def _speaker(item: dict) -> str | None:
    """Who wrote a memory: its ``speaker`` metadata, else Mem0's ``actor_id`` (the message's
    name), else its ``role``."""
    meta = item.get("metadata")
    for value in ((meta or {}).get("speaker") if isinstance(meta, dict) else None,
                  item.get("actor_id"), item.get("role")):
        if isinstance(value, str) and value.strip():
            return value
    return None


def _session(item: dict) -> str | None:
    """The session of a memory: Mem0's ``run_id``, else its ``session_id`` metadata."""
    meta = item.get("metadata")
    for value in (item.get("run_id"),
                  (meta or {}).get("session_id") if isinstance(meta, dict) else None):
        if value is not None and str(value).strip():
            return str(value)
    return None


def _pool_signals(memory, query: str, pool: list, stored: StoredVectors,
                  title_key: str = TITLE_KEY) -> Mapping:
    details = [item.get("score_details") for item in pool]
    eager: dict[str, Any] = {}
    if all(isinstance(d, dict) for d in details):
        for key, name in (("semantic_score", "dense"), ("bm25_score", "bm25"), ("entity_boost", "entity")):
            eager[name] = np.array([float(d.get(key) or 0.0) for d in details], dtype=np.float64)
        if np.ptp(eager["bm25"]) > 0:  # Mem0's keyword channel ran (else every bm25_score is 0)
            eager["lexical"] = eager["bm25"]
    texts = [item.get("memory") for item in pool]
    lazy: dict[str, Callable[[], Any]] = {
        "query_text": lambda: query,
        "timestamps": lambda: [item.get("created_at") for item in pool],
        "texts": lambda: texts,
        "speakers": lambda: [_speaker(item) for item in pool],
    }
    sessions = [_session(item) for item in pool]
    if any(s is not None for s in sessions):
        eager["session_ids"] = sessions
    titles = [(item.get("metadata") or {}).get(title_key) if isinstance(
        item.get("metadata"), dict) else None for item in pool]
    if any(isinstance(t, str) and t for t in titles):
        eager["titles"] = titles
    cache: dict[str, Any] = {}
    if stored.sparse is not None and any(s is not None for s in stored.sparse):
        def features():
            return _sparse_features(stored, _query_sparse(memory.vector_store, query))
    else:  # no BM25 vectors in this store: tf-idf over the pool's texts, as the other adapters
        def features():
            from mempursuit_core.adapter import LexicalIndex

            sparse, qsparse, terms = LexicalIndex([str(t or "") for t in texts]).tfidf(
                range(len(texts)), query)
            return {"sparse": sparse, "query_sparse": qsparse, "sparse_terms": terms}

    def getter(key: str) -> Callable[[], Any]:
        def get():
            if not cache:
                cache.update(features())
            return cache[key]

        return get

    for key in ("sparse", "query_sparse", "sparse_terms"):
        lazy[key] = getter(key)
    return PoolSignals(lazy, values=eager)


def collect_pool(
    memory: Any, query: str, filters: Mapping[str, Any], size: int, *, threshold: float = 0.1,
    show_expired: bool = False, metadata_keys: Mapping[str, str] | None = None,
) -> PreparedPool | None:
    """Mem0's native pool of ``size`` for ``query``, with stored vectors and the query vector.

    Runs Mem0's own retrieval step (``Memory._search_vector_store``, what ``search`` calls)
    with ``limit=size``, so filters, scoping, expiry and ``threshold`` are Mem0's; reads the
    pool's stored vectors from the vector store. Works on bound and unbound sync memories.
    Raises instead of falling back (this is for evaluation and benchmarks).

    Parameters
    ----------
    memory : mem0.Memory
    query : str
    filters : mapping
        The search's filters (``user_id`` / ``agent_id`` / ``run_id`` and metadata filters).
    size : int
        The pool size P.
    threshold : float
        Mem0's threshold on the semantic score.
    show_expired : bool
        Keep expired memories, as Mem0's own argument.
    metadata_keys : mapping, optional
        ``{"titles": key}``, the settings' option: the metadata key of a memory's title
        (default ``title``), read for the ``titles`` signal and the second read.

    Returns
    -------
    PreparedPool or None
        :func:`candidate_pool` of Mem0's result; None when Mem0 finds nothing.
    """
    original = getattr(type(memory), "_search_vector_store")
    if inspect.iscoroutinefunction(original):
        raise TypeError("collect_pool needs a sync mem0.Memory (AsyncMemory: use search())")
    sig = inspect.signature(original)
    missing = [p for p in _REQUIRED_PARAMS if p not in sig.parameters]
    if missing:
        raise AdapterError(f"Memory._search_vector_store no longer takes {missing}")
    _title_key(metadata_keys)  # a bad option fails before Mem0 is asked
    wanted = {"query": query, "filters": dict(filters), "limit": int(size),
              "threshold": threshold, "explain": True, "show_expired": show_expired}
    ba = sig.bind(memory, **{name: value for name, value in wanted.items()
                             if name in sig.parameters})
    _ensure_capturing(memory.embedding_model)
    cap = _Capture(query)
    token = _CAPTURE.set(cap)
    try:
        with full_pool(memory, size):
            pool = original(*ba.args, **ba.kwargs)
    finally:
        _CAPTURE.reset(token)
    if pool and cap.vector is None:
        raise AdapterError("the query embedding Mem0 computed was not seen")
    return candidate_pool(memory, query, pool, cap.vector, scope=wanted,
                          metadata_keys=metadata_keys)


def _native_call(binding: PursuitBinding, memory, query, filters, limit, args, kwargs):
    return binding._original(memory)(memory, query, filters, limit, *args, **kwargs)


def _steps(binding: PursuitBinding, memory, query, filters, limit, args, kwargs,
           trace: SearchTrace):
    """A bound search, the same for ``Memory`` and ``AsyncMemory``: a generator that yields
    Mem0's own retrieval step for a pool of P (the caller runs it, awaiting it when async),
    receives its result and returns the reordering (a zero-argument callable)."""
    try:
        ba, explain, k, p = binding._plan(memory, query, filters, limit, args, kwargs)
    except Exception as exc:  # a changed call convention
        raise AdapterError(f"cannot map Mem0's search arguments: {exc}") from exc
    trace.k = k
    _ensure_capturing(memory.embedding_model)
    cap = _Capture(query)
    token = _CAPTURE.set(cap)
    t0 = time.perf_counter()
    try:
        with full_pool(memory, p):
            pool = yield lambda: binding._original(memory)(*ba.args, **ba.kwargs)
    except Exception as exc:
        raise AdapterError(f"Mem0's search for a pool of {p} failed: {exc!r}") from exc
    finally:
        _CAPTURE.reset(token)
    trace.timings["pool"] = time.perf_counter() - t0
    trace.timings["embed"] = cap.seconds
    trace.query_embed_calls = cap.calls
    scope = {name: ba.arguments.get(name) for name in ("filters", "threshold", "show_expired")}
    return functools.partial(binding._reorder, memory, query, pool, k, p, cap, explain, trace,
                             scope)


def _resume(steps, value=None, error: BaseException | None = None):
    """Send the pool (or throw its error) into :func:`_steps`; its reordering callable."""
    try:
        steps.throw(error) if error is not None else steps.send(value)
    except StopIteration as done:
        return done.value
    raise AdapterError("the bound search asked Mem0 for a second pool")  # never: one yield


def _start(binding: PursuitBinding, limit):
    trace = SearchTrace(policy=binding.policy, k=int(limit))
    binding._local.trace = trace
    return trace


def _search_sync(memory, query, filters, limit, *args, **kwargs):
    binding: PursuitBinding = getattr(memory, _BINDING_ATTR)
    trace = _start(binding, limit)

    def ours():
        steps = _steps(binding, memory, query, filters, limit, args, kwargs, trace)
        call = next(steps)
        try:
            pool = call()
        except Exception as exc:
            return _resume(steps, error=exc)()
        return _resume(steps, pool)()

    return binding._read(
        ours, lambda: _native_call(binding, memory, query, filters, limit, args, kwargs), trace)


async def _search_async(memory, query, filters, limit, *args, **kwargs):
    binding: PursuitBinding = getattr(memory, _BINDING_ATTR)
    trace = _start(binding, limit)

    async def ours():
        steps = _steps(binding, memory, query, filters, limit, args, kwargs, trace)
        call = next(steps)
        try:
            pool = await call()
        except Exception as exc:
            reorder = _resume(steps, error=exc)
        else:
            reorder = _resume(steps, pool)
        # Vector reads may hit a server; keep the event loop free as Mem0 does.
        out = await asyncio.to_thread(reorder)
        binding._local.trace = trace
        return out

    return await binding._aread(
        ours, lambda: _native_call(binding, memory, query, filters, limit, args, kwargs), trace)


# ------------------------------------------------------------------ public entry points


def _as_settings(settings: MemPursuitSettings | Mapping | None, options: dict) -> MemPursuitSettings:
    if settings is not None and options:
        raise TypeError("pass either a settings object / dict or keyword options, not both")
    if isinstance(settings, MemPursuitSettings):
        return settings
    if settings is None:
        return MemPursuitSettings.from_mapping(options)
    if isinstance(settings, Mapping):
        return MemPursuitSettings.from_mapping(settings)
    raise TypeError(f"settings must be MemPursuitSettings or a dict, got {type(settings).__name__}")


def bind(memory: Any, settings: MemPursuitSettings | Mapping | None = None, **options) -> PursuitBinding:
    """Bind a read policy to a Mem0 ``Memory`` or ``AsyncMemory`` instance (rebinding replaces).

    Parameters
    ----------
    memory : mem0.Memory or mem0.AsyncMemory
    settings : MemPursuitSettings or dict, optional
        Or the same as keyword options: ``k``, ``pool``, ``policy``, ``policy_options``,
        ``strict``, ``follow_timeout``, ``budget_tokens``, ``metadata_keys`` (e.g.
        ``{"titles": "name"}``: the metadata key that holds a memory's title).

    Returns
    -------
    PursuitBinding
        Inactive (with a logged warning) when the store's vectors cannot be read or Mem0's
        internals differ from what the adapter knows; the memory then searches natively.
    """
    from . import _need_mem0

    _need_mem0("wrap() / bind()")  # without Mem0, that (not the argument's type) is the problem
    if not (callable(getattr(memory, "search", None)) and hasattr(memory, "vector_store")):
        raise TypeError("mempursuit_mem0.wrap() / bind() take a mem0 Memory or AsyncMemory "
                        f"(e.g. Memory.from_config(config)), got {type(memory).__name__}")
    binding = PursuitBinding(_as_settings(settings, options))
    unbind(memory)
    setattr(memory, _BINDING_ATTR, binding)
    binding._install(memory)
    return binding


def unbind(memory: Any) -> None:
    """Remove a binding: the memory searches natively again, with its own ``embed`` back."""
    if getattr(memory, _BINDING_ATTR, None) is not None:
        setattr(memory, _BINDING_ATTR, None)
    if "_search_vector_store" in vars(memory):
        del memory._search_vector_store
    _restore_embed(getattr(memory, "embedding_model", None))


def get_binding(memory: Any) -> PursuitBinding | None:
    """The binding of a memory, or None."""
    return getattr(memory, _BINDING_ATTR, None)


def wrap(memory: Any, settings: MemPursuitSettings | Mapping | None = None, **options) -> Any:
    """One line of code: ``memory = mempursuit_mem0.wrap(memory, k=10, pool=200)``.

    Binds (see :func:`bind`) and returns the same memory object.
    """
    bind(memory, settings, **options)
    return memory
