"""MemPursuit for Semantic Kernel: :class:`MemPursuitCollection`, a wrapper of a vector store
collection whose ``search`` reads a pool of 200 with ``include_vectors=True`` and returns the
read policy's ``top`` (``collection = MemPursuitCollection(collection)``);
:class:`MemPursuitEmbeddingGenerator`, the packaged offline MiniLM as a Semantic Kernel
embedding generator.

Importing this package does not import Semantic Kernel; the names below do.
"""

from mempursuit_core.adapter import lazy_exports

__all__ = ["DEFAULT_METADATA_KEYS", "MemPursuitCollection", "MemPursuitEmbeddingGenerator"]


__getattr__, __dir__ = lazy_exports(globals(), {"DEFAULT_METADATA_KEYS": "collection",
                                                "MemPursuitCollection": "collection",
                                                "MemPursuitEmbeddingGenerator": "embedder"},
                                    needs={"*": "semantic_kernel"}, framework="Semantic Kernel",
                                    extra="semantic-kernel")
