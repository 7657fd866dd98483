"""MemPursuit as LightMem's read policy.

LightMem (zjunlp/LightMem) answers ``LightMemory.retrieve(query, limit, filters)`` with one dense
Qdrant search of ``limit`` results (truncation happens inside Qdrant) and formats each hit as
``"time_stamp weekday memory"``. :class:`MemPursuitLightMemory` wraps a ``LightMemory`` and keeps
that signature and format, but asks Qdrant for a larger pool (``pool``, default 200, as every
adapter) *with the stored vectors*, embeds the query with LightMem's own
embedder, and keeps the ``limit`` memories that a read policy (``mempursuit_core.DEFAULT_POLICY``
by default) picks, in the policy's order.

One-line swap::

    memory = MemPursuitLightMemory(LightMemory.from_config(config))
    # or: memory = MemPursuitLightMemory.from_config(config)   (also guards the store, see below)

Everything else (``add_memory``, ``offline_update``, ``summarize``, ...) is delegated to the
wrapped ``LightMemory`` unchanged.

Filters. ``filters`` (Qdrant payload conditions) go into the Qdrant query, for the pool as for
LightMem. BoundMem ``boundmem_tags`` are applied by LightMem's own ``filter_by_tags`` after the
query: ``policy="native"`` does exactly what ``LightMemory.retrieve`` does (query the top
``limit``, then drop the hits whose tags do not match, so it may return fewer than ``limit``);
every other policy drops the non-matching hits from the whole pool and then selects up to
``limit`` from what is left.

Private LightMem details this module relies on (read in LightMem's source, 2026-08 HEAD):

* ``LightMemory.text_embedder.embed(text)`` returns the query embedding as a list
  (``lightmem/factory/text_embedder/huggingface.py``, ``.../openai.py``).
* ``LightMemory.embedding_retriever`` is ``lightmem/factory/retriever/embeddingretriever/
  qdrant.py: Qdrant`` with ``.client`` (a ``QdrantClient``), ``.collection_name`` and
  ``._create_filter(filters)`` (LightMem's dict-to-``Filter`` translation, reused here so that
  filters mean exactly what they mean to ``retrieve``). Its ``search`` calls
  ``client.query_points(..., with_payload=True, with_vectors=True)`` and drops the vectors; the
  pool query here is the same call with ``limit=pool``.
* ``offline_update`` stores one point per ``MemoryEntry`` in a cosine collection: the vector is
  the embedding of ``entry.memory``, the payload holds ``time_stamp``, ``weekday``, ``memory``
  and the entry's other fields.
* ``Qdrant.__init__`` deletes ``path`` on open unless ``on_disk=True`` (see
  :func:`protect_qdrant_store`).
"""

from __future__ import annotations

import copy
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from mempursuit_core.adapter import (DEFAULT_POOL, CandidatePool, ReadOptions, ReadTrace,
                                     Selection, Selector, TraceSlot, blank_query, check_int,
                                     pool_signals, qdrant_search_params, read_or_native)

__all__ = [
    "DEFAULT_POOL_SIZE",
    "LightMemPool",
    "LightMemSelection",
    "MemPursuitLightMemory",
    "StoreDeletionError",
    "format_entry",
    "protect_qdrant_store",
]

logger = logging.getLogger(__name__)

DEFAULT_POOL_SIZE = DEFAULT_POOL  # the old name
_RETRIEVER_KEYS = ("embedding_retriever", "summary_retriever")


class StoreDeletionError(ValueError):
    """Opening this LightMem config would delete an existing Qdrant store directory."""


class LightMemPool(CandidatePool):
    """LightMem's native candidate pool for one query (a :class:`CandidatePool`).

    Attributes
    ----------
    items : list of dict, length P
        LightMem's hits ``{"id", "score", "payload"}`` in native order (descending cosine).
    ids : list, length P
        Qdrant point ids.
    scores : ndarray of float64, shape (P,)
        Qdrant's cosine scores (``native_scores``).
    payloads : list of dict, length P
        The stored payloads (``time_stamp``, ``weekday``, ``memory``, ``speaker_name``, ...).
    vectors : ndarray of float32, shape (P, d)
        The stored vectors, as Qdrant returns them (unit length for a cosine collection).
    query_vector : ndarray of float32, shape (d,)
        The query embedding from LightMem's embedder.
    signals : PoolSignals
        What LightMem stores about each memory (:func:`lightmem_signals`).
    """

    @property
    def ids(self) -> list:
        return [h["id"] for h in self.items]

    @property
    def scores(self) -> np.ndarray:
        return self.native_scores

    @property
    def payloads(self) -> list[dict]:
        return [h["payload"] for h in self.items]

    def entry(self, i: int) -> dict:
        """Position ``i`` as LightMem's ``search(..., return_full=True)`` reports a hit."""
        return self.items[i]


