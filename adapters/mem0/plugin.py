"""Registers the Mem0 adapter with mempursuit's plugin host (imports nothing from Mem0)."""

from mempursuit_core.adapter import AdapterSpec, hookimpl


@hookimpl
def register_adapters(register):
    register(
        AdapterSpec(
            name="mem0",
            module="mempursuit_mem0",
            framework="mem0",
            extra="mem0",
            summary=(
                "Mem0 (mem0ai 2.x): reorders Mem0's own ranked pool with vectors read back "
                "from Qdrant, FAISS, Chroma or pgvector"
            ),
        )
    )
