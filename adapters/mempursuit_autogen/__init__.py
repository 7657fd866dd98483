"""MemPursuit for AutoGen: :class:`MemPursuitChromaDBVectorMemory`, AutoGen's
``ChromaDBVectorMemory`` whose ``query`` reads a pool of 200 from its Chroma collection with the
stored embeddings and returns the read policy's ``k`` (``update_context`` unchanged);
:class:`MemPursuitEmbeddingFunction`, the packaged offline MiniLM as a Chroma embedding
function.

Importing this package does not import AutoGen; the names below do.
"""

from mempursuit_core.adapter import adapter_package

SPEC, __all__, __getattr__, __dir__, register_adapters = adapter_package(globals())
