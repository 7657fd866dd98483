"""Registers the SimpleMem adapter (imports cleanly without SimpleMem or lancedb)."""

from mempursuit_core.adapter import AdapterSpec, hookimpl

SPEC = AdapterSpec(
    name="simplemem",
    module="mempursuit_simplemem.adapter",
    framework="simplemem",
    extra="simplemem",
    swap='system.hybrid_retriever = MemPursuitRetriever(system.hybrid_retriever, k=10)',
    docs="docs/adapters/simplemem.md",
    summary="SimpleMem (aiming-lab/SimpleMem): reorders HybridRetriever.retrieve's pool "
            "(top-200, stored LanceDB vectors)",
)


@hookimpl
def register_adapters(register):
    register(SPEC)
