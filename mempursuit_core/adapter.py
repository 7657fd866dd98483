"""Everything a framework adapter needs from the core, in one import.

An adapter (built in or a plugin) translates between its framework's objects and
``(query vector, pool vectors, native order, signals)`` through the core's read path, and
imports only from here::

    from mempursuit_core.adapter import CandidatePool, ReadOptions, pool_signals, read_or_native

The names, by what they are for:

==========================  =================================================================
read options                :class:`ReadOptions` (``k``, ``pool``, ``policy``,
                            ``policy_options``, ``strict``; ``is_native``), :data:`DEFAULT_POOL`,
                            :data:`DEFAULT_POLICY`, :func:`blank_query` (an empty or blank
                            query: one warning, and the framework's own result)
the read path               :class:`CandidatePool` (``select``), :class:`PoolSelection`,
                            :func:`read_or_native` / :func:`aread_or_native` (the framework's own
                            result and one warning on any failure, on the ``mempursuit``
                            logger unless given ``log=``), :func:`stored_pool`
                            (items with their stored vectors -> the checked pool and the
                            unscored rest, in the adapter's error type and wording)
stored vectors              :class:`VectorResolver` (the item's own vector, else the store's
                            by id, else the text embedded once and cached:
                            :class:`EmbeddedVectors`), :func:`register_vector_reader`,
                            :func:`vector_reader_for`, :func:`supported_stores`: one registry,
                            looked up by the store object's class and its bases
signals                     :func:`pool_signals`, :class:`PoolSignals`; a document's title:
                            :func:`document_title` (:data:`TITLE_KEYS`; :data:`PATH_KEYS`
                            give their file's stem), the one derivation
the second read             :class:`TitleIndex` (a store's titles, indexed once per
                            version: :func:`write_version` counts writes through the store's
                            own methods), :class:`TitleLookup` (the ``"title_lookup"`` signal:
                            the index and one read's fetch by title inside the caller's
                            scope, with its key, scope check and deadline), :class:`Fetched`,
                            :class:`ScopedTitleIndexes` (one index per scope of a store),
                            :data:`DEFAULT_FOLLOW_TIMEOUT` (the deadline's default)
the read's trace            :class:`ReadTrace` (what the last read did: native and final
                            order, where the vectors came from, the second read, the
                            fallback), :class:`TraceSlot` (where a component keeps it:
                            pass ``trace=`` to :func:`read_or_native`; :class:`recording`
                            around a read that is more than one), :func:`note_vectors`,
                            :func:`note_pool`, :func:`note_final`
rerank-style adapters       :class:`Reranker` (items already retrieved: budget, pass-through,
                            fallback), :func:`metadata_signals` (:data:`DEFAULT_METADATA_KEYS`,
                            ``titles`` / ``session_ids`` of documents), :func:`native_scores`
policies                    :class:`Selector`, :class:`Selection`, :class:`NativeSelector`,
                            :func:`get_selector`, :func:`resolve_selector`
checks                      :func:`check_int`, :func:`check_k`, :func:`checked_order`,
                            :func:`did_you_mean` (a misspelt name's nearest known one)
the plugin host             :data:`hookimpl`, :class:`AdapterSpec`, :func:`adapter_package`
                            (an adapter package's names and hook from its one spec),
                            :class:`AdapterNotInstalledError`, :func:`get_adapter_spec`,
                            :func:`install_line` (an extra's install line)
ANN indexes (a full pool)   :func:`pgvector_read_settings` / :func:`apgvector_read_settings`
                            (``hnsw.ef_search`` / ``ivfflat.probes`` raised inside the read's
                            transaction only; :func:`pgvector_targets`: the values a read
                            sets), :func:`qdrant_search_params` (``hnsw_ef``),
                            :func:`warn_short_pool` (one warning naming the setting to raise)
helpers                     :func:`get_embedder` (the packaged offline embedder),
                            :class:`LexicalIndex` (BM25 over a pool's texts),
                            :func:`lazy_exports` (an adapter package's lazy names: importing
                            it imports no framework; a third-party package passes
                            ``install=``, its own install line)
==========================  =================================================================

The submodules these come from are the core's own layout and may move; this module's names
are the supported surface for adapters (``CONTRIBUTING.md``, "Add an adapter"). The
conformance checks every adapter passes are in :mod:`mempursuit_core.testing`, for the
adapter's own tests.
"""

from __future__ import annotations

from .ann import (apgvector_read_settings, pgvector_read_settings, pgvector_targets,
                  qdrant_search_params, warn_short_pool)
from .builtins import DEFAULT_POLICY
from .embed import get_embedder
from .follow import (DEFAULT_FOLLOW_TIMEOUT, Fetched, ScopedTitleIndexes, TitleIndex,
                     TitleLookup, note_write, plain_match, write_version)
from .hookspecs import hookimpl
from .install import install_line
from .lazy import adapter_package, lazy_exports
from .lexical import LexicalIndex
from .options import DEFAULT_POOL, ReadOptions, blank_query
from .plugins import (AdapterNotInstalledError, AdapterSpec, did_you_mean, get_adapter_spec,
                      get_selector, resolve_selector)
from .metadata import (DEFAULT_METADATA_KEYS, PATH_KEYS, TITLE_KEYS, document_source,
                       document_title, metadata_signals, native_scores)
from .readpath import (CandidatePool, PoolSelection, Reranker, StoredPool, aread_or_native,
                       checked_order, read_or_native, stored_pool, warn_short_budget)
from .selectors import NativeSelector, Selection, Selector
from .signals import PoolSignals, pool_signals
from .trace import ReadTrace, TraceSlot, note_final, note_pool, note_vectors, recording
from .validation import check_int, check_k
from .vectors import (EmbeddedVectors, VectorResolver, register_vector_reader, supported_stores,
                      vector_reader_for)

__all__ = [
    "AdapterNotInstalledError",
    "AdapterSpec",
    "CandidatePool",
    "DEFAULT_FOLLOW_TIMEOUT",
    "DEFAULT_METADATA_KEYS",
    "DEFAULT_POLICY",
    "DEFAULT_POOL",
    "EmbeddedVectors",
    "Fetched",
    "LexicalIndex",
    "NativeSelector",
    "PATH_KEYS",
    "PoolSelection",
    "PoolSignals",
    "ReadOptions",
    "ReadTrace",
    "Reranker",
    "ScopedTitleIndexes",
    "Selection",
    "Selector",
    "StoredPool",
    "TITLE_KEYS",
    "TitleIndex",
    "TitleLookup",
    "TraceSlot",
    "VectorResolver",
    "adapter_package",
    "apgvector_read_settings",
    "aread_or_native",
    "blank_query",
    "check_int",
    "check_k",
    "checked_order",
    "did_you_mean",
    "document_source",
    "document_title",
    "get_adapter_spec",
    "get_embedder",
    "get_selector",
    "hookimpl",
    "install_line",
    "lazy_exports",
    "metadata_signals",
    "native_scores",
    "note_final",
    "note_pool",
    "note_vectors",
    "note_write",
    "pgvector_read_settings",
    "pgvector_targets",
    "plain_match",
    "pool_signals",
    "qdrant_search_params",
    "read_or_native",
    "recording",
    "register_vector_reader",
    "resolve_selector",
    "stored_pool",
    "supported_stores",
    "vector_reader_for",
    "write_version",
    "warn_short_budget",
    "warn_short_pool",
]
