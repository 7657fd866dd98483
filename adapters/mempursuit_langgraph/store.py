"""MemPursuit as the read policy of a LangGraph store (and so of LangMem).

Every LangGraph agent's long-term memory, and LangMem's memory tools, read through one call:
``BaseStore.search(namespace, query=..., limit=K)``, the ``K`` items most similar to the query.
:class:`MemPursuitStore` wraps any LangGraph store; every operation passes through unchanged
except a search with a ``query``, which asks the wrapped store for ``P`` candidates (same
namespace prefix and filter, offset 0), reorders them with the read policy and returns the
caller's ``[offset : offset + limit]``::

    store = MemPursuitStore(store)          # before builder.compile(store=store)
                                            # or create_search_memory_tool(..., store=store)

How a search is read (:meth:`MemPursuitStore.pool`):

1. The wrapped store's own search with ``limit = P`` gives the pool in native order (its
   filter, namespace and TTL rules apply as they do for the caller). The store embeds the query
   once; the adapter keeps that vector (it wraps ``store.embeddings`` in :class:`QueryCapture`,
   which passes every call through and remembers the vectors of queries being searched).
2. The pool's stored vectors are read from the store in one query (:mod:`.readers`); per item
   the field vector closest to the query (the one its max-pooled score came from).
3. Signals from what the store keeps: ``texts`` (the indexed fields), ``timestamps`` (a
   ``timestamp`` / ``created_at`` field of the value, else the item's ``created_at``),
   ``session_ids`` (a ``session_id`` / ``session`` field, else the namespace), ``speakers``
   (a ``speaker`` / ``role`` field, when the values have one), ``titles`` (a ``title`` field, else
   the stem of a ``file_name`` / ``file_path`` / ``source`` / ``url`` field, as every adapter
   derives it: ``mempursuit_core.adapter.document_title``; documents, for the default's
   ``titled`` and ``bridge``).

Items without a stored vector (put with ``index=False``, or gone between the two reads) are
never dropped: they follow the policy's picks in native order, as the stores themselves put
unscored items after the scored ones.

Private LangGraph details relied on (langgraph 1.x, checkpoint-sqlite 3.x, -postgres 3.x):
``store.embeddings`` is the store's ``Embeddings`` (InMemoryStore embeds queries with
``embed_query``, SQLite and PostgreSQL with ``embed_documents``); ``store.index_config`` holds
``fields``; the vector locations named in :mod:`.readers`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (BaseStore, GetOp, Op, PutOp, Result, SearchItem, SearchOp,
                                  get_text_at_path, tokenize_path)

from mempursuit_core.adapter import (PATH_KEYS, Fetched, ReadOptions, ReadTrace,
                                     ScopedTitleIndexes, StoredPool, TITLE_KEYS, TitleLookup,
                                     TraceSlot, aread_or_native, blank_query, did_you_mean,
                                     document_title, note_write,
                                     plain_match, pool_signals, read_or_native, recording,
                                     stored_pool)

from .ann import apool_search, pool_search  # ANN indexes: a full pool of P
from .readers import BUILTIN_POSTGRES, VectorAccessError, reader_for

__all__ = ["LangGraphPool", "MemPursuitStore", "QueryCapture", "SIGNAL_FIELDS"]

logger = logging.getLogger(__name__)

#: Value fields read as signals, first present wins (``MemPursuitStore(signal_fields=...)``).
SIGNAL_FIELDS: dict[str, tuple[str, ...]] = {
    "timestamps": ("timestamp", "created_at"),
    "session_ids": ("session_id", "session"),
    "speakers": ("speaker", "role"),
    "titles": TITLE_KEYS,
}

#: the store methods that write (the title indexes follow them; a wrapped ``batch`` with a put
#: counts too)
_WRITES = ("put", "aput", "delete", "adelete")
#: items read per page when listing a scope's titles
_PAGE = 1000


class QueryCapture(Embeddings):
    """The store's own ``Embeddings``, passed through, remembering the vectors of awaited texts.

    :meth:`expect` marks a query text as being searched; while it is, the vector the store
    computes for it (by ``embed_query`` or ``embed_documents``, sync or async) is kept, so the
    query is embedded once per search. Texts nobody awaits are not kept.
    """

    def __init__(self, inner: Any):
        self.inner = inner
        self._lock = threading.Lock()
        self._waiting: dict[str, int] = {}
        self._seen: dict[str, list[float]] = {}

    # stands for the store's Embeddings: compares, hashes and answers as it does
    def __eq__(self, other: object) -> bool:
        return self.inner == (other.inner if isinstance(other, QueryCapture) else other)

    def __hash__(self) -> int:
        return hash(self.inner)

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (a half-built or copied capture)
            raise AttributeError(name)
        return getattr(self.inner, name)

    def expect(self, text: str) -> None:
        with self._lock:
            self._waiting[text] = self._waiting.get(text, 0) + 1

    def take(self, text: str) -> list[float] | None:
        """The vector seen for ``text`` (None if the store did not embed it); ends the wait."""
        with self._lock:
            vec = self._seen.get(text)
            left = self._waiting.get(text, 1) - 1
            if left <= 0:
                self._waiting.pop(text, None)
                self._seen.pop(text, None)
            else:
                self._waiting[text] = left
            return vec

    def _keep(self, texts: Sequence[str], vectors: Sequence[Any]) -> None:
        with self._lock:
            if not self._waiting:
                return
            for text, vec in zip(texts, vectors):
                if text in self._waiting:
                    self._seen[text] = vec

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors = self.inner.embed_documents(texts)
        self._keep(texts, vectors)
        return vectors

    def embed_query(self, text: str) -> list[float]:
        vector = self.inner.embed_query(text)
        self._keep([text], [vector])
        return vector

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        vectors = await self.inner.aembed_documents(texts)
        self._keep(texts, vectors)
        return vectors

    async def aembed_query(self, text: str) -> list[float]:
        vector = await self.inner.aembed_query(text)
        self._keep([text], [vector])
        return vector


#: The wrapped store's pool for one search (the core's :class:`~mempursuit_core.adapter.StoredPool`
#: of ``SearchItem``: ``native``, ``candidates``, ``unscored``).
LangGraphPool = StoredPool


def _read_with_search(reader: Any, stored: Any) -> bool:
    """The vectors came with the pool search and no other reader is registered for the store."""
    return stored is not None and reader is not None and reader in BUILTIN_POSTGRES


# stored_pool's wording for this adapter; an item without stored vectors is unscored, never
# an error
_MESSAGES = {"none": None, "ragged": "the pool's stored vectors differ in dimension",
             "shape": "stored vectors of shape {shape} for a {d}-d query",
             "nonfinite": "the stored vector of {item.key!r} has NaN or infinite values"}


def _field_vector(item: SearchItem, fields: Any, qvec: np.ndarray) -> Any:
    """The item's stored vector: None where it has none; of several indexed fields, the one
    the store's max-pooled score came from (the best cosine to the query)."""
    if not fields:
        return None
    if len(fields) == 1:
        return fields[0]
    vecs = np.asarray(fields, dtype=np.float32)
    if vecs.ndim != 2 or vecs.shape[1] != qvec.shape[0]:
        raise VectorAccessError(f"item {item.key!r} has stored vectors of shape {vecs.shape}; "
                                f"the query's dimension is {qvec.shape[0]}")
    cos = (vecs @ qvec) / np.maximum(np.linalg.norm(vecs, axis=1), 1e-12)
    return vecs[int(np.argmax(cos))]