def lightmem_signals(payloads: list[Mapping[str, Any]], query: str):
    """The signals LightMem's payloads hold, for a pool in native order.

    ``texts`` (``memory``, as ``retrieve`` shows it), ``query_text``, ``timestamps``
    (``time_stamp``), ``speakers`` (``speaker_name``, else ``speaker_id``; None where both are
    empty) and tf-idf features over the pool's texts. LightMem keeps no session id (its
    ``topic_id`` is a topic segment) and no write order; the default policy groups memories
    by the day of ``time_stamp`` instead.
    """
    def speaker(p):
        for key in ("speaker_name", "speaker_id"):
            value = p.get(key)
            if isinstance(value, str) and value.strip():
                return value
        return None

    return pool_signals([str(p.get("memory", "")) for p in payloads], query,
                        timestamps=[p.get("time_stamp") for p in payloads],
                        speakers=[speaker(p) for p in payloads])


@dataclass
class LightMemSelection:
    """What :meth:`MemPursuitLightMemory.select` chose, with the pool it chose from.

    Attributes
    ----------
    entries : list of dict
        The kept hits in the selector's order, each ``{"id", "score", "payload"}``.
    pool : LightMemPool or None
        The pool (None when the adapter fell back to LightMem's native retrieval).
    selection : Selection or None
        The selector's answer (``order`` indexes ``pool``).
    fallback_reason : str or None
        Why the native result was returned instead, if it was.
    """

    entries: list[dict]
    pool: LightMemPool | None = None
    selection: Selection | None = None
    fallback_reason: str | None = None
    info: dict = field(default_factory=dict)


def format_entry(payload: Mapping[str, Any]) -> str:
    """LightMem's result string for one payload: ``f"{time_stamp} {weekday} {memory}"``.

    Missing fields are empty strings, as in ``LightMemory.retrieve``. (With BoundMem tags,
    LightMem's ``filter_by_tags`` strips the tag prefix from the memory text and ``retrieve``
    strips once more; :meth:`MemPursuitLightMemory.retrieve` does the same.)
    """
    return f"{payload.get('time_stamp', '')} {payload.get('weekday', '')} {payload.get('memory', '')}"


def _shown_payload(payload: Mapping[str, Any], boundmem_tags: Any) -> Mapping[str, Any]:
    """The payload with the memory text ``LightMemory.retrieve`` shows.

    With BoundMem tags, ``retrieve`` strips the tag prefix once more after ``filter_by_tags``.
    """
    if boundmem_tags is None:
        return payload
    from lightmem.memory.utils import strip_tags

    return {**payload, "memory": strip_tags(payload.get("memory", ""))}


def _format_hits(hits: list[dict], boundmem_tags: Any) -> list[str]:
    """``LightMemory.retrieve``'s strings for (tag-filtered) hits."""
    return [format_entry(_shown_payload(h["payload"], boundmem_tags)) for h in hits]


def _point_vector(point: Any) -> Any:
    """The dense vector of a Qdrant point (unnamed, or the only / default named vector)."""
    vec = point.vector
    if vec is None:
        raise ValueError(f"Qdrant returned point {point.id!r} without its vector")
    if isinstance(vec, Mapping):
        if "" in vec:
            return vec[""]
        if len(vec) == 1:
            return next(iter(vec.values()))
        raise ValueError(
            f"point {point.id!r} has several named vectors {sorted(vec)}; LightMem stores one "
            "unnamed dense vector"
        )
    return vec


# --------------------------------------------------------------------------------------------
# Store guard
# --------------------------------------------------------------------------------------------

def _field(obj: Any, key: str, default: Any = None) -> Any:
    """``obj[key]`` for a mapping, ``obj.key`` for a config object."""
    return obj.get(key, default) if isinstance(obj, Mapping) else getattr(obj, key, default)


def _set_field(obj: Any, key: str, value: Any) -> None:
    """Set ``key`` on a mapping (always this module's own copy) or a config object."""
    if isinstance(obj, Mapping):
        obj[key] = value
    else:
        setattr(obj, key, value)


