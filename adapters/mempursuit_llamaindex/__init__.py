"""MemPursuit for LlamaIndex: :class:`MemPursuitPostprocessor`, a ``BaseNodePostprocessor`` for
``VectorMemoryBlock``, query engines and chat engines; :class:`MemPursuitRetriever`, a retriever
wrapper for apps that call a retriever (retrievers do not run postprocessors); and
:class:`MemPursuitEmbedding`, the packaged offline embedder as a ``BaseEmbedding``.

Importing this package does not import LlamaIndex; the names below do.
"""

from mempursuit_core.adapter import adapter_package

SPEC, __all__, __getattr__, __dir__, register_adapters = adapter_package(globals())