def _string_leaves(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _string_leaves(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _string_leaves(v)]
    return []


def _plain_field(value: Any, tokens: Any) -> Any:
    """``value[name]`` for a one-name path (no index, wildcard or braces), else None."""
    if isinstance(tokens, list) and len(tokens) == 1 and isinstance(value, dict):
        name = tokens[0]
        if name[:1] not in ("[", "{") and name != "*":
            return value.get(name)
    return None


def _first_fields(values: Sequence[Any], names: Sequence[str]) -> list[Any]:
    """Per value, the first of ``names`` it holds that is not None (None where none is)."""
    out = []
    for value in values:
        got = None
        if isinstance(value, Mapping):
            for name in names:
                if (got := value.get(name)) is not None:
                    break
        out.append(got)
    return out


class MemPursuitStore(BaseStore):
    """A LangGraph ``BaseStore`` whose query searches return what a read policy picks.

    Parameters
    ----------
    store : BaseStore
        The store to wrap (``InMemoryStore``, ``SqliteStore``, ``PostgresStore``, their async
        versions, or any store with a registered vector reader). Its ``embeddings`` attribute is
        replaced by a pass-through :class:`QueryCapture`.
    k : int or None, default None
        Budget ``K``: ``None`` returns ``limit`` items (the caller's argument); otherwise
        ``min(k, limit)``.
    pool : int, default 200
        ``P``: how many candidates to ask the store for (raised to ``offset + K``).
    policy : str or Selector, default ``mempursuit_core.DEFAULT_POLICY``
        ``"native"`` passes every search through unchanged (with ``k``: ``limit=min(k, limit)``).
    policy_options : dict, optional
        Selector options; other keyword arguments are taken as selector options too.
    strict : bool, default False
        False: on any fault (no readable vectors, a policy error) log one warning and return the
        store's own result; True: raise.
    signal_fields : dict, optional
        Overrides of :data:`SIGNAL_FIELDS`: per signal a value field or a sequence of them,
        first present wins (e.g. ``{"speakers": ("author",)}``). The first of ``titles``
        (``{"titles": ("name",)}``) is also the field the second read lists a scope's titles
        from and fetches by.

    Notes
    -----
    A store without a vector reader works at a cost: the pool's indexed texts are embedded
    with the store's own ``embeddings`` on every search (one warning; ``strict`` raises).
    With ``refresh_ttl``, the returned items' TTLs are refreshed by a ``get`` after the read
    (the pool read itself refreshes nothing).
    """

    __slots__ = ("store", "options", "selector", "signal_fields", "capture", "supports_ttl",
                 "ttl_config", "_warned", "_titles", "_trace")

    def __init__(self, store: BaseStore, *, k: int | None = None, pool: int | None = None,
                 policy: Any = None, policy_options: Mapping[str, Any] | None = None,
                 strict: bool | None = None,
                 signal_fields: Mapping[str, Sequence[str]] | None = None, **extra: Any):
        if not isinstance(store, BaseStore):
            raise TypeError(f"MemPursuitStore wraps a LangGraph BaseStore, got "
                            f"{type(store).__name__}")
        self.store = store
        self.options = ReadOptions.build("MemPursuitStore", k=k, pool=pool, policy=policy,
                                         policy_options=policy_options, strict=strict,
                                         own=self.__init__, **extra)
        self.selector = self.options.selector()
        self._trace = TraceSlot()
        self.signal_fields = _signal_fields(signal_fields)
        self.supports_ttl = store.supports_ttl
        self.ttl_config = store.ttl_config
        self._warned: set[str] = set()
        self._titles: ScopedTitleIndexes | None = None
        self.capture = self._install_capture(store)

    # ---------------------------------------------------------------- pass-through surface

    @staticmethod
    def _install_capture(store: Any) -> QueryCapture | None:
        inner = getattr(store, "embeddings", None)
        if inner is None or isinstance(inner, QueryCapture):
            return inner
        capture = QueryCapture(inner)
        try:
            store.embeddings = capture
        except AttributeError:
            return None
        return capture

    def __getattr__(self, name: str) -> Any:
        # setup(), start_ttl_sweeper(), conn, index_config, ...: the wrapped store's
        if name in MemPursuitStore.__slots__:  # not set yet (a half-built or copied wrapper)
            raise AttributeError(name)
        return getattr(self.store, name)

    def __setattr__(self, name: str, value: Any) -> None:
        # the wrapper's own fields here; any other attribute is the wrapped store's
        # (``store.MIGRATIONS = ...`` before ``setup()``, as LangGraph's own tests do)
        if name in MemPursuitStore.__slots__:
            object.__setattr__(self, name, value)
        else:
            setattr(self.store, name, value)

    def _reorders(self, op: Op) -> bool:
        return (isinstance(op, SearchOp) and bool(op.query and op.query.strip()) and op.limit > 0
                and not self.options.is_native
                and getattr(self.store, "embeddings", None) is not None)

    # The store's own methods for every call the wrapper does not change: a store may implement
    # them otherwise than through batch (AsyncPostgresStore's sync calls from worker threads go
    # through its batching queue on the event loop).

    def _unchanged(self, query: str | None, limit: int) -> bool:
        """True when a search is the store's own call (no query, or no policy and no ``k``);
        an empty or blank query string is said in one warning."""
        if query is None:
            return True
        if not query.strip():  # nothing to choose by: the store's own search (``k`` applies)
            if not self.options.is_native:
                blank_query(query, "MemPursuitStore")
            return self.options.k is None
        return self.options.k is None and not self._reorders(SearchOp((), None, limit, 0, query))

    def get(self, *args: Any, **kwargs: Any) -> Any:
        return self.store.get(*args, **kwargs)

    async def aget(self, *args: Any, **kwargs: Any) -> Any:
        return await self.store.aget(*args, **kwargs)

    def put(self, *args: Any, **kwargs: Any) -> None:
        return self.store.put(*args, **kwargs)

    async def aput(self, *args: Any, **kwargs: Any) -> None:
        return await self.store.aput(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> None:
        return self.store.delete(*args, **kwargs)

    async def adelete(self, *args: Any, **kwargs: Any) -> None:
        return await self.store.adelete(*args, **kwargs)

    def list_namespaces(self, *args: Any, **kwargs: Any) -> list[tuple[str, ...]]:
        return self.store.list_namespaces(*args, **kwargs)

    async def alist_namespaces(self, *args: Any, **kwargs: Any) -> list[tuple[str, ...]]:
        return await self.store.alist_namespaces(*args, **kwargs)

    def search(self, namespace_prefix: tuple[str, ...], /, *, query: str | None = None,
               limit: int = 10, **kwargs: Any) -> list[SearchItem]:
        with recording(self._trace, _item_key, list) as record:
            if self._unchanged(query, limit):
                got = self.store.search(namespace_prefix, query=query, limit=limit, **kwargs)
            else:
                got = super().search(namespace_prefix, query=query, limit=limit, **kwargs)
            record.done(got)
        return got

    async def asearch(self, namespace_prefix: tuple[str, ...], /, *, query: str | None = None,
                      limit: int = 10, **kwargs: Any) -> list[SearchItem]:
        with recording(self._trace, _item_key, list) as record:
            if self._unchanged(query, limit):
                got = await self.store.asearch(namespace_prefix, query=query, limit=limit,
                                               **kwargs)
            else:
                got = await super().asearch(namespace_prefix, query=query, limit=limit, **kwargs)
            record.done(got)
        return got

    @property
    def last_trace(self) -> ReadTrace | None:
        """What the last search on this thread did (a :class:`~mempursuit_core.trace.ReadTrace`:
        items by key), or None."""
        return self._trace.last

    def _budgeted(self, ops: Iterable[Op]) -> list[Op]:
        """The ops, with ``k`` applied to query searches (``min(k, limit)``)."""
        if self.options.k is None:
            return list(ops)
        return [op._replace(limit=self.options.budget(op.limit))
                if isinstance(op, SearchOp) and op.query else op for op in ops]

    def _written(self, ops: Sequence[Op]) -> None:
        if any(isinstance(op, PutOp) for op in ops):
            note_write(self.store)  # the title indexes follow puts and deletes

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = self._budgeted(ops)
        self._written(ops)
        ours = [i for i, op in enumerate(ops) if self._reorders(op)]
        if not ours:
            return self.store.batch(ops)
        results: list[Result] = [None] * len(ops)
        for i in ours:  # reads first, as the stores answer reads before a batch's writes
            results[i] = self._search(ops[i])
        rest = [i for i in range(len(ops)) if i not in ours]
        if rest:
            for i, r in zip(rest, self.store.batch([ops[i] for i in rest])):
                results[i] = r
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = self._budgeted(ops)
        self._written(ops)
        ours = [i for i, op in enumerate(ops) if self._reorders(op)]
        if not ours:
            return await self.store.abatch(ops)
        results: list[Result] = [None] * len(ops)
        found = await asyncio.gather(*(self._asearch(ops[i]) for i in ours))
        for i, r in zip(ours, found):
            results[i] = r
        rest = [i for i in range(len(ops)) if i not in ours]
        if rest:
            for i, r in zip(rest, await self.store.abatch([ops[i] for i in rest])):
                results[i] = r
        return results

    # ---------------------------------------------------------------- the read

    def _pool_op(self, op: SearchOp, size: int) -> SearchOp:
        return SearchOp(op.namespace_prefix, op.filter, size, 0, op.query, refresh_ttl=False)

    def _sizes(self, op: SearchOp) -> tuple[int, int]:
        return self.options.sizes(op.limit, op.offset)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        def ours() -> list[SearchItem]:
            budget, size = self._sizes(op)
            pool = self._read_pool(op, size)
            return self._choose(pool, op, budget)

        got = read_or_native(ours, lambda: self.store.batch([op])[0],
                             strict=self.options.strict, framework="LangGraph", log=logger,
                             trace=self._trace, ids=_item_key, result_items=list)
        if op.refresh_ttl and got and self.supports_ttl:
            self.store.batch([GetOp(i.namespace, i.key, refresh_ttl=True) for i in got])
        return got

    async def _asearch(self, op: SearchOp) -> list[SearchItem]:
        async def ours() -> list[SearchItem]:
            budget, size = self._sizes(op)
            pool = await self._aread_pool(op, size)
            return self._choose(pool, op, budget)

        async def native() -> list[SearchItem]:
            return (await self.store.abatch([op]))[0]

        got = await aread_or_native(ours, native, strict=self.options.strict,
                                    framework="LangGraph", log=logger, trace=self._trace,
                                    ids=_item_key, result_items=list)
        if op.refresh_ttl and got and self.supports_ttl:
            await self.store.abatch([GetOp(i.namespace, i.key, refresh_ttl=True) for i in got])
        return got

    def _choose(self, pool: StoredPool, op: SearchOp, budget: int) -> list[SearchItem]:
        return pool.choose(self.selector, budget, op.offset)

    def pool(self, namespace_prefix: tuple[str, ...], query: str, *, size: int | None = None,
             filter: dict[str, Any] | None = None) -> LangGraphPool:
        """The wrapped store's candidate pool for a search, with stored vectors and signals.

        This is the read every wrapped search makes (and what ``mempursuit eval --framework
        langgraph`` measures).

        Parameters
        ----------
        namespace_prefix : tuple of str
        query : str
        size : int, optional
            ``P`` (default the ``pool`` option).
        filter : dict, optional
            The store's filter, as for ``search``.

        Returns
        -------
        LangGraphPool

        Raises
        ------
        VectorAccessError
            When the store keeps no query embeddings or the vectors cannot be read.
        """
        op = SearchOp(tuple(namespace_prefix), filter, int(size or self.options.pool), 0, query)
        return self._read_pool(op, op.limit)

    async def apool(self, namespace_prefix: tuple[str, ...], query: str, *,
                    size: int | None = None, filter: dict[str, Any] | None = None
                    ) -> LangGraphPool:
        """:meth:`pool` through the store's async API."""
        op = SearchOp(tuple(namespace_prefix), filter, int(size or self.options.pool), 0, query)
        return await self._aread_pool(op, op.limit)

    def _read_pool(self, op: SearchOp, size: int) -> LangGraphPool:
        self._check_index()
        capture = self.capture
        if capture is not None:
            capture.expect(op.query)
        try:
            native, stored = pool_search(self.store, self._pool_op(op, size))
        finally:
            qvec = capture.take(op.query) if capture is not None else None
        qvec = self._query_vector(op.query, qvec)
        reader = reader_for(self.store)
        if not _read_with_search(reader, stored):
            keys = [(item.namespace, item.key) for item in native]
            if reader is not None:  # an async-only reader says to use asearch
                stored = reader(self.store, keys)
            else:
                stored = self._embed_pool(native)
        return self._assemble(native, stored, qvec, op,
                              lambda: self._title_lookup(op, qvec))

    async def _aread_pool(self, op: SearchOp, size: int) -> LangGraphPool:
        self._check_index()
        capture = self.capture
        if capture is not None:
            capture.expect(op.query)
        try:
            native, stored = await apool_search(self.store, self._pool_op(op, size))
        finally:
            qvec = capture.take(op.query) if capture is not None else None
        qvec = await self._aquery_vector(op.query, qvec)
        reader = reader_for(self.store)
        if not _read_with_search(reader, stored):
            keys = [(item.namespace, item.key) for item in native]
            if reader is not None:
                stored = await reader.acall(self.store, keys)
            else:
                stored = await self._aembed_pool(native)
        return self._assemble(native, stored, qvec, op,
                              lambda: self._title_lookup(op, qvec, aio=True))

    def _check_index(self) -> None:
        if getattr(self.store, "embeddings", None) is None:
            raise VectorAccessError(f"{type(self.store).__name__} has no embeddings (no "
                                    "index= config), so its searches are not by similarity")

    def _warn_once(self, what: str, message: str) -> None:
        if self.options.strict:
            raise VectorAccessError(message)
        if what not in self._warned:
            self._warned.add(what)
            logger.warning("%s", message)

    def _query_vector(self, query: str, qvec: Any) -> np.ndarray:
        if qvec is None:
            self._warn_once("query", f"{type(self.store).__name__} did not embed the query "
                            "through store.embeddings; mempursuit embeds it a second time")
            qvec = self.store.embeddings.embed_query(query)
        return np.asarray(qvec, dtype=np.float32).reshape(-1)

    async def _aquery_vector(self, query: str, qvec: Any) -> np.ndarray:
        if qvec is None:
            self._warn_once("query", f"{type(self.store).__name__} did not embed the query "
                            "through store.embeddings; mempursuit embeds it a second time")
            qvec = await self.store.embeddings.aembed_query(query)
        return np.asarray(qvec, dtype=np.float32).reshape(-1)

    def _no_reader(self) -> None:
        self._warn_once("reader", f"no stored-vector reader for {type(self.store).__module__}."
                        f"{type(self.store).__qualname__}: mempursuit embeds the pool's texts "
                        "with the store's embeddings on every search (P embeddings per search); "
                        "register one with mempursuit_langgraph.register_vector_reader")

    def _embed_pool(self, native: list[SearchItem]) -> dict:
        self._no_reader()
        texts = self.texts(native)
        vectors = self.store.embeddings.embed_documents(texts) if texts else []
        return {(i.namespace, i.key): [v] for i, v in zip(native, vectors)}

    async def _aembed_pool(self, native: list[SearchItem]) -> dict:
        self._no_reader()
        texts = self.texts(native)
        vectors = await self.store.embeddings.aembed_documents(texts) if texts else []
        return {(i.namespace, i.key): [v] for i, v in zip(native, vectors)}

    def _assemble(self, native: list[SearchItem], stored: Mapping, qvec: np.ndarray,
                  op: SearchOp, lookup: Any = None) -> LangGraphPool:
        """The checked pool; ``lookup()`` gives its second read (asked only for titles)."""
        rows = [_field_vector(item, stored.get((item.namespace, item.key)), qvec)
                for item in native]
        candidates, unscored = stored_pool(
            native, rows, qvec, native_scores=[i.score for i in native],
            signals=lambda kept: self.signals(kept, op.query, lookup), error=VectorAccessError,
            messages=_MESSAGES)
        return StoredPool(list(native), candidates, unscored)

    # ---------------------------------------------------------------- the second read

    def _off(self, why: str) -> None:
        if "follow" not in self._warned:
            self._warned.add("follow")
            logger.info("mempursuit: MemPursuitStore's second read (the titles its picks name, "
                        "fetched from the store) is off: %s", why)

    def _title_lookup(self, op: SearchOp, qvec: np.ndarray, aio: bool = False
                      ) -> TitleLookup | None:
        """The second read of a search, inside its scope: the namespace prefix and filter of
        the search, plus ``{key: t}`` per title, ``key`` the first field of
        ``signal_fields["titles"]`` (one ``store.batch`` of searches without a query: nothing
        is embedded), the stored vectors read back by key. None (said once) where it cannot be
        kept or read, or where that field is a path whose stem is the title."""
        from langgraph.store.base.batch import AsyncBatchedBaseStore

        store = self.store
        key = self.signal_fields["titles"][0]
        reader = reader_for(store)
        if reader is None or reader.read is None:
            self._off(f"no stored-vector reader for {type(store).__name__} (nothing is "
                      "embedded for it)")
            return None
        if aio and isinstance(store, AsyncBatchedBaseStore):
            self._off(f"{type(store).__name__} is read on the event loop the search awaits on")
            return None
        if key in PATH_KEYS:
            self._off(f"its titles are the stems of the {key!r} field, which a filter cannot "
                      "match (signal_fields={'titles': (...)} naming a title field first turns "
                      "it on)")
            return None
        scope = dict(op.filter or {})
        if key in scope:
            self._off(f"the search's filter already fixes {key!r}")
            return None
        prefix = tuple(op.namespace_prefix)
        if self._titles is None:
            self._titles = ScopedTitleIndexes(store, _WRITES)

        def titles() -> list[Any]:
            seen: dict[Any, Any] = {}  # (namespace, key) -> title
            while True:
                page = store.batch([SearchOp(prefix, op.filter, _PAGE, len(seen), None,
                                             refresh_ttl=False)])[0]
                new = {(i.namespace, i.key): (i.value or {}).get(key) for i in page}
                if len(page) < _PAGE or new.keys() <= seen.keys():  # (a store without offset)
                    return list({**seen, **new}.values())
                seen.update(new)

        def fetch(names: list[str], limit: int) -> Fetched:
            found = store.batch([SearchOp(prefix, {**scope, key: t}, limit, 0, None,
                                          refresh_ttl=False) for t in names])
            items = [i for page in found for i in page]
            stored = reader(store, [(i.namespace, i.key) for i in items])
            rows = [_field_vector(i, stored.get((i.namespace, i.key)), qvec) for i in items]
            items = [i for i, v in zip(items, rows) if v is not None]
            return Fetched.of(items, [v for v in rows if v is not None],
                              self.signals(items, op.query))

        agrees = plain_match(scope)

        def in_scope(item: Any) -> bool:
            return (tuple(item.namespace[:len(prefix)]) == prefix
                    and (agrees is None or agrees(item.value)))
        return TitleLookup(self._titles.index((prefix, repr(sorted(scope.items()))), titles),
                           fetch, key=lambda i: (tuple(i.namespace), i.key), in_scope=in_scope,
                           timeout=self.options.follow_timeout)

    # ---------------------------------------------------------------- signals

    def texts(self, items: Sequence[Any]) -> list[str]:
        """The indexed text of each item (the fields the store embeds; ``"$"``: every string)."""
        paths = self._indexed_paths()
        out = []
        for item in items:
            parts: list[str] = []
            for path, tokens in paths:
                if path == "$":
                    parts.extend(_string_leaves(item.value))
                elif isinstance(got := _plain_field(item.value, tokens), str):
                    parts.append(got)  # what get_text_at_path returns for a string leaf
                else:
                    parts.extend(str(t) for t in get_text_at_path(item.value, tokens))
            out.append(" ".join(parts))
        return out

    def _indexed_paths(self) -> list[tuple[str, Any]]:
        index = getattr(self.store, "index_config", None) or {}
        tokenized = index.get("__tokenized_fields")  # what the store really embeds
        if tokenized:  # (SqliteStore reads "text_fields", the others "fields")
            return [(p, t) for p, t in tokenized]
        fields = index.get("fields") or index.get("text_fields") or ["$"]
        fields = [fields] if isinstance(fields, str) else fields
        return [(p, p if p == "$" else tokenize_path(p)) for p in fields]

    def signals(self, items: Sequence[Any], query: str, lookup: Any = None):
        """The signals of a pool (lazy, :func:`mempursuit_core.signals.pool_signals`), with
        the second read (``lookup()``: a :class:`TitleLookup` or None) where the items carry
        titles."""
        f = self.signal_fields
        values = [i.value for i in items]
        stamps = _first_fields(values, f["timestamps"])
        stamps = [s if s is not None else i.created_at for s, i in zip(stamps, items)]
        sessions = _first_fields(values, f["session_ids"])
        sessions = [s if s is not None else ".".join(i.namespace)
                    for s, i in zip(sessions, items)]
        extra: dict[str, Any] = {"session_ids": sessions}
        speakers = _first_fields(values, f["speakers"])
        if any(s is not None for s in speakers):
            extra["speakers"] = speakers
        titles = [document_title(v, f["titles"]) for v in values]
        if any(t is not None for t in titles):
            extra["titles"] = titles
            found = lookup() if lookup is not None else None
            if found is not None:
                extra["title_lookup"] = found
        return pool_signals(self.texts(items), query, timestamps=stamps, **extra)


def _signal_fields(given: Mapping[str, Any] | None) -> dict[str, tuple[str, ...]]:
    """:data:`SIGNAL_FIELDS` with ``given``'s overrides, each a tuple of field names; a bad
    override is one ``TypeError`` / ``ValueError`` line naming the fix."""
    fields = dict(SIGNAL_FIELDS)
    if given is None:
        return fields
    if not isinstance(given, Mapping):
        raise TypeError("signal_fields takes {signal: field or fields}, e.g. "
                        f"{{'titles': ('name',)}}; got a {type(given).__name__}")
    for name, names in given.items():
        if name not in SIGNAL_FIELDS:
            raise ValueError(f"signal_fields: unknown signal {name!r}"
                             f"{did_you_mean(str(name), SIGNAL_FIELDS)}; known: "
                             f"{', '.join(SIGNAL_FIELDS)}")
        try:
            fields[name] = (names,) if isinstance(names, str) else tuple(names)
            error = (TypeError if not all(isinstance(n, str) for n in fields[name])
                     else None if fields[name] and all(n.strip() for n in fields[name])
                     else ValueError)
        except TypeError:
            error = TypeError
        if error is not None:
            raise error(f"signal_fields[{name!r}] must be a value field (a non-empty str) or a "
                        f"sequence of them, first present wins (e.g. ('name',)); got {names!r}")
    return fields


def _item_key(item: Any) -> str:
    """An item's short id in a trace: its key."""
    return item.key
