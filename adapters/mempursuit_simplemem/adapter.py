"""MemPursuit as SimpleMem's read policy.

SimpleMem (aiming-lab/SimpleMem) answers a question with ``HybridRetriever.retrieve(query)``:
a list of ``MemoryEntry`` records, de-duplicated by ``entry_id`` and never truncated (0.1.0 on
the registry: the union of semantic top-25 searches for the planner's queries; the repository's
newer versions add keyword (full-text) top-5 and structured top-5 channels and reflection
rounds). :class:`MemPursuitRetriever` wraps that retriever, keeps its pool in native order
(capped at ``pool``, default 200), fetches the stored ``vector`` of each entry from the
LanceDB table, embeds the query with SimpleMem's own embedder and returns the ``k`` entries a
selector (MemPursuit by default) picks, in the selector's order.

One-line swap::

    system.hybrid_retriever = MemPursuitRetriever(system.hybrid_retriever, k=10)
    # or: mempursuit_simplemem.enable(system, k=10)

Any retriever with ``retrieve(query[, enable_reflection])`` returning objects with an
``entry_id``, and a ``vector_store`` with SimpleMem's ``embedding_model`` and a LanceDB
``table`` (0.1.0: ``VectorStore.table``; newer: the ``table`` property or ``backend.table``),
works: the version is detected by duck typing, not by version numbers.

Determinism: SimpleMem runs its planned searches in a thread pool and appends results as the
threads finish, so the native pool order changes from call to call. With
``deterministic=True`` (default) the adapter runs a shallow copy of the retriever with
``enable_parallel_retrieval=False``: the same searches, one after another in the planner's
order (semantic, then keyword, then structured), so the order no longer depends on thread
timing. The planner's LLM queries are still sampled by the LLM, which no adapter can fix.

Private SimpleMem details this module relies on (read in simplemem 0.1.0 and the repository's
``simplemem/core``): ``HybridRetriever.vector_store`` and ``.enable_parallel_retrieval``;
``VectorStore.embedding_model.encode_single(text, is_query=True)`` (the embedding its semantic
search uses; normalised); the LanceDB table's ``entry_id`` and ``vector`` columns
(``VectorStore._init_table``).

Lexical signal: policies that read ``signals["lexical"]`` (``pursuit-center``) get SimpleMem's
keyword-channel score of each pool entry, BM25 from the table's full-text index on
``lossless_restatement`` (:func:`keyword_scores`), computed only when a policy reads it.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any, Sequence

import numpy as np

from mempursuit_core.adapter import (DEFAULT_POOL, CandidatePool, ReadOptions,
                                     ReadTrace, Selection, Selector, TraceSlot, blank_query,
                                     check_int, pool_signals, read_or_native)

__all__ = [
    "DEFAULT_POOL_SIZE",
    "MemPursuitRetriever",
    "SimpleMemPool",
    "SimpleMemSelection",
    "enable",
    "ensure_fts_index",
    "fetch_vectors",
    "has_fts_index",
    "keyword_scores",
    "lance_table",
]

logger = logging.getLogger(__name__)

DEFAULT_POOL_SIZE = DEFAULT_POOL  # the old name
DEFAULT_K = 10  # SimpleMem returns its whole pool: a budget of its own
FTS_COLUMN = "lossless_restatement"  # what SimpleMem's keyword channel searches


@dataclass
class SimpleMemPool(CandidatePool):
    """SimpleMem's candidate pool for one query (a :class:`CandidatePool`).

    Attributes
    ----------
    items : list of MemoryEntry, length P
        The retriever's de-duplicated result in native order, capped at ``pool``
        (also ``entries``).
    query_vector : ndarray of float32, shape (d,)
        The query embedding from SimpleMem's embedder.
    vectors : ndarray of float32, shape (P, d)
        The stored ``vector`` of each entry, read from LanceDB (not re-embedded).
    native_scores : ndarray of float64, shape (P,)
        Cosine of each stored vector with the query vector (SimpleMem's semantic score).
    signals : PoolSignals
        What SimpleMem stores about each entry: ``texts`` (``lossless_restatement``),
        ``query_text``, ``timestamps`` (``timestamp``), ``dense`` (= ``native_scores``),
        tf-idf features over the pool's texts, and ``lexical`` (its keyword channel's BM25,
        computed when a policy reads it).
    native_size : int
        How many unique entries the retriever returned before the cap.
    """

    native_size: int = 0

    @property
    def entries(self) -> list:
        return self.items

    @property
    def entry_ids(self) -> list[str]:
        return [e.entry_id for e in self.items]


@dataclass
class SimpleMemSelection:
    """What :meth:`MemPursuitRetriever.select` chose.

    Attributes
    ----------
    entries : list of MemoryEntry
        The kept entries in the selector's order (the native first ``k`` on fallback).
    pool : SimpleMemPool or None
        The pool with its vectors (None when the failure came before the vectors were read).
    native : list of MemoryEntry
        The retriever's de-duplicated result, native order, before the ``pool`` cap.
    selection : Selection or None
    fallback_reason : str or None
    """

    entries: list
    pool: SimpleMemPool | None = None
    native: list = field(default_factory=list)
    selection: Selection | None = None
    fallback_reason: str | None = None


# --------------------------------------------------------------------------------------------
# LanceDB plumbing
# --------------------------------------------------------------------------------------------

def lance_table(store: Any) -> Any:
    """The LanceDB table behind a SimpleMem ``VectorStore`` (any version), or the table itself."""
    if hasattr(store, "search") and hasattr(store, "list_indices"):
        return store
    table = getattr(store, "table", None)
    if table is None:
        table = getattr(getattr(store, "backend", None), "table", None)
    if table is None:
        raise TypeError(
            f"{type(store).__name__} exposes no LanceDB table (expected .table or .backend.table)"
        )
    return table


def _quote(value: Any) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def fetch_vectors(store: Any, entry_ids: Sequence[str], *, chunk: int = 500) -> np.ndarray:
    """The stored ``vector`` of each ``entry_id``, in the order given.

    Parameters
    ----------
    store : SimpleMem ``VectorStore`` or LanceDB table
    entry_ids : sequence of str, length n

    Returns
    -------
    ndarray of float32, shape (n, d)

    Raises
    ------
    KeyError
        If an id is not in the table (e.g. deleted after retrieval).
    """
    table = lance_table(store)
    ids = [str(i) for i in entry_ids]
    found: dict[str, np.ndarray] = {}
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), chunk):
        part = unique[start:start + chunk]
        where = f"entry_id IN ({', '.join(_quote(i) for i in part)})"
        rows = (table.search().where(where).select(["entry_id", "vector"])
                .limit(None).to_arrow())
        got_ids = rows.column("entry_id").to_pylist()
        vecs = rows.column("vector").to_numpy(zero_copy_only=False)
        for eid, vec in zip(got_ids, vecs):
            if eid in found:
                if not np.array_equal(found[eid], vec):
                    logger.warning("entry_id %r is stored twice with different vectors; "
                                   "using the first row", eid)
                continue
            found[eid] = np.asarray(vec, dtype=np.float32)
    missing = [i for i in unique if i not in found]
    if missing:
        raise KeyError(f"{len(missing)} entry_id(s) not found in the LanceDB table, e.g. "
                       f"{missing[0]!r}")
    if not ids:
        return np.empty((0, 0), dtype=np.float32)
    return np.stack([found[i] for i in ids]).astype(np.float32, copy=False)


def has_fts_index(store: Any, column: str = FTS_COLUMN) -> bool:
    """Whether the table has a native full-text (``FTS``/inverted) index on ``column``."""
    table = lance_table(store)
    for index in table.list_indices():
        kind = str(getattr(index, "index_type", "")).upper()
        if column in list(getattr(index, "columns", []) or []) and (
                "FTS" in kind or "INVERTED" in kind):
            return True
    return False


def ensure_fts_index(store: Any, column: str = FTS_COLUMN) -> bool:
    """Create the native full-text index SimpleMem's keyword channel needs, if it is missing.

    SimpleMem builds its keyword index with ``create_fts_index(..., use_tantivy=True)``;
    lancedb removed Tantivy-based FTS (0.40 says so and SimpleMem prints "FTS index creation
    skipped"), after which every keyword search fails inside SimpleMem and is reported as an
    empty result. The native index is a one-time fix for an existing table; rows added later
    are still searched (lancedb scans unindexed rows).

    Returns
    -------
    bool
        True if an index was created, False if one was already there.
    """
    table = lance_table(store)
    if has_fts_index(table, column):
        return False
    try:
        from lancedb.index import FTS
    except ImportError:  # older lancedb: the pre-0.25 call
        table.create_fts_index(column, replace=True)
    else:
        table.create_index(column, config=FTS(), replace=True)
    if hasattr(store, "_fts_initialized"):
        store._fts_initialized = True
    backend = getattr(store, "backend", None)
    if backend is not None and hasattr(backend, "_fts_initialized"):
        backend._fts_initialized = True
    logger.info("created a native full-text index on %r for SimpleMem's keyword channel", column)
    return True


def keyword_scores(store: Any, query: str, entry_ids: Sequence[str], *,
                   chunk: int = 500) -> np.ndarray:
    """SimpleMem's keyword-channel score (LanceDB full-text BM25, ``_score``) of each entry.

    SimpleMem's keyword search is ``table.search(" ".join(keywords))`` on the full-text index
    of ``lossless_restatement``, with keywords an LLM extracted from the question (its fallback
    when none come back: the question itself). No LLM is called here: the query text is the
    keyword string. As in SimpleMem the search names no column (the table's full-text index is
    on ``lossless_restatement``; naming one would make lancedb scan an unindexed column where
    SimpleMem's search fails). It is prefiltered to ``entry_ids``; BM25 statistics are the
    index's (the whole table), so a score does not depend on which other entries are asked for.

    Parameters
    ----------
    store : SimpleMem ``VectorStore`` or LanceDB table
    query : str
    entry_ids : sequence of str, length n

    Returns
    -------
    ndarray of float64, shape (n,)
        The score of each id in the order given; 0.0 where the query matches no term of it
        (and everywhere for a query of stop words only).

    Raises
    ------
    Exception
        LanceDB's error when the table has no full-text index (see :func:`ensure_fts_index`)
        or the search fails.
    """
    table = lance_table(store)
    ids = [str(i) for i in entry_ids]
    unique = list(dict.fromkeys(ids))
    found: dict[str, float] = {}
    for start in range(0, len(unique), chunk):
        part = unique[start:start + chunk]
        rows = (table.search(query, query_type="fts")
                .where(f"entry_id IN ({', '.join(_quote(i) for i in part)})", prefilter=True)
                .select(["entry_id", "_score"]).limit(len(part)).to_arrow())
        for eid, score in zip(rows.column("entry_id").to_pylist(),
                              rows.column("_score").to_pylist()):
            found[eid] = max(found.get(eid, 0.0), float(score))  # an id stored twice: best row
    return np.array([found.get(i, 0.0) for i in ids], dtype=np.float64)


# --------------------------------------------------------------------------------------------
# The wrapper
# --------------------------------------------------------------------------------------------

class MemPursuitRetriever:
    """A SimpleMem ``HybridRetriever`` whose ``retrieve`` returns the ``k`` entries a selector picks.

    Parameters
    ----------
    retriever : SimpleMem ``HybridRetriever`` (0.1.0 or newer) or a duck-typed equivalent
    k : int or None, default None (10)
        Budget ``K``: how many entries ``retrieve`` returns. SimpleMem itself returns its whole
        pool, so there is no framework ``top_k`` to follow: ``None`` means 10.
    pool : int, default 200
        ``P``: the native pool is cut to its first ``P`` unique entries before selection
        (raised to ``K`` when smaller).
    policy : str or Selector, default ``mempursuit_core.DEFAULT_POLICY``
        A registered selector name or a ready selector; ``"native"`` returns the native first
        ``k`` (the "w/o" baseline), ``"mempursuit"`` is the paper's rule.
    policy_options : dict, optional
        Passed to :func:`mempursuit_core.get_selector`; other keyword arguments are taken as
        policy options too.
    strict : bool, default False
        False: if reading vectors, embedding the query or selecting fails, log the reason at
        WARNING and return the native first ``k``. True re-raises. Failures of SimpleMem's own
        retrieval are SimpleMem's and always propagate.
    deterministic : bool, default True
        Run SimpleMem's planned searches sequentially (see the module notes).

    The options are the same for every adapter (:class:`mempursuit_core.options.ReadOptions`).
    """

    def __init__(
        self,
        retriever: Any,
        *,
        k: int | None = None,
        pool: int | None = None,
        policy: str | Selector | None = None,
        policy_options: Mapping[str, Any] | None = None,
        strict: bool | None = None,
        deterministic: bool = True,
        **options: Any,
    ):
        if isinstance(retriever, MemPursuitRetriever):
            retriever = retriever.retriever
        if not callable(getattr(retriever, "retrieve", None)):
            raise TypeError(f"{type(retriever).__name__} has no retrieve(query) method")
        self.retriever = retriever
        self.options = ReadOptions.build("MemPursuitRetriever", k=k, pool=pool, policy=policy,
                                         policy_options=policy_options, strict=strict,
                                         own=self.__init__, **options)
        self.k = DEFAULT_K if self.options.k is None else self.options.k
        self.selector = self.options.selector()
        self._trace = TraceSlot()
        self.deterministic = bool(deterministic)
        self._warned_lexical = False

    def __getattr__(self, name: str) -> Any:
        if name == "retriever":
            raise AttributeError(name)
        return getattr(self.retriever, name)

    def __repr__(self) -> str:
        return (f"MemPursuitRetriever({type(self.retriever).__name__}, k={self.k}, "
                f"pool={self.options.pool}, policy={getattr(self.selector, 'name', '?')!r})")

    @property
    def vector_store(self) -> Any:
        return self.retriever.vector_store

    # -- native pool -------------------------------------------------------------------------

    def _run(self, query: str, enable_reflection: bool | None) -> list:
        """Call the framework's retrieval (sequentially when ``deterministic``)."""
        runner = self.retriever
        if self.deterministic and getattr(runner, "enable_parallel_retrieval", False):
            try:
                runner = copy.copy(runner)  # shares store and LLM client; only the flag differs
                runner.enable_parallel_retrieval = False
            except Exception as exc:  # noqa: BLE001
                logger.warning("could not make SimpleMem's retrieval sequential (%s: %s); its "
                               "pool order may vary between calls", type(exc).__name__, exc)
                runner = self.retriever
        if enable_reflection is None:
            return list(runner.retrieve(query) or [])
        return list(runner.retrieve(query, enable_reflection=enable_reflection) or [])

    @staticmethod
    def _unique(entries: Sequence[Any]) -> list:
        seen: set = set()
        unique = []
        for entry in entries:
            key = entry.entry_id
            if key not in seen:
                seen.add(key)
                unique.append(entry)
        return unique

    def native(self, query: str, enable_reflection: bool | None = None) -> list:
        """SimpleMem's own result for ``query``, de-duplicated by ``entry_id``, native order."""
        return self._unique(self._run(query, enable_reflection))

    def pool_from(self, query: str, entries: Sequence[Any]) -> SimpleMemPool:
        """The pool for a given native result: first ``pool`` entries with their vectors.

        The one read path of this adapter (``select``, ``retrieve`` and the evaluation
        harness read through it): the stored vectors, SimpleMem's query embedding, the cosine
        scores and the signals SimpleMem keeps (:class:`SimpleMemPool`). SimpleMem keeps no
        session id, no writer (``persons`` are the people a memory mentions) and no write order.
        """
        entries = self._unique(entries)
        kept = entries[: self.options.pool_size(self.k)]
        store = self.vector_store
        query_vector = np.asarray(store.embedding_model.encode_single(query, is_query=True),
                                  dtype=np.float32).reshape(-1)
        vectors = fetch_vectors(store, [e.entry_id for e in kept])
        if kept and vectors.shape[1] != query_vector.shape[0]:
            raise ValueError(f"stored vectors have {vectors.shape[1]} dimensions, the query "
                             f"embedding has {query_vector.shape[0]}")
        if not kept:
            vectors = np.empty((0, query_vector.shape[0]), dtype=np.float32)
        qv = query_vector.astype(np.float64)
        V = vectors.astype(np.float64)
        norms = np.linalg.norm(V, axis=1)
        dense = (V @ (qv / max(float(np.linalg.norm(qv)), 1e-12))) / np.maximum(norms, 1e-12)
        ids = [e.entry_id for e in kept]
        signals = pool_signals(
            [getattr(e, "lossless_restatement", "") or "" for e in kept], query,
            timestamps=[getattr(e, "timestamp", None) for e in kept], dense=dense,
        ).with_optional("lexical", lambda: self._lexical(query, ids))
        return SimpleMemPool(kept, query_vector, vectors, native_scores=dense, signals=signals,
                             native_size=len(entries))

    def pool(self, query: str, enable_reflection: bool | None = None) -> SimpleMemPool:
        """Run SimpleMem's retrieval and return the capped pool with its stored vectors."""
        return self.pool_from(query, self.native(query, enable_reflection))

    # -- selection ---------------------------------------------------------------------------

    def select_from(self, query: str, entries: Sequence[Any], k: int | None = None
                    ) -> SimpleMemSelection:
        """Select from a native result already at hand (no retrieval, no LLM call).

        ``entries`` is what ``HybridRetriever.retrieve`` returned (de-duplicated here by
        ``entry_id``, first occurrence kept).
        """
        k = self.k if k is None else check_int("k", k)
        state: dict[str, Any] = {"native": list(entries)}

        def ours() -> SimpleMemSelection:
            native = state["native"] = self._unique(state["native"])
            pool = state["pool"] = self.pool_from(query, native)
            if not len(pool):
                return SimpleMemSelection(entries=[], pool=pool, native=native)
            chosen = pool.select(self.selector, k)
            return SimpleMemSelection(entries=chosen.items, pool=pool, native=native,
                                      selection=chosen.selection)

        def fallback() -> SimpleMemSelection:
            native = state["native"]
            return SimpleMemSelection(entries=native[:k], pool=state.get("pool"), native=native,
                                      fallback_reason=state["reason"])

        if not self.options.is_native and blank_query(query, "MemPursuitRetriever", log=logger):
            state["reason"] = "the query is empty or blank"
            return fallback()
        return read_or_native(ours, fallback, strict=self.options.strict, framework="SimpleMem",
                              log=logger, on_fallback=lambda r: state.update(reason=r),
                              trace=self._trace, ids=lambda e: e.entry_id,
                              result_items=lambda got: got.entries)

    @property
    def last_trace(self) -> ReadTrace | None:
        """What the last read on this thread did (a :class:`~mempursuit_core.trace.ReadTrace`:
        entries by ``entry_id``), or None."""
        return self._trace.last

    def _lexical(self, query: str, entry_ids: list[str]) -> np.ndarray | None:
        """The ``"lexical"`` signal, shape (P,), or None (logged once) when SimpleMem's keyword
        search cannot run: policies then use their own lexical score (pursuit-center: BM25
        over the pool's texts)."""
        try:
            return keyword_scores(self.vector_store, query, entry_ids)
        except Exception as exc:  # noqa: BLE001 - a missing signal must not cost the selection
            if not self._warned_lexical:
                self._warned_lexical = True
                try:
                    missing = not has_fts_index(self.vector_store)
                except Exception:  # noqa: BLE001
                    missing = False
                fix = ("the table has no full-text index on %r; create it once with "
                       "mempursuit_simplemem.ensure_fts_index(vector_store)" % FTS_COLUMN
                       if missing else "check the LanceDB table")
                logger.warning("SimpleMem's keyword search failed (%s: %s): no 'lexical' signal, "
                               "policies fall back to their own lexical score; %s",
                               type(exc).__name__, exc, fix)
            return None

    def select(self, query: str, enable_reflection: bool | None = None, *, k: int | None = None
               ) -> SimpleMemSelection:
        """Retrieve, select and report: the story behind :meth:`retrieve`."""
        k = self.k if k is None else check_int("k", k)
        return self.select_from(query, self._run(query, enable_reflection), k)

    def retrieve(self, query: str, enable_reflection: bool | None = None, *, k: int | None = None
                 ) -> list:
        """``HybridRetriever.retrieve`` truncated at ``k`` in the selector's order.

        Returns
        -------
        list of MemoryEntry
            At most ``k`` of SimpleMem's own entries (the same objects its retrieval returned).
        """
        return self.select(query, enable_reflection, k=k).entries


def enable(system: Any, **options: Any) -> MemPursuitRetriever:
    """Swap a SimpleMem system's ``hybrid_retriever`` for a :class:`MemPursuitRetriever`.

    ``system.ask(question)`` then answers from the ``k`` selected entries. Returns the wrapper.
    """
    if getattr(system, "hybrid_retriever", None) is None:
        raise TypeError("mempursuit_simplemem.enable() takes a SimpleMem system (one with a "
                        f"hybrid_retriever, e.g. SimpleMemSystem(...)), got {type(system).__name__}")
    wrapper = MemPursuitRetriever(system.hybrid_retriever, **options)
    system.hybrid_retriever = wrapper
    return wrapper
