"""MemPursuit for LangGraph (and LangMem): a read policy on the LangGraph memory store.

The one line, before ``builder.compile(store=store)`` or ``create_search_memory_tool(...,
store=store)``::

    from mempursuit_langgraph import MemPursuitStore

    store = MemPursuitStore(store)

Every store operation passes through; a search with a ``query`` returns what the read policy
picks from the store's own top ``P``. Importing this package imports nothing from LangGraph.
"""

from __future__ import annotations

from mempursuit_core.adapter import lazy_exports

__all__ = [
    "LangGraphPool",
    "MemPursuitStore",
    "QueryCapture",
    "SIGNAL_FIELDS",
    "VectorAccessError",
    "register_vector_reader",
    "supported_stores",
]

__getattr__, __dir__ = lazy_exports(
    globals(), {"MemPursuitStore": "store", "LangGraphPool": "store", "QueryCapture": "store",
                "SIGNAL_FIELDS": "store", "VectorAccessError": "readers",
                "register_vector_reader": "readers", "supported_stores": "readers"},
    needs={"store": "langgraph.store"}, framework="LangGraph", extra="langgraph")
