"""Registers the LlamaIndex adapter (imports cleanly without LlamaIndex)."""

from mempursuit_core.adapter import AdapterSpec, hookimpl

SPEC = AdapterSpec(
    name="llamaindex",
    module="mempursuit_llamaindex.postprocessor",
    framework="llama_index.core",
    extra="llamaindex",
    summary="LlamaIndex: a node postprocessor for VectorMemoryBlock and query engines, and a "
            "retriever wrapper",
)


@hookimpl
def register_adapters(register):
    register(SPEC)
