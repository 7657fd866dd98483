"""MemPursuit for Semantic Kernel: :class:`MemPursuitCollection`, a wrapper of a vector store
collection whose ``search`` reads a pool of 200 with ``include_vectors=True`` and returns the
read policy's ``top`` (``collection = MemPursuitCollection(collection)``);
:class:`MemPursuitEmbeddingGenerator`, the packaged offline MiniLM as a Semantic Kernel
embedding generator.

Importing this package does not import Semantic Kernel; the names below do.
"""

from mempursuit_core.adapter import adapter_package

SPEC, __all__, __getattr__, __dir__, register_adapters = adapter_package(globals())
