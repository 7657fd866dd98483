"""MemPursuit for Semantic Kernel: :class:`MemPursuitCollection`, a wrapper of a vector store
collection whose ``search`` reads a pool of 200 with ``include_vectors=True`` and returns the
read policy's ``top`` (``collection = MemPursuitCollection(collection)``);
:class:`MemPursuitEmbeddingGenerator`, the packaged offline MiniLM as a Semantic Kernel
embedding generator.

Importing this package does not import Semantic Kernel; the names below do.
"""

from mempursuit_core.adapter import AdapterSpec, adapter_package

SPEC = AdapterSpec(
    name="semantic-kernel", framework="semantic_kernel", extra="semantic-kernel",
    label="Semantic Kernel",
    module="mempursuit_semantic_kernel.collection",
    swap=("collection = MemPursuitCollection(collection, k=10): its search(...) reads 200 with "
          "include_vectors=True and returns the policy's top"),
    docs="docs/adapters/semantic-kernel.md",
    second_read=("a search per title whose filter is the caller's lambda ANDed with "
                 "x.title == t (InMemoryCollection, Chroma, ...), with the stored vectors"),
    summary="Semantic Kernel: a vector store collection whose search reorders a pool of 200",
    exports={"DEFAULT_METADATA_KEYS": "collection", "MemPursuitCollection": "collection",
             "MemPursuitEmbeddingGenerator": "embedder"},
)

__all__, __getattr__, __dir__, register_adapters = adapter_package(globals(), SPEC)
