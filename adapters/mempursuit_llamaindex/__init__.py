"""MemPursuit for LlamaIndex: :class:`MemPursuitPostprocessor`, a ``BaseNodePostprocessor`` for
``VectorMemoryBlock``, query engines and chat engines; :class:`MemPursuitRetriever`, a retriever
wrapper for apps that call a retriever (retrievers do not run postprocessors); and
:class:`MemPursuitEmbedding`, the packaged offline embedder as a ``BaseEmbedding``.

Importing this package does not import LlamaIndex; the names below do.
"""

from mempursuit_core.adapter import AdapterSpec, adapter_package

SPEC = AdapterSpec(
    name="llamaindex", framework="llama_index.core", extra="llamaindex", label="LlamaIndex",
    module="mempursuit_llamaindex.postprocessor",
    swap=("MemPursuitRetriever(index.as_retriever(similarity_top_k=200), k=10); a query engine: "
          "node_postprocessors=[MemPursuitPostprocessor(k=10, index=index)] with "
          "similarity_top_k=200"),
    docs="docs/adapters/llamaindex.md",
    second_read=("MetadataFilters title IN on the index's vector store, ANDed with the retriever's"
                 " filters"),
    summary=("LlamaIndex: a node postprocessor for VectorMemoryBlock and query engines, and a "
             "retriever wrapper"),
    exports={"DEFAULT_METADATA_KEYS": "postprocessor", "MemPursuitPostprocessor": "postprocessor",
             "MemPursuitRetriever": "retriever", "MemPursuitEmbedding": "embedding"},
)

__all__, __getattr__, __dir__, register_adapters = adapter_package(globals(), SPEC)
