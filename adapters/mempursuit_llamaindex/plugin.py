"""Registers the LlamaIndex adapter (imports cleanly without LlamaIndex)."""

from mempursuit_core.adapter import AdapterSpec, hookimpl

SPEC = AdapterSpec(
    name="llamaindex",
    module="mempursuit_llamaindex.postprocessor",
    framework="llama_index.core",
    extra="llamaindex",
    swap=("MemPursuitRetriever(index.as_retriever(similarity_top_k=200), k=10); a query engine: "
          "node_postprocessors=[MemPursuitPostprocessor(k=10, index=index)] with "
          "similarity_top_k=200"),
    docs="docs/adapters/llamaindex.md",
    second_read=("MetadataFilters title IN on the index's vector store, ANDed with the retriever's"
                 " filters"),
    summary="LlamaIndex: a node postprocessor for VectorMemoryBlock and query engines, and a "
            "retriever wrapper",
)


@hookimpl
def register_adapters(register):
    register(SPEC)
