"""MemPursuit as AutoGen's ``ChromaDBVectorMemory``.

AutoGen's ``ChromaDBVectorMemory.query(query)`` asks its Chroma collection for the config's
``k`` (default 3) nearest memories; ``update_context`` puts what ``query`` returns into the
agent's model context. :class:`MemPursuitChromaDBVectorMemory` is the same memory (a subclass:
``add``, ``update_context``, ``clear``, ``close``, ``dump_component`` are AutoGen's own) whose
``query`` reads a pool of ``P = 200`` through AutoGen's own query (the config's ``k`` raised to
``P`` for that one call: the same Chroma query, score and ``score_threshold``), reads those
memories' stored embeddings from the collection by id, and returns the ``k`` the read policy
picks, most useful first, as the same ``MemoryQueryResult``::

    memory = MemPursuitChromaDBVectorMemory(config=PersistentChromaDBVectorMemoryConfig(...))
    agent = AssistantAgent("assistant", model_client=..., memory=[memory])

The query vector: the query embedded as Chroma embeds it for ``query_texts`` (the collection's
embedding function). Signals: the texts (``content``), ``timestamps`` / ``speakers`` /
``session_ids`` from the metadata keys in ``metadata_keys``, ``titles`` from a ``title`` /
``source`` metadata; AutoGen's ``score`` (a similarity) as the native scores.

Budget rule: the config's ``k`` keeps its meaning; the adapter's ``k`` only caps it.
``policy="native"`` is AutoGen's own ``query``.
"""

from __future__ import annotations

import logging
from typing import Any, List, Mapping, Optional

import numpy as np
from autogen_core import CancellationToken
from autogen_core.memory import MemoryContent, MemoryMimeType, MemoryQueryResult
from autogen_ext.memory.chromadb import ChromaDBVectorMemory, ChromaDBVectorMemoryConfig

from mempursuit_core.adapter import (DEFAULT_METADATA_KEYS, CandidatePool, Fetched, ReadOptions,
                                     ScopedTitleIndexes, TitleLookup, aread_or_native, blank_query,
                                     get_embedder, metadata_signals, native_scores, plain_match,
                                     pool_signals, ReadTrace, TraceSlot)

__all__ = ["AutoGenReadError", "DEFAULT_METADATA_KEYS", "MemPursuitChromaDBVectorMemory",
           "MemPursuitEmbeddingFunction"]

logger = logging.getLogger(__name__)

#: the collection methods that write (the title indexes follow them)
_WRITES = ("add", "upsert", "update", "delete")


class AutoGenReadError(RuntimeError):
    """The memories cannot be read as a pool (no ids, no stored embeddings)."""


class MemPursuitEmbeddingFunction:
    """The packaged all-MiniLM-L6-v2 (int8 ONNX, 384-d) as a Chroma embedding function, for
    ``CustomEmbeddingFunctionConfig(function=MemPursuitEmbeddingFunction, params={})``
    (``params``: ``model``, and ``threads`` ... for ``get_embedder``)."""

    def __init__(self, model: str = "minilm", **options: Any):
        self.model, self.options, self._encoder = model, dict(options), None

    def _model(self):
        if self._encoder is None:
            self._encoder = get_embedder(self.model, **self.options)
        return self._encoder

    def __call__(self, input: List[str]) -> List[np.ndarray]:
        return list(self._model().encode(list(input)))

    def embed_query(self, input: List[str]) -> List[np.ndarray]:
        return self(input)

    @staticmethod
    def name() -> str:
        return "mempursuit-minilm"

    def get_config(self) -> dict:
        return {"model": self.model, **self.options}

    @staticmethod
    def build_from_config(config: dict) -> "MemPursuitEmbeddingFunction":
        return MemPursuitEmbeddingFunction(**config)

    def is_legacy(self) -> bool:
        return False

    def default_space(self) -> str:
        return "cosine"

    def supported_spaces(self) -> List[str]:
        return ["cosine", "l2", "ip"]


