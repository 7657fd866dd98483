"""Registers the LangGraph adapter (imports cleanly without LangGraph)."""

from mempursuit_core.adapter import AdapterSpec, hookimpl

SPEC = AdapterSpec(
    name="langgraph",
    module="mempursuit_langgraph",
    framework="langgraph",
    extra="langgraph",
    swap='store = MemPursuitStore(store)  before builder.compile(store=store)',
    docs="docs/adapters/langgraph.md",
    second_read=("store.batch of searches with filter {title: t}, inside the search's namespace "
                 "prefix and filter"),
    summary=("LangGraph / LangMem: a BaseStore wrapper that reorders the store's own top-200 "
             "(InMemoryStore, SqliteStore, PostgresStore) with vectors read from the store"),
)


@hookimpl
def register_adapters(register):
    register(SPEC)
