"""MemPursuit as a Semantic Kernel vector store collection.

A Semantic Kernel collection (``InMemoryCollection``, ``ChromaCollection``,
``QdrantCollection``, ...) answers ``await collection.search(values, top=K)`` with its ``K``
nearest records. :class:`MemPursuitCollection` wraps one: its ``search`` reads a pool of
``P = 200`` from the same collection with ``include_vectors=True`` (the stored vectors, not
re-embedded), and returns the ``K`` records the read policy picks, most useful first, as the
same ``KernelSearchResults`` of ``VectorSearchResult``::

    collection = MemPursuitCollection(InMemoryCollection(record_type=Memory, ...), k=10)
    results = await collection.search("where does Alice live?", top=10)
    async for result in results.results:
        print(result.record.content, result.score)

Everything else (``upsert``, ``get``, ``delete``, ``ensure_collection_exists``, ``async with``,
...) is the wrapped collection's own.

The query vector: ``vector=`` when given; else ``values`` embedded once with the collection's
embedding generator (the vector field's, else the collection's), and that vector is what the
pool read searches with (the store does not embed it again). A collection that embeds inside
the store (Chroma with its own ``embedding_func``) gives no vectors: the read falls back to the
collection's own ``search`` with one warning.

Signals (:func:`mempursuit_core.adapter.metadata_signals` on the records' data fields): the
texts (``text_field``: default the first full-text-indexed ``str`` data field, else one named
``content`` / ``text`` / ``memory``, else the first ``str`` data field); ``timestamps`` /
``speakers`` / ``session_ids`` from the data fields in ``metadata_keys``; ``titles`` from a
``title`` (or ``file_name`` / ``source`` / ``url``) field. The stores' scores are distances or
similarities depending on the store, so none are handed over.

Budget rule: ``search``'s ``top`` keeps its meaning; ``k`` only caps it (``K = min(k, top)``);
``skip`` skips the policy's first ``skip`` picks (the pool is ``max(P, skip + K)``).
``policy="native"`` calls the collection's own ``search`` with the caller's arguments.
"""

from __future__ import annotations

import ast
import asyncio
import concurrent.futures
import dataclasses
import inspect
import json
import logging
from typing import Any, Callable, Dict, List, Mapping, Optional

import numpy as np
from semantic_kernel.data._shared import KernelSearchResults
from semantic_kernel.data.vector import VectorSearchResult

from mempursuit_core.adapter import (DEFAULT_METADATA_KEYS, CandidatePool, Fetched, ReadOptions,
                                     ReadTrace, ScopedTitleIndexes, TitleLookup, TraceSlot,
                                     aread_or_native, blank_query, check_int, metadata_signals,
                                     pool_signals)

__all__ = ["DEFAULT_METADATA_KEYS", "MemPursuitCollection", "SemanticKernelReadError"]

logger = logging.getLogger(__name__)

#: Data field names taken as the memory's text when none is full-text indexed.
TEXT_FIELDS = ("content", "text", "memory", "document")

#: the collection methods that write (the title indexes follow them)
_WRITES = ("upsert", "delete", "ensure_collection_deleted")
#: records listed at most when reading a scope's titles (one search with the scope's filter)
_LISTED = 100_000


def _scoped_filter(scope: Any, key: str) -> Optional[Callable[[str], str]]:
    """``title -> filter``: the caller's filter (None, a lambda, or its source as a string) and
    ``x.<key> == title`` as one lambda source string, which every store reads as one condition
    (a list of filters is an OR for ``InMemoryCollection`` and an AND for Chroma); None where
    the filter's source cannot be read as one lambda of literals (a lambda that reads a
    variable: its value is not in its source)."""
    if scope is None:
        return lambda title: f"lambda x: x.{key} == {title!r}"
    try:
        source = scope if isinstance(scope, str) else inspect.getsource(scope).strip()
        lambdas = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Lambda)]
    except (OSError, TypeError, SyntaxError):
        return None
    if len(lambdas) != 1 or len(lambdas[0].args.args) != 1:
        return None
    arg = lambdas[0].args.args[0].arg
    if any(isinstance(n, ast.Name) and n.id != arg for n in ast.walk(lambdas[0].body)):
        return None  # a variable of the caller's code: its value is not in the source
    body = ast.unparse(lambdas[0].body)
    return lambda title: f"lambda {arg}: ({body}) and {arg}.{key} == {title!r}"


def _blocking(make: Callable[[], Any]) -> Any:
    """``make()``'s coroutine run to its end from sync code (a thread of its own when this one
    runs an event loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with concurrent.futures.ThreadPoolExecutor(1) as one:
        return one.submit(lambda: asyncio.run(make())).result()


class SemanticKernelReadError(RuntimeError):
    """The collection's records cannot be read as a pool (no vectors, no text, no generator)."""