class MemPursuitChromaDBVectorMemory(ChromaDBVectorMemory):
    """AutoGen's ``ChromaDBVectorMemory`` whose ``query`` returns the read policy's ``k``.

    Parameters
    ----------
    config : ChromaDBVectorMemoryConfig, optional
        AutoGen's own config (its ``k``, default 3, is the number of memories returned).
    k : int or None, default None
        A cap on the config's ``k`` (the shared read option).
    pool : int, default 200
        ``P``: AutoGen's query is asked for ``max(P, K)`` memories.
    policy : str or Selector, default ``mempursuit_core.DEFAULT_POLICY``
        ``"native"`` is AutoGen's own ``query``.
    policy_options : dict, optional
        Selector options; other keyword arguments are taken as selector options too.
    strict : bool, default False
        False: on any failure, one warning and AutoGen's own ``query``; True raises.
    metadata_keys : dict, optional
        ``{signal: metadata key}``, default :data:`DEFAULT_METADATA_KEYS`.
    """

    def __init__(self, config: Optional[ChromaDBVectorMemoryConfig] = None, *,
                 k: Optional[int] = None, pool: Optional[int] = None, policy: Any = None,
                 policy_options: Optional[Mapping[str, Any]] = None,
                 strict: Optional[bool] = None,
                 metadata_keys: Optional[Mapping[str, str]] = None, **options: Any):
        self._read_options = ReadOptions.build("MemPursuitChromaDBVectorMemory", k=k, pool=pool,
                                               policy=policy, policy_options=policy_options,
                                               strict=strict, own=self.__init__, **options)
        self._selector = self._read_options.selector()  # resolved once, when the options were built
        self._metadata_keys = dict(DEFAULT_METADATA_KEYS if metadata_keys is None
                                   else metadata_keys)
        self._titles: Optional[tuple] = None  # (collection, its ScopedTitleIndexes)
        self._noted = False
        self._trace = TraceSlot()
        super().__init__(config)

    @property
    def last_trace(self) -> Optional[ReadTrace]:
        """What the last ``query`` on this thread did (a
        :class:`~mempursuit_core.trace.ReadTrace`: memories by Chroma id), or None."""
        return self._trace.last

    # -- the pool ---------------------------------------------------------------------------

    async def _native_query(self, query: Any, cancellation_token: Any, size: Optional[int],
                            **kwargs: Any) -> MemoryQueryResult:
        """AutoGen's own ``query`` with the config's ``k`` set to ``size`` for this call (its
        query reads ``self._config.k`` before its first await-free Chroma call returns)."""
        if size is None:
            return await super().query(query, cancellation_token, **kwargs)
        saved = self._config
        self._config = saved.model_copy(update={"k": size})
        try:
            return await super().query(query, cancellation_token, **kwargs)
        finally:
            self._config = saved

    async def candidate_pool(self, query: Any, size: Optional[int] = None,
                             cancellation_token: Optional[CancellationToken] = None,
                             **kwargs: Any) -> CandidatePool[MemoryContent]:
        """AutoGen's own top ``size`` (default ``pool``) for ``query`` with their stored
        embeddings, the query vector and the signals.

        Raises
        ------
        AutoGenReadError
            A memory without an id or without a stored embedding.
        """
        size = self._read_options.pool if size is None else int(size)
        found = (await self._native_query(query, cancellation_token, size, **kwargs)).results
        ids = [(m.metadata or {}).get("id") for m in found]
        if any(i is None for i in ids):
            raise AutoGenReadError("MemPursuitChromaDBVectorMemory: a memory came without its "
                                   "Chroma id")
        collection = self._collection
        stored = collection.get(ids=ids, include=["embeddings"]) if ids else {"ids": [],
                                                                              "embeddings": []}
        by_id = {i: e for i, e in zip(stored["ids"], stored["embeddings"])}
        missing = [i for i in ids if by_id.get(i) is None]
        if missing:
            raise AutoGenReadError(f"MemPursuitChromaDBVectorMemory: {len(missing)} memories "
                                   "have no stored embedding in the collection")
        text = self._extract_text(query)
        # the query embedded as Chroma embeds query_texts (chromadb CollectionCommon._embed)
        qv = np.asarray(collection._embed(input=[text], is_query=True)[0], dtype=np.float32)
        matrix = (np.asarray([np.asarray(by_id[i], dtype=np.float32) for i in ids])
                  .reshape(len(ids), -1) if ids else np.empty((0, qv.shape[0]), np.float32))
        texts = [str(m.content) for m in found]
        extra = metadata_signals([m.metadata for m in found], self._metadata_keys)
        if "titles" in extra:
            lookup = self._title_lookup(text, kwargs)
            if lookup is not None:
                extra["title_lookup"] = lookup
        return CandidatePool(list(found), qv, matrix,
                             native_scores=native_scores([(m.metadata or {}).get("score")
                                                          for m in found]),
                             signals=pool_signals(texts, text, **extra))

    # -- the second read --------------------------------------------------------------------

    def _off(self, why: str) -> None:
        if not self._noted:
            self._noted = True
            logger.info("mempursuit: MemPursuitChromaDBVectorMemory's second read (the titles "
                        "its picks name, fetched from the collection) is off: %s", why)

    def _title_lookup(self, text: str, kwargs: Mapping[str, Any]) -> Optional[TitleLookup]:
        """The second read of a query inside its scope: the memory's collection and the
        query's ``where`` (``where_document`` too), ANDed with ``{title: {"$in": titles}}``
        (Chroma's ``get``), the stored embeddings read back. None (said once) with a
        ``score_threshold`` (a cut by similarity a lookup by title cannot keep) or query
        arguments it cannot keep."""
        if self._config.score_threshold is not None:
            self._off("score_threshold= cuts by similarity to the query, which a lookup by "
                      "title does not keep")
            return None
        unkept = sorted(set(kwargs) - {"where", "where_document"})
        if unkept:
            self._off(f"it cannot keep the query arguments {unkept}")
            return None
        where, where_document = kwargs.get("where"), kwargs.get("where_document")
        collection, key = self._collection, self._metadata_keys.get("titles", "title")
        if self._titles is None or self._titles[0] is not collection:  # (reopened: a new one)
            self._titles = (collection, ScopedTitleIndexes(collection, _WRITES,
                                                           count=collection.count,
                                                           framework="Chroma"))

        def titles() -> List[Any]:
            got = collection.get(where=where, where_document=where_document,
                                 include=["metadatas"])
            return [(m or {}).get(key) for m in got["metadatas"]]

        def fetch(names: List[str], limit: int) -> Fetched:
            asked = {key: {"$in": list(names)}}
            got = collection.get(where=asked if not where else {"$and": [where, asked]},
                                 where_document=where_document,
                                 include=["embeddings", "documents", "metadatas"])
            rank = {t: i for i, t in enumerate(names)}
            rows = sorted(zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"]),
                          key=lambda r: rank.get((r[2] or {}).get(key), len(rank)))
            found = [MemoryContent(content=doc, mime_type=str((meta or {}).get(
                "mime_type", MemoryMimeType.TEXT.value)), metadata={**(meta or {}), "id": i})
                for i, doc, meta, _ in rows]
            return Fetched.of(found, [r[3] for r in rows], pool_signals(
                [str(m.content) for m in found], text,
                **metadata_signals([m.metadata for m in found], self._metadata_keys)))
        agrees = plain_match(where)
        return TitleLookup(self._titles[1].index((where, where_document), titles), fetch,
                           key=lambda m: (m.metadata or {}).get("id"),
                           in_scope=None if agrees is None else (lambda m: agrees(m.metadata)),
                           timeout=self._read_options.follow_timeout)

    # -- the read ---------------------------------------------------------------------------

    async def query(self, query: str | MemoryContent,
                    cancellation_token: Optional[CancellationToken] = None,
                    **kwargs: Any) -> MemoryQueryResult:
        """The read policy's ``K`` of a pool of ``max(P, K)`` (``K`` = the config's ``k``,
        capped by ``k``); AutoGen's own ``query`` with ``policy="native"`` or after a failure
        (one warning)."""
        budget = self._read_options.budget(self._config.k)

        def native():
            size = None if budget == self._config.k else budget
            return self._native_query(query, cancellation_token, size, **kwargs)

        async def ours():
            if self._read_options.is_native or blank_query(
                    getattr(query, "content", query), "MemPursuitChromaDBVectorMemory"):
                return await native()
            pool = await self.candidate_pool(query, self._read_options.pool_size(budget),
                                             cancellation_token, **kwargs)
            kept = pool.select(self._selector, budget).items if pool.items else []
            return MemoryQueryResult(results=list(kept))

        return await aread_or_native(ours, native, strict=self._read_options.strict,
                                     framework="AutoGen", trace=self._trace,
                                     ids=lambda m: (m.metadata or {}).get("id"),
                                     result_items=lambda r: r.results)
