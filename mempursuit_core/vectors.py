"""Where a candidate's vector comes from: the item, the store, or the embedding model.

A read policy works on the vectors the framework already stores. Items a framework hands a
reranker may carry them (a Haystack ``Document.embedding``, a LlamaIndex node's ``embedding``)
or not (a LangChain ``Document``, a keyword retriever's hits). :class:`VectorResolver` takes
each candidate's vector from the first of three places that has it:

1. the item itself;
2. the store, by id, through the reader registered for the store's class or one of its bases
   (:func:`register_vector_reader`; :func:`supported_stores` lists them per framework);
3. the item's text, embedded once with the framework's own model and cached by content hash
   (:class:`EmbeddedVectors`), said once in a warning that names why and what to pass instead.

``VectorResolver.sources`` counts how many vectors came from each place. Mem0's and LangGraph's
adapters read whole pools through the same registry with readers of their own signature.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any, Awaitable, Callable, Sequence

from .trace import note_vectors

__all__ = ["EmbeddedVectors", "VectorResolver", "register_vector_reader", "supported_stores",
           "vector_reader_for"]

logger = logging.getLogger("mempursuit")

#: ``reader(store, keys, **context) -> list or None``: one vector (or None) per key, or None
#: when the store cannot return vectors by id
Reader = Callable[..., "list | None"]

# One registry of stored-vector readers for every adapter: class path -> (framework, reader).
_VECTOR_READERS: dict[str, tuple[str, Any]] = {}


def register_vector_reader(class_path: str, reader: Any, *, framework: str) -> None:
    """Register how ``framework``'s adapter reads stored vectors from a store class.

    Parameters
    ----------
    class_path : str
        ``"module.ClassName"`` of the store class; its subclasses match too.
    reader : object
        What the adapter calls: for the rerank-style adapters (:class:`VectorResolver`),
        ``reader(store, keys, **context)`` returning one vector or None per key, or None when
        the store cannot return them; Mem0's and LangGraph's adapters use signatures of their
        own (e.g. Mem0's ``reader(store, ids)``).
    framework : str
        The adapter it belongs to (``"mem0"``, ``"langgraph"``, ...).
    """
    _VECTOR_READERS[class_path] = (framework, reader)


def supported_stores(framework: str) -> list[str]:
    """Class paths of the stores whose stored vectors ``framework``'s adapter can read."""
    return sorted(p for p, (fw, _) in _VECTOR_READERS.items() if fw == framework)


def vector_reader_for(store: Any, framework: str) -> Any | None:
    """The reader registered for ``store``'s class or its nearest base class (by MRO) for
    ``framework``, or None."""
    for cls in type(store).__mro__:
        entry = _VECTOR_READERS.get(f"{cls.__module__}.{cls.__qualname__}")
        if entry is not None and entry[0] == framework:
            return entry[1]
    return None


class EmbeddedVectors:
    """Texts embedded once and cached by content hash, with a count of where vectors came from.

    The caller asks :meth:`to_embed` which texts still need the embedding model, embeds them
    with its framework's own (sync or async) call, and puts the answer in with :meth:`fill`.

    Attributes
    ----------
    sources : dict of str to int
        How many vectors came from each source so far (``"store"``, ``"embedded"``, ...).
    """

    def __init__(self) -> None:
        self.sources: dict[str, int] = {}
        self._cache: dict[str, Any] = {}

    def count(self, source: str, n: int) -> None:
        """Count ``n`` vectors read from ``source``."""
        if n:
            self.sources[source] = self.sources.get(source, 0) + n
            note_vectors(source, n)

    def to_embed(self, texts: Sequence[str]) -> list[str]:
        """The distinct ``texts`` not embedded yet, in first-seen order."""
        return list(dict.fromkeys(t for t in texts if _content_key(t) not in self._cache))

    def fill(self, vectors: list, rows: Sequence[int], texts: Sequence[str],
             new_texts: Sequence[str], new_vectors: Sequence[Any]) -> None:
        """Put the embedded vectors in place: cache ``new_vectors`` (one per ``new_texts``, as
        :meth:`to_embed` returned them), then ``vectors[rows[i]]`` = the vector of ``texts[i]``.
        """
        new_vectors = list(new_vectors)
        if len(new_vectors) != len(new_texts):
            raise ValueError(f"the embedding model returned {len(new_vectors)} vectors for "
                             f"{len(new_texts)} texts")
        for t, v in zip(new_texts, new_vectors):
            self._cache[_content_key(t)] = v
        for i, t in zip(rows, texts):
            vectors[i] = self._cache[_content_key(t)]
        self.count("embedded", len(rows))


def _content_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class VectorResolver:
    """Each candidate's vector: its own, else the store's by id, else its text embedded.

    One per adapter object: it keeps the embedding cache, the per-source counts and whether
    the embedding warning was given.

    Parameters
    ----------
    framework : str
        The registry key of the adapter's store readers (``"haystack"``, ``"llamaindex"``...).
    item : str, default ``"document"``
        What a candidate is called in the warning (``"node"``...).
    own : str or None, default None
        The source name counted for vectors the items carry (``"documents"``, ``"nodes"``);
        None where items never carry one.
    store_arg : str, default ``"vector_store"``
        The adapter's parameter that takes the store, named in the warning.
    fix : str, default ""
        The warning's last sentence: what to pass to use the stored vectors.
    fallback : callable, optional
        ``reader(store, keys, **context)`` for stores with no registered reader (a duck-typed
        read, e.g. by ``get_documents_by_id``).
    log : logging.Logger, optional
        Where the warning goes (default the ``mempursuit`` logger).
    """

    def __init__(self, framework: str, *, item: str = "document", own: str | None = None,
                 store_arg: str = "vector_store", fix: str = "", fallback: Reader | None = None,
                 log: logging.Logger | None = None):
        self.framework, self.item, self.own = framework, item, own
        self.store_arg, self.fix, self.fallback = store_arg, fix, fallback
        self.log = log or logger
        self.cache = EmbeddedVectors()
        self.warned = False
        self._why = "cannot return stored vectors by id"

    @property
    def sources(self) -> dict[str, int]:
        """How many vectors came from each source so far (``own``, ``"store"``,
        ``"embedded"``)."""
        return self.cache.sources

    # -- the store -----------------------------------------------------------------------------

    def reader(self, store: Any) -> Reader | None:
        """The reader for ``store``: the one registered for its class, else ``fallback``."""
        return vector_reader_for(store, self.framework) or self.fallback

    def read(self, store: Any, keys: Sequence[Any], **context: Any) -> list | None:
        """The stored vectors of ``keys`` (None where absent), or None when no reader can
        return them by id. Counts nothing."""
        reader = self.reader(store)
        return None if reader is None else reader(store, list(keys), **context)

    def _put(self, vectors: list, missing: list[int], found: list | None) -> list[int]:
        """Put the store's ``found`` vectors in; keep why the rest are missing."""
        if found is None:
            self._why = "cannot return stored vectors by id"
            return missing
        if missing and all(v is None for v in found):
            self._why = (f"holds none of these {self.item} ids (is it the store they were "
                         "retrieved from?)")
        for i, v in zip(missing, found):
            vectors[i] = v
        self.cache.count("store", sum(v is not None for v in found))
        return [i for i in missing if vectors[i] is None]

    # -- the embedding model -------------------------------------------------------------------

    def _start(self, own: Sequence[Any] | None, n: int) -> tuple[list, list[int]]:
        vectors = list(own) if own is not None else [None] * n
        if self.own is not None:
            self.cache.count(self.own, sum(v is not None for v in vectors))
        return vectors, [i for i, v in enumerate(vectors) if v is None]

    def _to_embed(self, missing: list[int], texts: list[str], store: Any,
                  embedder: Callable[[], str]) -> list[str]:
        """The texts still to embed; says once why the items are being embedded."""
        if not self.warned:
            self.warned = True
            self.log.warning(
                "mempursuit: %d retrieved %ss came without their vectors and %s; embedding "
                "their text with %s (cached by content hash).%s", len(missing), self.item,
                f"no {self.store_arg}= was given" if store is None else
                f"{type(store).__name__} {self._why}", embedder(),
                f" {self.fix}" if self.fix else "")
        return self.cache.to_embed(texts)

    # -- the whole resolution ------------------------------------------------------------------

    def resolve(self, n: int, *, own: Sequence[Any] | None, store: Any,
                keys: Callable[[list[int]], Sequence[Any]],
                texts: Callable[[list[int]], Sequence[str]],
                embed: Callable[[list[str]], Sequence[Any]], embedder: Callable[[], str],
                **context: Any) -> list:
        """The ``n`` candidates' vectors, each from the first place that has it.

        Parameters
        ----------
        n : int
            How many candidates.
        own : sequence of vectors or None, or None
            The vectors the items carry (None where one does not).
        store : object or None
            The store the items were retrieved from.
        keys, texts : callable
            ``rows -> the store's ids`` (what its reader takes) and ``rows -> texts`` of those
            rows, called only for rows still missing.
        embed : callable
            ``texts -> vectors`` with the framework's own model.
        embedder : callable
            ``() -> the model's name`` for the warning.
        **context
            Passed on to the store's reader.

        Returns
        -------
        list
            ``n`` vectors (array-likes of one dimension ``d``).
        """
        vectors, missing = self._start(own, n)
        if missing and store is not None:
            missing = self._put(vectors, missing, self.read(store, keys(missing), **context))
        if missing:
            rows_texts = list(texts(missing))
            new = self._to_embed(missing, rows_texts, store, embedder)
            self.cache.fill(vectors, missing, rows_texts, new, embed(new) if new else [])
        return vectors

    async def aresolve(self, n: int, *, own: Sequence[Any] | None, store: Any,
                       keys: Callable[[list[int]], Sequence[Any]],
                       texts: Callable[[list[int]], Sequence[str]],
                       aembed: Callable[[list[str]], Awaitable[Sequence[Any]]],
                       embedder: Callable[[], str],
                       aread: Callable[..., Awaitable["list | None"]] | None = None,
                       **context: Any) -> list:
        """:meth:`resolve` with the model's async call; the store through ``aread(store, keys,
        **context)`` where the store has an async client, else its reader in a thread."""
        vectors, missing = self._start(own, n)
        if missing and store is not None:
            ids = list(keys(missing))
            found = (await aread(store, ids, **context) if aread is not None else
                     await asyncio.to_thread(self.read, store, ids, **context))
            missing = self._put(vectors, missing, found)
        if missing:
            rows_texts = list(texts(missing))
            new = self._to_embed(missing, rows_texts, store, embedder)
            self.cache.fill(vectors, missing, rows_texts, new, await aembed(new) if new else [])
        return vectors
