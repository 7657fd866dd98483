"""MemPursuit for LangChain: :class:`MemPursuitCompressor`, a ``BaseDocumentCompressor`` for
``ContextualCompressionRetriever``; :class:`MemPursuitRetriever`, a retriever over any
``VectorStore`` that fetches ``P`` candidates and returns ``K``; and
:class:`MemPursuitEmbeddings`, the packaged offline embedder as LangChain ``Embeddings``.

Importing this package does not import LangChain; the names below do.
"""

from mempursuit_core.adapter import adapter_package

SPEC, __all__, __getattr__, __dir__, register_adapters = adapter_package(globals())
