"""Registers the LangGraph adapter (imports cleanly without LangGraph)."""

from mempursuit_core.hookspecs import hookimpl
from mempursuit_core.plugins import AdapterSpec

SPEC = AdapterSpec(
    name="langgraph",
    module="mempursuit_langgraph",
    framework="langgraph",
    extra="langgraph",
    summary=("LangGraph / LangMem: a BaseStore wrapper that reorders the store's own top-200 "
             "(InMemoryStore, SqliteStore, PostgresStore) with vectors read from the store"),
)


@hookimpl
def register_adapters(register):
    register(SPEC)
