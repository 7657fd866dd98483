"""Registers the LlamaIndex adapter (imports cleanly without LlamaIndex)."""

from mempursuit_core.hookspecs import hookimpl
from mempursuit_core.plugins import AdapterSpec

SPEC = AdapterSpec(
    name="llamaindex",
    module="mempursuit_llamaindex.postprocessor",
    framework="llama_index.core",
    extra="llamaindex",
    summary="LlamaIndex: a node postprocessor for VectorMemoryBlock, retrievers and query engines",
)


@hookimpl
def register_adapters(register):
    register(SPEC)
