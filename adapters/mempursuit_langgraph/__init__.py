"""MemPursuit for LangGraph (and LangMem): a read policy on the LangGraph memory store.

The one line, before ``builder.compile(store=store)`` or ``create_search_memory_tool(...,
store=store)``::

    from mempursuit_langgraph import MemPursuitStore

    store = MemPursuitStore(store)

Every store operation passes through; a search with a ``query`` returns what the read policy
picks from the store's own top ``P``. Importing this package imports nothing from LangGraph.
"""

from mempursuit_core.adapter import adapter_package

SPEC, __all__, __getattr__, __dir__, register_adapters = adapter_package(globals())