def _value(record: Any, name: str) -> Any:
    if isinstance(record, Mapping):
        return record.get(name)
    return getattr(record, name, None)


async def _iterate(results: Any) -> List[Any]:
    out = []
    async for item in results:
        out.append(item)
    return out


async def _desync(items: List[Any]):
    for item in items:
        yield item


class MemPursuitCollection:
    """A Semantic Kernel collection whose ``search`` returns the read policy's ``top``.

    Parameters
    ----------
    collection : VectorSearch
        A Semantic Kernel vector store collection (``InMemoryCollection``,
        ``ChromaCollection``, ``QdrantCollection``, ...).
    k : int or None, default None
        A cap on ``search``'s ``top`` (the shared read option): ``K = min(k, top)``.
    pool : int, default 200
        ``P``: the pool read asks the collection for ``max(P, skip + K)`` records.
    policy : str or Selector, default ``mempursuit_core.DEFAULT_POLICY``
        ``"native"`` is the collection's own ``search``.
    policy_options : dict, optional
        Selector options; other keyword arguments are taken as selector options too.
    strict : bool, default False
        False: on any failure, one warning and the collection's own ``search``; True raises.
    text_field : str, optional
        The data field holding the memory's text (default: see the module docstring).
    metadata_keys : dict, optional
        ``{signal: data field}``, default :data:`DEFAULT_METADATA_KEYS`.
    """

    def __init__(self, collection: Any, *, k: Optional[int] = None, pool: Optional[int] = None,
                 policy: Any = None, policy_options: Optional[Mapping[str, Any]] = None,
                 strict: Optional[bool] = None, text_field: Optional[str] = None,
                 metadata_keys: Optional[Mapping[str, str]] = None, **options: Any):
        if not callable(getattr(collection, "search", None)) or not hasattr(collection,
                                                                            "definition"):
            raise TypeError("MemPursuitCollection wraps a Semantic Kernel vector store "
                            "collection (with search and definition), got "
                            f"{type(collection).__name__}")
        if text_field is not None and not isinstance(text_field, str):
            raise TypeError(f"MemPursuitCollection: text_field= takes a data field name, got "
                            f"{text_field!r}")
        self._options = ReadOptions.build("MemPursuitCollection", k=k, pool=pool, policy=policy,
                                          policy_options=policy_options, strict=strict,
                                          own=self.__init__, **options)
        self._selector = self._options.selector()  # resolved once, when the options were built
        self.collection = collection
        self.text_field = text_field or self._default_text_field(collection.definition)
        self.metadata_keys = dict(DEFAULT_METADATA_KEYS if metadata_keys is None
                                  else metadata_keys)
        self.k, self.pool = self._options.k, self._options.pool
        self.policy, self.strict = self._options.policy, self._options.strict
        self.policy_options = dict(self._options.policy_options)
        self._titles: Optional[ScopedTitleIndexes] = None
        self._trace = TraceSlot()
        self._noted = False

    @staticmethod
    def _default_text_field(definition: Any) -> Optional[str]:
        fields = list(getattr(definition, "data_fields", []) or [])
        strs = [f for f in fields if (f.type_ or "str") == "str"]
        for f in strs:
            if f.is_full_text_indexed:
                return f.name
        names = [f.name for f in fields]
        for name in TEXT_FIELDS:
            if name in names:
                return name
        return strs[0].name if strs else None

    # -- everything else is the collection's own ----------------------------------------------

    def __getattr__(self, name: str) -> Any:
        if name in ("collection", "_titles", "_noted"):  # not set yet (a failed __init__)
            raise AttributeError(name)
        return getattr(self.collection, name)

    async def __aenter__(self) -> "MemPursuitCollection":
        await self.collection.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self.collection.__aexit__(*exc)

    # -- the pool -------------------------------------------------------------------------------

    async def query_vector(self, values: Any, vector_property_name: Optional[str] = None
                           ) -> np.ndarray:
        """``values`` embedded with the collection's embedding generator (the vector field's,
        else the collection's), as the collection embeds them for a search."""
        field = self.collection.definition.try_get_vector_field(vector_property_name)
        if field is None:
            raise SemanticKernelReadError(f"MemPursuitCollection: no vector field "
                                          f"{vector_property_name!r} in the data model")
        generator = field.embedding_generator or self.collection.embedding_generator
        if generator is None:
            raise SemanticKernelReadError("MemPursuitCollection: the collection has no "
                                          "embedding generator to embed the query with: pass "
                                          "vector= or give it embedding_generator=")
        text = values if isinstance(values, str) else json.dumps(values)
        out = await generator.generate_embeddings(texts=[text])
        return np.asarray(out, dtype=np.float32).reshape(1, -1)[0]

    async def candidate_pool(self, values: Any = None, *, vector: Any = None,
                             vector_property_name: Optional[str] = None, filter: Any = None,
                             size: Optional[int] = None, include_total_count: bool = False,
                             **kwargs: Any) -> CandidatePool[VectorSearchResult]:
        """The collection's own top ``size`` (default ``pool``) for the query, with their stored
        vectors (``include_vectors=True``), the query vector and the signals.

        Returns
        -------
        CandidatePool
            ``items`` the ``VectorSearchResult`` objects (the collection's order), ``vectors``
            (P, d), ``query_vector`` (d,), no native scores.

        Raises
        ------
        SemanticKernelReadError
            A record without a vector or text, no vector field, no embedding generator.
        """
        return (await self._read(values, vector=vector, vector_property_name=vector_property_name,
                                 filter=filter, size=size,
                                 include_total_count=include_total_count, **kwargs))[0]

    async def _read(self, values: Any, *, vector: Any, vector_property_name: Optional[str],
                    filter: Any, size: Optional[int], include_total_count: bool, **kwargs: Any):
        """The pool and the total count the store reported for its read."""
        size = self.pool if size is None else check_int("size", size)
        qv = (np.asarray(vector, dtype=np.float32) if vector is not None
              else await self.query_vector(values, vector_property_name))
        if qv.ndim != 1:
            raise ValueError(f"the query vector must be one vector, got shape {qv.shape}")
        found = await self.collection.search(
            values, vector=qv.tolist(), vector_property_name=vector_property_name,
            filter=filter, top=size, skip=0, include_total_count=include_total_count,
            include_vectors=True, **kwargs)
        hits = await _iterate(found.results)
        vectors = self._stored_vectors(hits, vector_property_name)
        bad = sum(v is None or isinstance(v, str) or len(v) == 0 for v in vectors)
        if bad:
            raise SemanticKernelReadError(
                f"MemPursuitCollection: {bad} of {len(hits)} records came without their stored "
                "vector (a store that embeds inside itself, e.g. Chroma with its own "
                "embedding_func, returns none): give the collection an embedding_generator")
        if self.text_field is None:
            raise SemanticKernelReadError("MemPursuitCollection: the data model has no str data "
                                          "field to read the memories' text from: pass "
                                          "text_field=")
        query = values if isinstance(values, str) else ""
        signals = self._signals(hits, query)
        if "titles" in signals:
            lookup = self._title_lookup(qv, query, vector_property_name, filter, kwargs)
            if lookup is not None:
                signals = signals.overlay({"title_lookup": lookup})
        matrix = (np.asarray([np.asarray(v, dtype=np.float32) for v in vectors])
                  .reshape(len(hits), -1) if hits
                  else np.empty((0, qv.shape[0]), dtype=np.float32))
        return CandidatePool(hits, qv, matrix, signals=signals), found.total_count

    def _signals(self, hits: List[Any], query: str) -> Any:
        """The signals of search results (a pool's, or a second read's)."""
        texts = [str(_value(h.record, self.text_field) or "") for h in hits]
        data = [{f.name: _value(h.record, f.name)
                 for f in self.collection.definition.data_fields} for h in hits]
        return pool_signals(texts, query, **metadata_signals(data, self.metadata_keys))

    def _stored_vectors(self, hits: List[Any], vector_property_name: Optional[str]) -> List[Any]:
        field = self.collection.definition.try_get_vector_field(vector_property_name)
        name = field.storage_name or field.name if field is not None else None
        vectors = [_value(h.record, field.name) if field is not None else None for h in hits]
        if name is not None:
            vectors = [v if v is not None else _value(h.record, name)
                       for v, h in zip(vectors, hits)]
        return vectors

    # -- the second read ------------------------------------------------------------------------

    def _off(self, why: str) -> None:
        if not self._noted:
            self._noted = True
            logger.info("mempursuit: MemPursuitCollection's second read (the titles its picks "
                        "name, fetched from the collection) is off: %s", why)

    def _title_lookup(self, qv: np.ndarray, query: str, vector_property_name: Optional[str],
                      scope: Any, kwargs: Mapping[str, Any]) -> Optional[TitleLookup]:
        """The second read of a search inside its filter: one search per title whose filter
        is the caller's ANDed with ``x.title == t`` (one lambda, as a string), with the stored
        vectors; the scope's titles listed by searches with the caller's filter. None (said
        once) where the filter cannot be read as one lambda or the title is no data field."""
        key = self.metadata_keys.get("titles", "title")
        if key not in [f.name for f in self.collection.definition.data_fields]:
            self._off(f"the data model has no {key!r} data field to filter by")
            return None
        if kwargs:
            self._off(f"it cannot keep the search arguments {sorted(kwargs)}")
            return None
        scoped = _scoped_filter(scope, key)
        if scoped is None:
            self._off("the search's filter cannot be read as one lambda of literals (pass it "
                      "as a string, 'lambda x: x.user == \"A\"')")
            return None
        collection = self.collection
        vector = qv.tolist()

        async def search(filter: Any, top: int, include_vectors: bool = True) -> List[Any]:
            found = await collection.search(vector=vector, filter=filter, top=top,
                                            vector_property_name=vector_property_name,
                                            include_vectors=include_vectors)
            return await _iterate(found.results)

        async def listed() -> List[Any]:  # one search: Chroma's ignores skip
            return [_value(h.record, key) for h in await search(scope, _LISTED, False)]

        def fetch(names: List[str], limit: int) -> Fetched:
            async def each() -> List[List[Any]]:
                return await asyncio.gather(*(search(scoped(t), limit) for t in names))
            hits = [h for found in _blocking(each) for h in found]
            vectors = self._stored_vectors(hits, vector_property_name)
            hits = [h for h, v in zip(hits, vectors) if v is not None and not isinstance(v, str)]
            rows = [v for v in vectors if v is not None and not isinstance(v, str)]
            return Fetched.of(hits, rows, self._signals(hits, query))
        if self._titles is None:
            self._titles = ScopedTitleIndexes(collection, _WRITES,
                                              framework=type(collection).__name__)
        keyname = collection.definition.key_name
        return TitleLookup(self._titles.index(scoped("\0"), lambda: _blocking(listed)),
                           fetch, key=lambda h: _value(h.record, keyname),
                           timeout=self._options.follow_timeout)

    # -- the read -------------------------------------------------------------------------------

    async def search(self, values: Any = None, *, vector: Any = None,
                     vector_property_name: Optional[str] = None, filter: Any = None,
                     top: int = 3, skip: int = 0, include_total_count: bool = False,
                     include_vectors: bool = False, **kwargs: Any) -> KernelSearchResults:
        """The collection's ``search`` with the read policy's order (same arguments, same
        result type).

        Returns
        -------
        KernelSearchResults
            ``results``: at most ``K`` ``VectorSearchResult`` (the policy's order, after its
            first ``skip``); the collection's own ``search`` with ``policy="native"`` or after
            a failure (one warning). With ``include_vectors=False`` the records are read again
            by key without their vectors, as the collection returns them.
        """
        check_int("top", top)
        check_int("skip", skip, minimum=0)
        budget = self._options.budget(top)

        returned: List[Any] = []  # what the read returns, for its trace

        async def native():
            got = await self.collection.search(
                values, vector=vector, vector_property_name=vector_property_name,
                filter=filter, top=top, skip=skip, include_total_count=include_total_count,
                include_vectors=include_vectors, **kwargs)
            returned[:] = await _iterate(got.results)
            got.results = _desync(list(returned))
            return got

        async def ours():
            if self._options.is_native or (
                    vector is None and blank_query(values, "MemPursuitCollection")):
                return await native()
            wanted = skip + budget
            pool, total = await self._read(
                values, vector=vector, vector_property_name=vector_property_name,
                filter=filter, size=self._options.pool_size(wanted),
                include_total_count=include_total_count, **kwargs)
            kept = pool.select(self._selector, wanted).items[skip:] if pool.items else []
            if not include_vectors and kept:
                kept = await self._without_vectors(kept)
            returned[:] = kept
            return KernelSearchResults(results=_desync(kept),
                                       total_count=total if include_total_count else None)

        key = self.collection.definition.key_name
        return await aread_or_native(ours, native, strict=self.strict,
                                     framework="Semantic Kernel", trace=self._trace,
                                     ids=lambda r: _value(r.record, key),
                                     result_items=lambda _: returned)

    @property
    def last_trace(self) -> Optional[ReadTrace]:
        """What the last ``search`` on this thread did (a
        :class:`~mempursuit_core.trace.ReadTrace`: records by key), or None."""
        return self._trace.last

    async def _without_vectors(self, kept: List[VectorSearchResult]) -> List[VectorSearchResult]:
        """The kept results with their records read again by key, without vectors."""
        key = self.collection.definition.key_name
        keys = [_value(r.record, key) for r in kept]
        records = await self.collection.get(keys, include_vectors=False)
        records = list(records or []) if isinstance(records, (list, tuple)) else [records]
        by_key = {_value(r, key): r for r in records if r is not None}
        missing = [k for k in keys if k not in by_key]
        if missing:
            raise SemanticKernelReadError(f"MemPursuitCollection: {len(missing)} kept records "
                                          "could not be read again by key")
        return [dataclasses.replace(r, record=by_key[k]) if dataclasses.is_dataclass(r)
                else r.model_copy(update={"record": by_key[k]}) for r, k in zip(kept, keys)]