def _is_path_store(cfg: Any) -> bool:
    return not (_field(cfg, "client") or _field(cfg, "url")
                or (_field(cfg, "host") and _field(cfg, "port")))


def _on_disk_was_set(cfg: Any) -> bool:
    if isinstance(cfg, Mapping):
        return "on_disk" in cfg and cfg["on_disk"] is not None
    fields_set = getattr(cfg, "model_fields_set", None)
    if fields_set is None:
        return getattr(cfg, "on_disk", None) is not None
    return "on_disk" in fields_set


def _store_path(cfg: Any) -> str:
    path = _field(cfg, "path")
    # LightMem's QdrantConfig default path (configs/retriever/embeddingretriever/qdrant.py).
    return path or "/tmp/qdrant"


def _shallow_copy(obj: Any) -> Any:
    copier = getattr(obj, "model_copy", None)  # pydantic v2 models keep model_fields_set
    return copier() if callable(copier) else copy.copy(obj)


def protect_qdrant_store(config: Any, *, allow_reset: bool = False) -> Any:
    """Guard a LightMem config against the store-deleting ``on_disk=False`` default.

    LightMem's ``Qdrant`` store runs ``shutil.rmtree(path)`` when it is opened with a local
    ``path`` and ``on_disk`` false, which is the default: re-opening a LightMem store wipes it.
    For each Qdrant retriever block (``embedding_retriever``, ``summary_retriever``) that uses a
    local path, this sets ``on_disk=True`` when it was left unset, and refuses an explicit
    ``on_disk=False`` whose path already holds data.

    Parameters
    ----------
    config : dict or lightmem ``BaseMemoryConfigs``
        Not modified: a guarded copy is returned. Each level (the config, a retriever block,
        its ``configs``) may be a dict or a LightMem config object, in any mix that
        ``LightMemory.from_config`` accepts (e.g. a dict holding an ``EmbeddingRetrieverConfig``).
    allow_reset : bool, default False
        Accept an explicit ``on_disk=False`` over an existing store (LightMem then deletes it).

    Returns
    -------
    dict or BaseMemoryConfigs
        The guarded copy.

    Raises
    ------
    StoreDeletionError
        When ``on_disk=False`` was given explicitly for a non-empty existing path and
        ``allow_reset`` is false.
    """
    # Copy only along the path that may change (a config can hold a live Qdrant client). Each
    # level may be a dict or a config object independently: LightMemory.from_config accepts a
    # dict whose retriever block is an EmbeddingRetrieverConfig.
    config = dict(config) if isinstance(config, Mapping) else _shallow_copy(config)
    for key in _RETRIEVER_KEYS:
        block = _field(config, key)
        if block is None or _field(block, "model_name", "qdrant") != "qdrant":
            continue
        block = dict(block) if isinstance(block, Mapping) else _shallow_copy(block)
        _set_field(config, key, block)
        cfg = _field(block, "configs")
        if cfg is None:
            if not isinstance(block, Mapping):
                continue  # LightMem's validator always fills it; nothing to guard otherwise
            cfg = {}
        else:
            cfg = dict(cfg) if isinstance(cfg, Mapping) else _shallow_copy(cfg)
        _set_field(block, "configs", cfg)
        if not _is_path_store(cfg):
            continue
        path = _store_path(cfg)
        if not _on_disk_was_set(cfg):
            _set_field(cfg, "on_disk", True)
            logger.info("LightMem %s: set on_disk=True so that opening %s keeps the store", key, path)
            continue
        on_disk = _field(cfg, "on_disk")
        if not on_disk and os.path.isdir(path) and os.listdir(path) and not allow_reset:
            raise StoreDeletionError(
                f"LightMem {key}: on_disk=False makes LightMem delete the existing Qdrant store "
                f"at {path!r} when it opens; set on_disk=True to keep it, or pass "
                "allow_reset=True to delete it on purpose"
            )
    return config


# --------------------------------------------------------------------------------------------
# The wrapper
# --------------------------------------------------------------------------------------------

