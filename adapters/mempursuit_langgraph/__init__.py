"""MemPursuit for LangGraph (and LangMem): a read policy on the LangGraph memory store.

The one line, before ``builder.compile(store=store)`` or ``create_search_memory_tool(...,
store=store)``::

    from mempursuit_langgraph import MemPursuitStore

    store = MemPursuitStore(store)

Every store operation passes through; a search with a ``query`` returns what the read policy
picks from the store's own top ``P``. Importing this package imports nothing from LangGraph.
"""

from mempursuit_core.adapter import AdapterSpec, adapter_package

SPEC = AdapterSpec(
    name="langgraph", framework="langgraph", extra="langgraph", label="LangGraph",
    module="mempursuit_langgraph",
    swap='store = MemPursuitStore(store)  before builder.compile(store=store)',
    docs="docs/adapters/langgraph.md",
    second_read=("store.batch of searches with filter {title: t}, inside the search's namespace "
                 "prefix and filter"),
    summary=("LangGraph / LangMem: a BaseStore wrapper that reorders the store's own top-200 "
             "(InMemoryStore, SqliteStore, PostgresStore) with vectors read from the store"),
    exports={"MemPursuitStore": "store", "LangGraphPool": "store", "QueryCapture": "store",
             "SIGNAL_FIELDS": "store", "VectorAccessError": "readers",
             "register_vector_reader": "readers", "supported_stores": "readers"},
    needs={"store": "langgraph.store"},
)

__all__, __getattr__, __dir__, register_adapters = adapter_package(globals(), SPEC)
