"""Registers the LangChain adapter (imports cleanly without LangChain)."""

from mempursuit_core.adapter import AdapterSpec, hookimpl

SPEC = AdapterSpec(
    name="langchain",
    module="mempursuit_langchain.compressor",
    framework="langchain_core",
    extra="langchain",
    summary="LangChain: a document compressor and a VectorStore retriever that reorder P candidates",
)


@hookimpl
def register_adapters(register):
    register(SPEC)
