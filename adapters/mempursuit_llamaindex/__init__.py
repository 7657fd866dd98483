"""MemPursuit for LlamaIndex: :class:`MemPursuitPostprocessor`, a ``BaseNodePostprocessor`` for
``VectorMemoryBlock``, query engines and chat engines; :class:`MemPursuitRetriever`, a retriever
wrapper for apps that call a retriever (retrievers do not run postprocessors); and
:class:`MemPursuitEmbedding`, the packaged offline embedder as a ``BaseEmbedding``.

Importing this package does not import LlamaIndex; the names below do.
"""

from mempursuit_core.adapter import lazy_exports

__all__ = ["DEFAULT_METADATA_KEYS", "MemPursuitEmbedding", "MemPursuitPostprocessor",
           "MemPursuitRetriever"]


__getattr__, __dir__ = lazy_exports(globals(), {"DEFAULT_METADATA_KEYS": "postprocessor",
                                                "MemPursuitPostprocessor": "postprocessor",
                                                "MemPursuitRetriever": "retriever",
                                                "MemPursuitEmbedding": "embedding"},
                                    needs={"*": "llama_index.core"}, framework="LlamaIndex",
                                    extra="llamaindex")