class MemPursuitLightMemory:
    """A ``LightMemory`` whose ``retrieve`` keeps the memories a selector picks from a pool.

    Parameters
    ----------
    memory : lightmem ``LightMemory``
        The instance to wrap (anything with LightMem's ``text_embedder`` and Qdrant
        ``embedding_retriever`` works).
    k : int or None, default None
        Budget ``K``: ``None`` returns ``limit`` memories (LightMem's own argument); otherwise
        ``min(k, limit)``.
    pool : int, default 200
        ``P``: how many hits to ask Qdrant for (LightMem's native order), raised to ``K`` when
        smaller. ``K`` memories are selected from them.
    policy : str or Selector, default ``mempursuit_core.DEFAULT_POLICY``
        A registered selector name (``native``, ``mempursuit`` (the paper's rule), ``mmr``, or
        a plugin's) or a ready :class:`~mempursuit_core.Selector`. ``"native"`` reproduces
        ``LightMemory.retrieve`` exactly (the "w/o" baseline), BoundMem tags included: its pool
        is LightMem's own top-``limit`` query, not ``pool``.
    policy_options : dict, optional
        Passed to :func:`mempursuit_core.get_selector` (e.g. ``{"ridge": 1e-10}``); other
        keyword arguments are taken as policy options too.
    strict : bool, default False
        False: if anything inside the adapter fails (pool query, vectors, selection), log the
        reason at WARNING and return LightMem's own ``retrieve`` result, which is also what
        ``policy="native"`` returns. True re-raises instead.

    The options are the same for every adapter (:class:`mempursuit_core.options.ReadOptions`).

    Notes
    -----
    With ``boundmem_tags``, pursuit policies select from the pool after LightMem's tag filter
    (up to ``limit`` matching memories out of the top ``pool``), while ``native`` keeps
    LightMem's behaviour (the matching memories among the top ``limit``, possibly fewer).
    Adaptive stopping (``policy="mempursuit"`` with ``policy_options={"adaptive": True}``) can
    return fewer than ``limit`` memories. The result is in the selector's order (most useful
    first); sort it by ``time_stamp`` before showing it to an answerer if you want the paper's
    presentation.
    """

    def __init__(
        self,
        memory: Any,
        *,
        k: int | None = None,
        pool: int | None = None,
        policy: str | Selector | None = None,
        policy_options: Mapping[str, Any] | None = None,
        strict: bool | None = None,
        **options: Any,
    ):
        if isinstance(memory, MemPursuitLightMemory):
            memory = memory.memory
        if getattr(memory, "embedding_retriever", None) is None:
            raise TypeError("MemPursuitLightMemory takes a LightMemory (e.g. "
                            "LightMemory.from_config(config), or use "
                            "MemPursuitLightMemory.from_config(config)), got "
                            f"{type(memory).__name__}")
        self.memory = memory
        self.options = ReadOptions.build("MemPursuitLightMemory", k=k, pool=pool, policy=policy,
                                         policy_options=policy_options, strict=strict,
                                         own=self.__init__, **options)
        self.selector = self.options.selector()
        self._trace = TraceSlot()
        self._warn_if_store_unprotected()

    @property
    def last_trace(self) -> ReadTrace | None:
        """What the last read on this thread did (a :class:`~mempursuit_core.trace.ReadTrace`:
        memories by id), or None."""
        return self._trace.last

    @classmethod
    def from_config(
        cls,
        config: Any,
        *,
        allow_store_reset: bool = False,
        **options: Any,
    ) -> "MemPursuitLightMemory":
        """``LightMemory.from_config`` with the store guard, wrapped (``options`` as for the
        constructor).

        ``config`` is LightMem's config dict (or a ``BaseMemoryConfigs``); it is passed through
        :func:`protect_qdrant_store` first, so an existing store is not deleted on open.
        """
        try:
            from lightmem.memory.lightmem import LightMemory  # LightMem installs from git
        except ModuleNotFoundError as exc:
            if not (exc.name or "").startswith("lightmem"):
                raise
            from mempursuit_core.adapter import AdapterNotInstalledError, get_adapter_spec

            raise AdapterNotInstalledError(
                "MemPursuitLightMemory.from_config needs LightMem, which is not installed: "
                f"{get_adapter_spec('lightmem').hint}") from None

        guarded = protect_qdrant_store(config, allow_reset=allow_store_reset)
        if isinstance(guarded, Mapping):
            memory = LightMemory.from_config(dict(guarded))
        else:
            memory = LightMemory(guarded)
        return cls(memory, **options)

    # -- delegation --------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes this wrapper does not define.
        if name == "memory":
            raise AttributeError(name)
        return getattr(self.memory, name)

    def __repr__(self) -> str:
        return (f"MemPursuitLightMemory({type(self.memory).__name__}, k={self.options.k}, pool={self.options.pool}, "
                f"policy={getattr(self.selector, 'name', self.selector)!r})")

    # -- reading ----------------------------------------------------------------------------

    def pool(self, query: str, filters: Mapping[str, Any] | None = None, *,
             size: int | None = None) -> LightMemPool:
        """LightMem's native top-``size`` hits for ``query`` with their stored vectors.

        The one read path of this adapter (``retrieve``, ``select`` and the evaluation harness
        all read through it): the same Qdrant call as ``LightMemory.retrieve`` (LightMem's
        query embedding, its filter translation, cosine order) with ``limit=size`` (default
        ``pool``), as a :class:`LightMemPool` with the signals LightMem stores.
        """
        size = self.options.pool if size is None else check_int("size", size)
        retriever = self.memory.embedding_retriever
        query_vector = self.memory.text_embedder.embed(query)
        query_filter = retriever._create_filter(dict(filters)) if filters else None
        response = retriever.client.query_points(
            collection_name=retriever.collection_name,
            query=list(map(float, query_vector)),
            query_filter=query_filter,
            limit=size,
            with_payload=True,
            with_vectors=True,
            search_params=qdrant_search_params(retriever.client, size),  # hnsw_ef >= P (server)
        )
        points = list(response.points)
        qv = np.asarray(query_vector, dtype=np.float32)
        if points:
            vectors = np.asarray([_point_vector(p) for p in points], dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[1] != qv.shape[0]:
                raise ValueError(
                    f"stored vectors have shape {vectors.shape}, query embedding has "
                    f"{qv.shape[0]} dimensions"
                )
        else:
            vectors = np.empty((0, qv.shape[0]), dtype=np.float32)
        hits = [{"id": p.id, "score": float(p.score), "payload": dict(p.payload or {})}
                for p in points]
        return LightMemPool(hits, qv, vectors,
                            native_scores=np.asarray([p.score for p in points], dtype=np.float64),
                            signals=lightmem_signals([h["payload"] for h in hits], query))

    def select(
        self,
        query: str,
        limit: int = 10,
        filters: Mapping[str, Any] | None = None,
        *,
        boundmem_tags: Any = None,
        boundmem_drop_untagged: bool = False,
    ) -> LightMemSelection:
        """Pool, select and report: the story behind :meth:`retrieve` (hit dicts, not strings).

        The pool is the top ``pool`` (for ``policy="native"``: the top ``limit``, LightMem's
        own query), then LightMem's BoundMem tag filter when ``boundmem_tags`` is given, then the
        selector. On a failure inside the adapter (with ``fallback=True``) the entries are
        LightMem's native hits (top ``limit``, tag-filtered) and ``fallback_reason`` says why.
        """
        limit = self.options.budget(check_int("limit", limit))
        reasons: list[str] = []

        def native() -> LightMemSelection:
            entries = self._native_hits(query, limit, filters, boundmem_tags,
                                        boundmem_drop_untagged)
            return LightMemSelection(entries=entries, fallback_reason=reasons[-1])

        return self._read(
            lambda: self._select(query, limit, filters, boundmem_tags, boundmem_drop_untagged),
            native, reasons.append, items=lambda got: got.entries, query=query)

    def retrieve(
        self,
        query: str,
        limit: int = 10,
        filters: Mapping[str, Any] | None = None,
        *,
        boundmem_tags: Any = None,
        boundmem_drop_untagged: bool = False,
        return_full: bool = False,
    ) -> list:
        """``LightMemory.retrieve`` with the ``limit`` memories chosen from the top-P pool.

        Parameters
        ----------
        query : str
        limit : int, default 10
            ``K``, how many memories to return.
        filters : dict, optional
            LightMem's filters (``{"field": value}`` or ``{"field": {"gte": a, "lte": b}}``).
        boundmem_tags, boundmem_drop_untagged
            As in ``LightMemory.retrieve``, with LightMem's own ``filter_by_tags``. For
            ``policy="native"`` it filters the top ``limit`` (exactly LightMem: possibly fewer
            than ``limit`` results); for the other policies it filters the whole pool before
            selection, so they return up to ``limit`` matching memories from the top
            ``pool``.
        return_full : bool, default False
            Return LightMem's hit dicts ``{"id", "score", "payload"}`` instead of strings.

        Returns
        -------
        list of str or list of dict
            ``"time_stamp weekday memory"`` strings (LightMem's format) in the selector's
            order, or the hit dicts when ``return_full``. If the adapter fails (and
            ``fallback`` is on) this is exactly what the wrapped ``LightMemory.retrieve``
            returns, and the reason is logged at WARNING.
        """
        limit = self.options.budget(check_int("limit", limit))

        def ours() -> list:
            result = self._select(query, limit, filters, boundmem_tags, boundmem_drop_untagged)
            return result.entries if return_full else _format_hits(result.entries, boundmem_tags)

        def native() -> list:
            if return_full:
                return self._native_hits(query, limit, filters, boundmem_tags,
                                         boundmem_drop_untagged)
            kwargs = {}
            if boundmem_tags is not None:
                kwargs = dict(boundmem_tags=boundmem_tags,
                              boundmem_drop_untagged=boundmem_drop_untagged)
            return list(self.memory.retrieve(query, limit, filters, **kwargs))

        return self._read(ours, native, items=list if return_full else None, query=query)

    # -- helpers -----------------------------------------------------------------------------

    def _select(self, query, limit, filters, boundmem_tags, drop_untagged) -> LightMemSelection:
        # native is LightMem's retrieve: its query is the top ``limit``, and the tag filter
        # thins that (no refill from further down the pool)
        native = self.options.is_native
        pool = self.pool(query, filters, size=limit if native else self.options.pool_size(limit))
        hits = [pool.entry(i) for i in range(len(pool))]
        idx = np.arange(len(pool), dtype=np.intp)
        if boundmem_tags is not None and hits:
            from lightmem.memory.utils import filter_by_tags  # LightMem's own BoundMem filter

            hits, info = filter_by_tags(query=query, results=hits, environment_tags=boundmem_tags,
                                        drop_untagged_on_tag_filter=drop_untagged)
            idx = np.asarray(info.get("kept_result_indices", info.get("tag_kept_indices")),
                             dtype=np.intp).reshape(-1)
            if len(idx) != len(hits):
                raise ValueError("LightMem's filter_by_tags reported inconsistent indices")
        if not hits:
            return LightMemSelection(entries=[], pool=pool)
        # the policy reads the text LightMem shows (tag prefixes stripped), as the answerer will
        candidates = pool
        if boundmem_tags is not None:
            shown = [_shown_payload(h["payload"], boundmem_tags) for h in hits]
            candidates = LightMemPool(hits, pool.query_vector, pool.vectors[idx],
                                      native_scores=pool.scores[idx],
                                      signals=lightmem_signals(shown, query))
        chosen = candidates.select(self.selector, limit)
        return LightMemSelection(entries=chosen.items, pool=pool, selection=chosen.selection,
                                 info={"candidates": idx})

    def _read(self, ours, native, on_fallback=None, items=None, *, query=None):
        """``ours()``, or LightMem's own result with one warning (:func:`read_or_native`), as
        for an empty or blank ``query`` (:func:`blank_query`); ``items(result)``: the hit dicts a
        result holds (the trace's final order; None: the policy's choice, and nothing after a
        fallback to strings)."""
        if not self.options.is_native and blank_query(query, "MemPursuitLightMemory", log=logger):
            if on_fallback is not None:
                on_fallback("the query is empty or blank")
            return native()
        return read_or_native(ours, native, strict=self.options.strict, framework="LightMem",
                              log=logger, on_fallback=on_fallback, trace=self._trace,
                              ids=lambda hit: hit["id"], result_items=items)

    def _native_hits(self, query, limit, filters, boundmem_tags, drop_untagged) -> list[dict]:
        """LightMem's native hits, obtained exactly as ``LightMemory.retrieve`` obtains them."""
        query_vector = self.memory.text_embedder.embed(query)
        hits = self.memory.embedding_retriever.search(
            query_vector=query_vector, limit=limit, filters=filters, return_full=True
        )
        if boundmem_tags is not None:
            from lightmem.memory.utils import filter_by_tags

            hits, _ = filter_by_tags(query=query, results=hits, environment_tags=boundmem_tags,
                                     drop_untagged_on_tag_filter=drop_untagged)
        return list(hits)

    def _warn_if_store_unprotected(self) -> None:
        cfg = getattr(getattr(getattr(self.memory, "config", None), "embedding_retriever", None),
                      "configs", None)
        if cfg is None or not _is_path_store(cfg):
            return
        if not getattr(cfg, "on_disk", True):
            logger.warning(
                "this LightMem store (%s) was opened with on_disk=False: LightMem deletes it the "
                "next time a LightMemory opens it; use MemPursuitLightMemory.from_config or "
                "on_disk=True", _store_path(cfg),
            )
